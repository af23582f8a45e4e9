// The operator console (/admin; README "Console"): signs in with ADMIN_TOKEN, kept in this
// module's memory only (never localStorage, sessionStorage or cookies), and does everything
// through admin GraphQL on the router's /graphql. Every write asks for confirmation and shows
// the ledger entry it wrote, when it wrote one.
import { gql, h, initLang, onLangChange, t, when, yuan } from "./common.js";

let token = null;
let view = "overview";
let pollTimer = null;
let keysAfter = null;

const $ = (id) => document.getElementById(id);
const KEY = "id name accountId status scopes allowedIps rateLimit callbackUrl balance { amount } spent { amount } taskCount createdAt";
const ENTRY = "id accountId customerId keyId kind amount { amount } balanceAfter { amount } orderId reason createdAt";

const run = (query, variables) => gql(query, variables, token);

function fail(error) {
  const box = $("error");
  box.hidden = !error;
  box.textContent = error ? `${t("admin.failed")} ${error.message || error.code || ""}` : "";
}

function showEntry(entry) {
  $("ledger").hidden = !entry;
  $("ledger-entry").textContent = entry
    ? `${entry.kind} ${yuan(entry.amount)} → ${t("admin.balanceAfter")} ${yuan(entry.balanceAfter)}\n#${entry.id} ${entry.accountId}${entry.customerId ? ` / ${entry.customerId}` : ""} ${entry.createdAt}`
    : "";
}

/** Asks, then runs a write; shows its error or its ledger entry. */
async function write(question, work) {
  if (!window.confirm(question)) return null;
  fail(null);
  try {
    const result = await work();
    await refresh();
    return result;
  } catch (error) {
    fail(error);
    return null;
  }
}

function table(el, headers, rows) {
  el.replaceChildren(
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        headers.map((key) => h("th", { textContent: t(key) })),
      ),
    ),
    h("tbody", {}, rows),
  );
}
const cell = (...children) => h("td", {}, ...children);
const button = (label, onclick) => h("button", { type: "button", className: "secondary small", textContent: t(label), onclick });

/** A row's top-up button: asks for an amount in yuan, confirms, runs `mutation` and shows its ledger entry. */
const topUpButton = (id, mutation, inputType, input) =>
  button("admin.topup", () => {
    // The dialog's stray spaces are the operator's typing, not the amount; the server reads the rest strictly.
    const amount = window.prompt(t("admin.topupAmount"))?.trim();
    if (!amount) return;
    write(t("admin.confirmTopup", { amount, id }), async () => {
      const data = await run(`mutation($input: ${inputType}!) { ${mutation}(input: $input) { ledgerEntry { ${ENTRY} } } }`, { input: { ...input, amount } });
      showEntry(data[mutation].ledgerEntry);
    });
  });

// -- API keys ------------------------------------------------------------------------------------

async function loadKeys(append = false) {
  const data = await run(
    `query($search: String, $after: String) { adminApiKeys(search: $search, after: $after, first: 20) { totalCount pageInfo { hasNextPage endCursor } nodes { ${KEY} } } }`,
    {
      search: $("key-query").value.trim() || null,
      after: append ? keysAfter : null,
    },
  );
  const conn = data.adminApiKeys;
  keysAfter = conn.pageInfo.endCursor;
  $("keys-more").hidden = !conn.pageInfo.hasNextPage;
  const rows = conn.nodes.map((k) =>
    h(
      "tr",
      { dataset: { key: k.id } },
      cell(h("code", { textContent: k.id }), h("br"), k.name),
      cell(h("code", { textContent: k.accountId })),
      cell(h("span", { className: "key-status", textContent: t(`admin.status.${k.status}`) })),
      cell(h("span", { className: "key-balance", textContent: yuan(k.balance) })),
      cell(k.scopes.join(", ")),
      cell(k.allowedIps ? k.allowedIps.join(", ") : t("admin.any")),
      cell(k.rateLimit == null ? t("admin.unlimited") : String(k.rateLimit)),
      cell(
        topUpButton(k.id, "adminTopUpAccount", "AdminTopUpAccountInput", { keyId: k.id }),
        button(k.status === "ACTIVE" ? "admin.disable" : "admin.enable", () => {
          const status = k.status === "ACTIVE" ? "DISABLED" : "ACTIVE";
          write(t(status === "DISABLED" ? "admin.confirmDisable" : "admin.confirmEnable", { id: k.id }), async () => {
            showEntry(null);
            return run(`mutation($input: AdminSetApiKeyStatusInput!) { adminSetApiKeyStatus(input: $input) { apiKey { id status } } }`, {
              input: { keyId: k.id, status },
            });
          });
        }),
        button("admin.settings", () => {
          const scopes = window.prompt(t("admin.scopesPrompt"), k.scopes.join(","));
          if (scopes === null) return;
          const ips = window.prompt(t("admin.ipsPrompt"), (k.allowedIps ?? []).join(","));
          if (ips === null) return;
          const rate = window.prompt(t("admin.ratePrompt"), k.rateLimit == null ? "" : String(k.rateLimit));
          if (rate === null) return;
          const list = (text) =>
            text
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean);
          // Empty clears the limit; digits set it; anything else goes as typed, for the server to refuse
          // (Number() would read "1e2" as 100 and "abc" as NaN, sent as null: the limit silently cleared).
          const rateText = rate.trim();
          const rateLimit = rateText === "" ? null : /^\d{1,10}$/.test(rateText) ? Number(rateText) : rateText;
          const input = { keyId: k.id, scopes: list(scopes), allowedIps: list(ips).length ? list(ips) : null, rateLimit };
          write(t("admin.confirmSettings", { id: k.id }), async () => {
            showEntry(null);
            return run(`mutation($input: AdminUpdateApiKeyInput!) { adminUpdateApiKey(input: $input) { apiKey { id } } }`, { input });
          });
        }),
      ),
    ),
  );
  const body = $("keys-table").tBodies[0];
  if (append && body) body.append(...rows);
  else
    table(
      $("keys-table"),
      [
        "admin.col.key",
        "admin.col.account",
        "admin.col.status",
        "admin.col.balance",
        "admin.col.scopes",
        "admin.col.ips",
        "admin.col.rate",
        "admin.col.actions",
      ],
      rows,
    );
}

