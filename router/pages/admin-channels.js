// @ts-check
// The console's channels view (/admin; README "Channels"): display and role gating only; the
// channel contract is the generation subgraph's. `ctx` is the console's: run, can, write, fail.
import { $, h, t, when } from "./common.js";
import { button, cell, code, failureOf, table, word } from "./admin-forms.js";

/** @typedef {import("./admin-forms.js").ConsoleContext} ConsoleContext */
/** @typedef {import("./admin-forms.js").GraphRow} GraphRow */

/**
 * @param {ConsoleContext} ctx
 * @param {GraphRow} c a channel
 */
function channelActions(ctx, c) {
  return [
    !c.implicit && ctx.can("Mutation.adminSetChannelStatus")
      ? button(c.status === "ENABLED" ? "admin.disable" : "admin.enable", () =>
          ctx.write({
            title: t(c.status === "ENABLED" ? "admin.disableTitle" : "admin.enableTitle", { id: c.id }),
            summary: () => t(c.status === "ENABLED" ? "admin.disableChannelSummary" : "admin.enableChannelSummary", { id: c.id, models: c.models.join(", ") }),
            submit: () =>
              ctx.run(`mutation($input: AdminSetChannelStatusInput!) { adminSetChannelStatus(input: $input) { channel { id status } } }`, {
                input: { id: c.id, enabled: c.status !== "ENABLED" },
              }),
          }),
        )
      : null,
    ctx.can("Mutation.adminTestChannel")
      ? button("admin.test", () =>
          ctx.write({
            title: t("admin.testTitle", { id: c.id }),
            summary: () => t("admin.testSummary", { id: c.id }),
            submit: async () => {
              const r = (
                await ctx.run(`mutation($input: AdminTestChannelInput!) { adminTestChannel(input: $input) { ok latencyMs error } }`, { input: { id: c.id } })
              ).adminTestChannel;
              ctx.fail(r.ok ? null : { message: r.error ?? "" });
              return r;
            },
          }),
        )
      : null,
  ];
}

/**
 * What the channel's provider reported its tasks used (its cost to us), in its own units.
 * @param {GraphRow} stats
 */
function providerCost(stats) {
  const u = stats.providerUsage;
  const parts = [
    u.seconds ? `${u.seconds} s` : null,
    u.images ? `${u.images} img` : null,
    u.points ? `${u.points} pts` : null,
    u.tokens ? `${u.tokens} tok` : null,
  ].filter(Boolean);
  return `${t("admin.providerCost")} ${parts.length ? parts.join(" · ") : "—"} (${stats.providerUsageTasks})`;
}

/** The credential fields of each channel type (src/generation/upstream/channel-types.ts). */
/** @type {Record<string, string[]>} */
const CHANNEL_CREDENTIALS = {
  SWITCHYARD: ["apiKey"],
  OPENAI_COMPATIBLE: ["apiKey"],
  KLING: ["accessKey", "secretKey"],
  ARK: ["apiKey"],
  DASHSCOPE: ["apiKey"],
  MINIMAX: ["apiKey"],
  GEMINI_VEO: ["apiKey"],
};
/** @type {Record<string, string>} */
const CREDENTIAL_INPUTS = { apiKey: "ch-api-key", accessKey: "ch-access-key", secretKey: "ch-secret-key" };

/** Shows the credential fields of the chosen type only (and requires them). */
function showCredentialFields() {
  const wanted = CHANNEL_CREDENTIALS[$("ch-type", HTMLSelectElement).value];
  for (const [field, id] of Object.entries(CREDENTIAL_INPUTS)) {
    const on = wanted.includes(field);
    /** @type {HTMLLabelElement} */ ($(id).closest("label")).hidden = !on;
    $(id, HTMLInputElement).required = on;
  }
}

