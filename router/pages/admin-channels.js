// The console's channels view (/admin; README "Channels"): display and role gating only; the
// channel contract is the generation subgraph's. `ctx` is the console's: run, can, write, fail.
import { h, t, when } from "./common.js";
import { button, cell, code, table, word } from "./admin-forms.js";

const $ = (id) => document.getElementById(id);

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

export async function loadChannels(ctx) {
  let data;
  try {
    data = await ctx.run(
      `{ adminChannels { id name baseUrl models priority weight status disabledReason consecutiveFailures nextProbeAt implicit stats { successRate latencyMsAvg openTasks } } }`,
    );
  } catch (error) {
    table(
      $("channels-table"),
      ["admin.col.channel"],
      [h("tr", {}, cell(t("admin.channelsUnavailable"), h("div", { className: "hint", textContent: error.message })))],
    );
    return;
  }
  table(
    $("channels-table"),
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
    data.adminChannels.map((c) =>
      h(
        "tr",
        { dataset: { channel: c.id } },
        cell(code(c.id), h("br"), c.name, h("div", { className: "hint", textContent: c.baseUrl })),
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
        ),
        cell(...channelActions(ctx, c)),
      ),
    ),
  );
}