// -- Wallets, orders, deliveries ------------------------------------------------------------------

async function loadWallets() {
  const data = await run(
    `{ adminCustomerWallets(first: 50) { nodes { accountId customerId contact available { amount } frozen { amount } creditLine { amount } } } }`,
  );
  table(
    $("wallets-table"),
    ["admin.col.account", "admin.col.customer", "admin.col.available", "admin.col.frozen", "admin.col.credit", "admin.col.actions"],
    data.adminCustomerWallets.nodes.map((w) =>
      h(
        "tr",
        {},
        cell(h("code", { textContent: w.accountId })),
        cell(w.customerId),
        cell(yuan(w.available)),
        cell(yuan(w.frozen)),
        cell(yuan(w.creditLine)),
        cell(
          topUpButton(w.customerId, "adminTopUpCustomer", "AdminTopUpCustomerInput", { accountId: w.accountId, customerId: w.customerId }),
          button("admin.credit", () => {
            const limit = window.prompt(t("admin.creditPrompt"), w.creditLine.amount)?.trim();
            if (limit)
              write(t("admin.confirmCredit", { amount: limit, id: w.customerId }), async () => {
                showEntry(null);
                return run(
                  `mutation($input: AdminSetCustomerCreditLineInput!) { adminSetCustomerCreditLine(input: $input) { customerBalance { creditLine { amount } } } }`,
                  { input: { accountId: w.accountId, customerId: w.customerId, limit } },
                );
              });
          }),
        ),
      ),
    ),
  );
}

async function loadOrders() {
  const data = await run(
    `{ adminOrders(first: 50) { nodes { id accountId customerId status paymentStatus failureReason amount { amount } createdAt ledgerEntries { kind amount { amount } } } } }`,
  );
  table(
    $("orders-table"),
    ["admin.col.order", "admin.col.account", "admin.col.status", "admin.col.amount", "admin.col.payments", "admin.col.created"],
    data.adminOrders.nodes.map((o) =>
      h(
        "tr",
        {},
        cell(h("code", { textContent: o.id }), h("br"), o.customerId),
        cell(h("code", { textContent: o.accountId })),
        cell(`${o.status} / ${o.paymentStatus}`, o.failureReason ? h("div", { className: "hint", textContent: o.failureReason }) : null),
        cell(yuan(o.amount)),
        cell(o.ledgerEntries.map((e) => `${e.kind} ${yuan(e.amount)}`).join("; ")),
        cell(when(o.createdAt)),
      ),
    ),
  );
}

async function loadDeliveries() {
  const data = await run(
    `{ adminWebhookDeliveries(first: 50) { nodes { id accountId event status attemptCount url createdAt attempts { at status error } } } }`,
  );
  table(
    $("deliveries-table"),
    ["admin.col.delivery", "admin.col.event", "admin.col.status", "admin.col.attempts", "admin.col.actions"],
    data.adminWebhookDeliveries.nodes.map((d) =>
      h(
        "tr",
        {},
        cell(`#${d.id}`, h("br"), h("code", { textContent: d.accountId })),
        cell(d.event, h("div", { className: "hint", textContent: d.url })),
        cell(d.status),
        cell(d.attempts.map((a) => `${when(a.at)} ${a.status ?? a.error ?? ""}`).join("\n") || "—"),
        cell(
          button("admin.resend", () =>
            write(t("admin.confirmResend", { id: d.id }), async () => {
              showEntry(null);
              return run(`mutation($input: AdminResendDeliveryInput!) { adminResendDelivery(input: $input) { delivery { id status } } }`, {
                input: { deliveryId: d.id },
              });
            }),
          ),
        ),
      ),
    ),
  );
}