/** Wires the add-channel form: the type decides the credential fields; the write goes through the confirmation dialog. */
/** @param {ConsoleContext} ctx */
export function setUpChannelForm(ctx) {
  $("ch-type", HTMLSelectElement).addEventListener("change", showCredentialFields);
  showCredentialFields();
  $("channel-create", HTMLFormElement).addEventListener("submit", async (event) => {
    event.preventDefault();
    const type = $("ch-type", HTMLSelectElement).value;
    /** @type {{ type: string, name: string, baseUrl: string, models: number[], [credential: string]: unknown }} */
    const input = {
      type,
      name: $("ch-name", HTMLInputElement).value.trim(),
      baseUrl: $("ch-base-url", HTMLInputElement).value.trim(),
      models: $("ch-models", HTMLInputElement)
        .value.split(",")
        .map((m) => Number(m.trim()))
        .filter((m) => Number.isInteger(m) && m > 0),
    };
    for (const field of CHANNEL_CREDENTIALS[type]) input[field] = $(CREDENTIAL_INPUTS[field], HTMLInputElement).value;
    const added = await ctx.write({
      title: t("admin.addChannel"),
      summary: () => t("admin.confirmAddChannel", { name: input.name }),
      submit: () => ctx.run(`mutation($input: AdminAddChannelInput!) { adminAddChannel(input: $input) { channel { id } } }`, { input }),
    });
    // The keys leave the page once added (or refused): never kept in the form.
    for (const id of Object.values(CREDENTIAL_INPUTS)) $(id, HTMLInputElement).value = "";
    if (added) for (const id of ["ch-name", "ch-base-url", "ch-models"]) $(id, HTMLInputElement).value = "";
  });
}

/** @param {ConsoleContext} ctx */
export async function loadChannels(ctx) {
  $("channel-create", HTMLFormElement).hidden = !ctx.can("Mutation.adminAddChannel");
  let data;
  try {
    data = await ctx.run(
      `{ adminChannels { id name type baseUrl models priority weight status disabledReason consecutiveFailures nextProbeAt implicit stats { successRate latencyMsAvg openTasks providerUsageTasks providerUsage { seconds images points tokens } } } }`,
    );
  } catch (error) {
    table(
      $("channels-table", HTMLTableElement),
      ["admin.col.channel"],
      [h("tr", {}, cell(t("admin.channelsUnavailable"), h("div", { className: "hint", textContent: failureOf(error).message })))],
    );
    return;
  }
  table(
    $("channels-table", HTMLTableElement),
    [
      "admin.col.channel",
      "admin.col.status",
      "admin.col.models",
      "admin.col.routing",
      "admin.col.failures",
      "admin.col.nextProbe",
      "admin.col.health",
      "admin.col.actions",
    ],
    data.adminChannels.map((/** @type {GraphRow} */ c) =>
      h(
        "tr",
        { dataset: { channel: c.id } },
        cell(code(c.id), h("br"), c.name, h("div", { className: "hint", textContent: `${c.type.toLowerCase().replace("_", "-")} · ${c.baseUrl}` })),
        cell(
          h("span", { className: "channel-status", textContent: word("channel", c.status) }),
          c.disabledReason ? h("div", { className: "hint", textContent: c.disabledReason }) : null,
        ),
        cell(c.models.length === 0 || c.models.includes("*") ? t("admin.allModels") : c.models.map(String).join(", ")),
        cell(t("admin.routing", { priority: c.priority, weight: c.weight })),
        cell(h("span", { className: "channel-failures", textContent: String(c.consecutiveFailures) })),
        cell(c.nextProbeAt ? when(c.nextProbeAt) : "—"),
        cell(
          `${c.stats.successRate == null ? "—" : `${Math.round(c.stats.successRate * 100)}%`} · ${c.stats.latencyMsAvg == null ? "—" : `${Math.round(c.stats.latencyMsAvg)} ms`} · ${t("admin.openTasks")} ${c.stats.openTasks}`,
          h("div", { className: "hint channel-cost", textContent: providerCost(c.stats) }),
        ),
        cell(...channelActions(ctx, c)),
      ),
    ),
  );
}