// -- Channels (the admin channel contract of the generation subgraph) ------------------------------

/** What the channel's provider reported its tasks used (its cost to us), in its own units. */
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
const CHANNEL_CREDENTIALS = {
  SWITCHYARD: ["apiKey"],
  OPENAI_COMPATIBLE: ["apiKey"],
  KLING: ["accessKey", "secretKey"],
  ARK: ["apiKey"],
  DASHSCOPE: ["apiKey"],
  MINIMAX: ["apiKey"],
  GEMINI_VEO: ["apiKey"],
};
const CREDENTIAL_INPUTS = { apiKey: "ch-api-key", accessKey: "ch-access-key", secretKey: "ch-secret-key" };

/** Shows the credential fields of the chosen type only (and requires them). */
function showCredentialFields() {
  const wanted = CHANNEL_CREDENTIALS[$("ch-type").value];
  for (const [field, id] of Object.entries(CREDENTIAL_INPUTS)) {
    const on = wanted.includes(field);
    $(id).closest("label").hidden = !on;
    $(id).required = on;
  }
}
$("ch-type").addEventListener("change", showCredentialFields);
showCredentialFields();

$("channel-create").addEventListener("submit", async (event) => {
  event.preventDefault();
  const type = $("ch-type").value;
  const input = {
    type,
    name: $("ch-name").value.trim(),
    baseUrl: $("ch-base-url").value.trim(),
    models: $("ch-models")
      .value.split(",")
      .map((m) => Number(m.trim()))
      .filter((m) => Number.isInteger(m) && m > 0),
  };
  for (const field of CHANNEL_CREDENTIALS[type]) input[field] = $(CREDENTIAL_INPUTS[field]).value;
  const added = await write(t("admin.confirmAddChannel", { name: input.name }), () =>
    run(`mutation($input: AdminAddChannelInput!) { adminAddChannel(input: $input) { channel { id } } }`, { input }),
  );
  // The keys leave the page once added (or refused): never kept in the form.
  for (const id of Object.values(CREDENTIAL_INPUTS)) $(id).value = "";
  if (added) for (const id of ["ch-name", "ch-base-url", "ch-models"]) $(id).value = "";
});

async function loadChannels() {
  let data;
  try {
    data = await run(
      `{ adminChannels { id name type baseUrl status disabledReason consecutiveFailures implicit stats { successRate latencyMsAvg openTasks providerUsageTasks providerUsage { seconds images points tokens } } } }`,
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
    ["admin.col.channel", "admin.col.status", "admin.col.health", "admin.col.actions"],
    data.adminChannels.map((c) =>
      h(
        "tr",
        {},
        cell(
          h("code", { textContent: c.id }),
          h("br"),
          c.name,
          h("div", { className: "hint", textContent: `${c.type.toLowerCase().replace("_", "-")} · ${c.baseUrl}` }),
        ),
        cell(c.status, c.disabledReason ? h("div", { className: "hint", textContent: c.disabledReason }) : null),
        cell(
          `${c.stats.successRate == null ? "—" : `${Math.round(c.stats.successRate * 100)}%`} · ${c.stats.latencyMsAvg == null ? "—" : `${Math.round(c.stats.latencyMsAvg)} ms`} · ${t("admin.openTasks")} ${c.stats.openTasks}`,
          h("div", { className: "hint channel-cost", textContent: providerCost(c.stats) }),
        ),
        cell(
          c.implicit
            ? null
            : button(c.status === "ENABLED" ? "admin.disable" : "admin.enable", () =>
                write(t(c.status === "ENABLED" ? "admin.confirmDisable" : "admin.confirmEnable", { id: c.id }), () =>
                  run(`mutation($input: AdminSetChannelStatusInput!) { adminSetChannelStatus(input: $input) { channel { id status } } }`, {
                    input: { id: c.id, enabled: c.status !== "ENABLED" },
                  }),
                ),
              ),
          button("admin.test", () =>
            write(t("admin.confirmTest", { id: c.id }), async () => {
              const r = (
                await run(`mutation($input: AdminTestChannelInput!) { adminTestChannel(input: $input) { ok latencyMs error } }`, { input: { id: c.id } })
              ).adminTestChannel;
              window.alert(r.ok ? `OK ${r.latencyMs ?? ""} ms` : `${t("admin.failed")} ${r.error ?? ""}`);
            }),
          ),
        ),
      ),
    ),
  );
}

// -- Overview ------------------------------------------------------------------------------------

let chart = null;
let uPlotLoading = null;

async function loadOverview() {
  const o = (
    await run(
      `{ adminOverview(minutes: 60) { at tasksPerMinute { minute submitted succeeded failed } window { successRate } revenueToday { amount } refundsToday { amount } } }`,
    )
  ).adminOverview;
  const last = o.tasksPerMinute.at(-1);
  $("ov-tpm").textContent = String(last?.submitted ?? 0);
  $("ov-success").textContent = o.window.successRate == null ? "—" : `${Math.round(o.window.successRate * 1000) / 10}%`;
  $("ov-revenue").textContent = yuan(o.revenueToday);
  $("ov-refunds").textContent = yuan(o.refundsToday);
  $("ov-at").textContent = `${t("admin.updated")} ${when(o.at)}`;
  uPlotLoading ??= import("./uPlot.esm.js").then((m) => m.default);
  const uPlot = await uPlotLoading;
  const x = o.tasksPerMinute.map((p) => Date.parse(`${p.minute}:00Z`) / 1000);
  const data = [x, o.tasksPerMinute.map((p) => p.submitted), o.tasksPerMinute.map((p) => p.succeeded), o.tasksPerMinute.map((p) => p.failed)];
  const el = $("ov-chart");
  if (chart) return chart.setData(data);
  chart = new uPlot(
    {
      width: Math.max(240, el.clientWidth || 600),
      height: 200,
      series: [
        {},
        { label: t("admin.submitted"), stroke: "#1d4ed8" },
        { label: t("admin.succeeded"), stroke: "#0f766e" },
        { label: t("admin.failedTasks"), stroke: "#c2410c" },
      ],
    },
    data,
    el,
  );
}

// -- Views and sign-in ---------------------------------------------------------------------------

const LOADERS = {
  overview: loadOverview,
  keys: () => loadKeys(),
  wallets: loadWallets,
  orders: loadOrders,
  deliveries: loadDeliveries,
  channels: loadChannels,
};

async function refresh() {
  try {
    await LOADERS[view]();
  } catch (error) {
    fail(error);
  }
}

function show(name) {
  view = name;
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${name}`;
  for (const b of document.querySelectorAll("[data-view]")) b.setAttribute("aria-pressed", String(b.dataset.view === name));
  clearInterval(pollTimer);
  // The overview is a short poll: one bounded query every 5 s while it is shown.
  if (name === "overview") pollTimer = setInterval(() => refresh(), 5000);
  return refresh();
}

function signOut() {
  token = null;
  clearInterval(pollTimer);
  $("console").hidden = true;
  $("signin").hidden = false;
  $("token").value = "";
}

initLang("title.admin");
onLangChange(() => token && refresh());
$("signin").addEventListener("submit", async (event) => {
  event.preventDefault();
  const candidate = $("token").value.trim();
  $("token").value = "";
  const box = $("signin-error");
  try {
    token = candidate;
    await run(`{ adminOverview(minutes: 1) { at } }`);
    box.hidden = true;
    $("signin").hidden = true;
    $("console").hidden = false;
    await show("overview");
  } catch (error) {
    token = null;
    box.hidden = false;
    box.textContent = error.status === 403 ? t("admin.disabled") : t("admin.badToken");
  }
});
$("signout").addEventListener("click", signOut);
for (const b of document.querySelectorAll("[data-view]")) b.addEventListener("click", () => show(b.dataset.view));
$("key-search").addEventListener("submit", (event) => {
  event.preventDefault();
  refresh();
});
$("keys-more").addEventListener("click", () => loadKeys(true).catch(fail));
$("key-create").addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = $("new-name").value.trim();
  const balance = $("new-balance").value.trim() || null;
  if (!name) return;
  const created = await write(t("admin.confirmCreate", { name }), () =>
    run(`mutation($input: AdminCreateApiKeyInput!) { adminCreateApiKey(input: $input) { key id ledgerEntry { ${ENTRY} } } }`, { input: { name, balance } }),
  );
  if (!created) return;
  const c = created.adminCreateApiKey;
  showEntry(c.ledgerEntry);
  const secret = $("new-secret");
  secret.hidden = false;
  secret.replaceChildren(h("strong", { textContent: t("admin.secretOnce") }), " ", h("code", { id: "new-key", textContent: c.key }), ` (${c.id})`);
  $("new-name").value = "";
  $("new-balance").value = "";
});
$("signin").dataset.ready = "true";
