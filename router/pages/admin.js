// @ts-check
// The operator console (/admin; README "Console"; docs/adr/0022-operators-and-audit.md). Operators
// sign in with email and password (an HttpOnly session cookie the page never sees, plus a CSRF
// token it keeps in memory and sends with every write), or with an operator token or the
// break-glass ADMIN_TOKEN (kept in this module's memory only). Everything goes through admin
// GraphQL on the router's /graphql. The page shows only the views and buttons the operator's
// role may use (`adminMe { allowedFields }`); the server refuses the rest anyway. Every write is a
// form in a dialog that states what will change and what it costs before it runs.
import { $, gql, h, initLang, onLangChange, t, when, yuan } from "./common.js";
import {
  button,
  cell,
  code,
  fmt,
  labelCells,
  listOf,
  checkedMilli,
  failureOf,
  moneyMilli,
  openDialog,
  optionalYuan,
  positiveYuan,
  rateCheck,
  table,
  word,
} from "./admin-forms.js";
import { loadChannels, setUpChannelForm } from "./admin-channels.js";
import { loadAudit } from "./admin-audit.js";
import { loadOperators, setUpOperators } from "./admin-operators.js";
import { loadDeliveries, loadOrders, loadWallets } from "./admin-wallets.js";

/** The fields of a ledger entry a money write answers (a module-level constant: the trusted-documents manifest resolves it). */
const ENTRY = "id accountId customerId keyId kind amount { amount } balanceAfter { amount } orderId reason createdAt";

/** @typedef {import("./admin-forms.js").GraphRow} GraphRow */
/** @typedef {import("./admin-forms.js").DialogSpec} DialogSpec */
/** @typedef {import("./uPlot.esm.js").default} UPlot */

/**
 * Who is signed in, or null.
 * @type {{ token?: string, csrf?: string, role: string, actor: string, via: string, allowed: Set<string> } | null}
 */
let auth = null;
let view = "overview";
/** @type {ReturnType<typeof setInterval> | undefined} */
let pollTimer;
/** @type {string | null} */
let keysAfter = null;

const KEY = "id name accountId status scopes allowedIps rateLimit callbackUrl balance { amount } spent { amount } taskCount createdAt";
const IDENTITY = "role actor operatorId via allowedFields";

const run = (/** @type {string} */ query, /** @type {Record<string, unknown>} */ variables = {}) =>
  gql(query, variables, auth?.token, auth?.csrf ? { "x-csrf-token": auth.csrf } : {});
/** Whether the operator's role may use an admin field (`Mutation.adminTopUpAccount`). */
const can = (/** @type {string} */ field) => Boolean(auth?.allowed.has(field));

// -- Messages --------------------------------------------------------------------------------------

/** @param {{ message?: string, code?: string } | null} error */
function fail(error) {
  const box = $("error");
  box.hidden = !error;
  box.textContent = error ? `${t("admin.failed")} ${error.message || error.code || ""}` : "";
}

/** @param {GraphRow | null} entry */
function showEntry(entry) {
  $("ledger").hidden = !entry;
  $("ledger-entry").textContent = entry
    ? `${word("kind", entry.kind)} ${yuan(entry.amount)} → ${t("admin.balanceAfter")} ${yuan(entry.balanceAfter)}\n#${entry.id} ${entry.accountId}${entry.customerId ? ` / ${entry.customerId}` : ""} ${when(entry.createdAt)}`
    : "";
}

/** Runs a write through the dialog (admin-forms.js), then refreshes the view. */
/** @param {DialogSpec} spec */
async function write(spec) {
  fail(null);
  const result = await openDialog(spec);
  if (result !== null) await refresh();
  return result;
}

/** What the view modules (admin-wallets.js, admin-channels.js, admin-audit.js, admin-operators.js) use of the console. */
const ctx = { run, can, write, fail, showEntry };

// -- API keys ------------------------------------------------------------------------------------

/** @param {GraphRow} k */
function topUpKeyDialog(k) {
  return write({
    title: t("admin.topupTitle", { id: k.id }),
    fields: [{ name: "amount", label: t("admin.topupAmount"), inputmode: "decimal", check: positiveYuan }],
    summary: ({ amount }) =>
      t("admin.topupSummary", {
        id: k.id,
        amount: fmt(checkedMilli(amount)),
        before: fmt(moneyMilli(k.balance)),
        after: fmt(moneyMilli(k.balance) + checkedMilli(amount)),
      }),
    submit: async ({ amount }) => {
      const data = await run(`mutation($input: AdminTopUpAccountInput!) { adminTopUpAccount(input: $input) { ledgerEntry { ${ENTRY} } } }`, {
        input: { keyId: k.id, amount },
      });
      showEntry(data.adminTopUpAccount.ledgerEntry);
      return data;
    },
  });
}

/** @param {GraphRow} k */
function keyStatusDialog(k) {
  const status = k.status === "ACTIVE" ? "DISABLED" : "ACTIVE";
  return write({
    title: t(status === "DISABLED" ? "admin.disableTitle" : "admin.enableTitle", { id: k.id }),
    summary: () => t(status === "DISABLED" ? "admin.disableKeySummary" : "admin.enableKeySummary", { id: k.id, name: k.name }),
    submit: async () => {
      showEntry(null);
      return run(`mutation($input: AdminSetApiKeyStatusInput!) { adminSetApiKeyStatus(input: $input) { apiKey { id status } } }`, {
        input: { keyId: k.id, status },
      });
    },
  });
}

/** @param {GraphRow} k */
function keySettingsDialog(k) {
  return write({
    title: t("admin.settingsTitle", { id: k.id }),
    fields: [
      { name: "scopes", label: t("admin.scopesPrompt"), value: k.scopes.join(", ") },
      { name: "ips", label: t("admin.ipsPrompt"), value: (k.allowedIps ?? []).join(", ") },
      { name: "rate", label: t("admin.ratePrompt"), value: k.rateLimit == null ? "" : String(k.rateLimit), inputmode: "numeric", check: rateCheck },
    ],
    summary: ({ scopes, ips, rate }) =>
      t("admin.settingsSummary", {
        id: k.id,
        scopes: listOf(scopes).join(", ") || t("admin.everyScope"),
        ips: listOf(ips).join(", ") || t("admin.any"),
        rate: rate === "" ? t("admin.unlimited") : rate,
      }),
    submit: async ({ scopes, ips, rate }) => {
      showEntry(null);
      const input = { keyId: k.id, scopes: listOf(scopes), allowedIps: listOf(ips).length ? listOf(ips) : null, rateLimit: rate === "" ? null : Number(rate) };
      return run(`mutation($input: AdminUpdateApiKeyInput!) { adminUpdateApiKey(input: $input) { apiKey { id } } }`, { input });
    },
  });
}

/** @param {GraphRow} k */
function keyActions(k) {
  // Support may disable a key, not enable one (README "Operator roles").
  const mayToggle = can("Mutation.adminSetApiKeyStatus") && (auth?.role !== "SUPPORT" || k.status === "ACTIVE");
  return [
    can("Mutation.adminTopUpAccount") ? button("admin.topup", () => topUpKeyDialog(k)) : null,
    mayToggle ? button(k.status === "ACTIVE" ? "admin.disable" : "admin.enable", () => keyStatusDialog(k)) : null,
    can("Mutation.adminUpdateApiKey") ? button("admin.settings", () => keySettingsDialog(k)) : null,
  ];
}

async function loadKeys(append = false) {
  $("key-create", HTMLFormElement).hidden = !can("Mutation.adminCreateApiKey");
  const data = await run(
    `query($search: String, $after: String) { adminApiKeys(search: $search, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { ${KEY} } } }`,
    { search: $("key-query", HTMLInputElement).value.trim() || null, after: append ? keysAfter : null },
  );
  const conn = data.adminApiKeys;
  keysAfter = conn.pageInfo.endCursor;
  $("keys-more", HTMLButtonElement).hidden = !conn.pageInfo.hasNextPage;
  const headers = [
    "admin.col.key",
    "admin.col.account",
    "admin.col.status",
    "admin.col.balance",
    "admin.col.scopes",
    "admin.col.ips",
    "admin.col.rate",
    "admin.col.actions",
  ];
  const rows = conn.nodes.map((/** @type {GraphRow} */ k) =>
    h(
      "tr",
      { dataset: { key: k.id } },
      cell(code(k.id), h("br"), k.name),
      cell(code(k.accountId)),
      cell(h("span", { className: "key-status", textContent: word("status", k.status) })),
      cell(h("span", { className: "key-balance", textContent: yuan(k.balance) })),
      cell(k.scopes.join(", ") || t("admin.everyScope")),
      cell(k.allowedIps ? k.allowedIps.join(", ") : t("admin.any")),
      cell(k.rateLimit == null ? t("admin.unlimited") : String(k.rateLimit)),
      cell(...keyActions(k)),
    ),
  );
  const body = $("keys-table", HTMLTableElement).tBodies[0];
  if (append && body) {
    const labels = headers.map((key) => t(key));
    labelCells(rows, labels);
    body.append(...rows);
  } else table($("keys-table", HTMLTableElement), headers, rows);
}

/** @param {SubmitEvent} event */
async function createKey(event) {
  event.preventDefault();
  const name = $("new-name", HTMLInputElement).value.trim();
  const balance = $("new-balance", HTMLInputElement).value.trim();
  if (!name || optionalYuan(balance)) {
    fail({ message: !name ? t("admin.nameNeeded") : t("admin.badAmount") });
    return;
  }
  const created = await write({
    title: t("admin.createTitle"),
    summary: () =>
      t(balance && checkedMilli(balance) > 0 ? "admin.createSummaryMoney" : "admin.createSummary", { name, amount: balance ? fmt(checkedMilli(balance)) : "" }),
    submit: () =>
      run(`mutation($input: AdminCreateApiKeyInput!) { adminCreateApiKey(input: $input) { key id ledgerEntry { ${ENTRY} } } }`, {
        input: { name, balance: balance || null },
      }),
  });
  if (!created) return;
  const c = created.adminCreateApiKey;
  showEntry(c.ledgerEntry);
  const secret = $("new-secret");
  secret.hidden = false;
  secret.replaceChildren(h("strong", { textContent: t("admin.secretOnce") }), " ", h("code", { id: "new-key", textContent: c.key }), ` (${c.id})`);
  $("new-name", HTMLInputElement).value = "";
  $("new-balance", HTMLInputElement).value = "";
}

// -- Overview ------------------------------------------------------------------------------------

/** @type {UPlot | null} */
let chart = null;
/** @type {Promise<typeof import("./uPlot.esm.js").default> | null} */
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
  const x = o.tasksPerMinute.map((/** @type {GraphRow} */ p) => Date.parse(`${p.minute}:00Z`) / 1000);
  const data = [
    x,
    o.tasksPerMinute.map((/** @type {GraphRow} */ p) => p.submitted),
    o.tasksPerMinute.map((/** @type {GraphRow} */ p) => p.succeeded),
    o.tasksPerMinute.map((/** @type {GraphRow} */ p) => p.failed),
  ];
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

// -- Views, sign-in and sign-out ---------------------------------------------------------------------

/**
 * Each view, the admin field it reads (a role without it does not see the view), and its loader.
 * @type {Record<string, [string, () => Promise<unknown>]>}
 */
const VIEWS = {
  overview: ["Query.adminOverview", loadOverview],
  keys: ["Query.adminApiKeys", () => loadKeys()],
  wallets: ["Query.adminCustomerWallets", () => loadWallets(ctx)],
  orders: ["Query.adminOrders", () => loadOrders(ctx)],
  deliveries: ["Query.adminWebhookDeliveries", () => loadDeliveries(ctx)],
  channels: ["Query.adminChannels", () => loadChannels(ctx)],
  audit: ["Query.adminAuditLog", () => loadAudit(ctx)],
  operators: ["Query.adminOperators", () => loadOperators(ctx)],
};

async function refresh() {
  try {
    await VIEWS[view][1]();
  } catch (error) {
    const failure = failureOf(error);
    if (failure.status === 401) return signedOut();
    fail(failure);
  }
}

/** @param {string} name */
function show(name) {
  view = name;
  for (const section of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll(".view"))) section.hidden = section.id !== `view-${name}`;
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-view]")))
    b.setAttribute("aria-pressed", String(b.dataset.view === name));
  clearInterval(pollTimer);
  // The overview is a short poll: one bounded query every 5 s while it is shown.
  if (name === "overview") pollTimer = setInterval(() => refresh(), 5000);
  return refresh();
}

/**
 * Shows the console for the identity `me` (`adminMe`, or the session route's answer).
 * @param {GraphRow} me
 * @param {{ token?: string, csrf?: string }} credentials
 */
async function enter(me, credentials) {
  auth = { ...credentials, role: me.role, actor: me.actor, via: me.via, allowed: new Set(me.allowedFields) };
  $("signin-error").hidden = true;
  $("signin", HTMLFormElement).hidden = true;
  $("console").hidden = false;
  $("whoami").textContent = t("admin.whoami", { actor: me.actor, role: word("role", me.role) });
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-view]"))) b.hidden = !can(VIEWS[b.dataset.view ?? ""][0]);
  const first = Object.keys(VIEWS).find((name) => can(VIEWS[name][0]));
  if (first) await show(first);
}

function signedOut() {
  auth = null;
  clearInterval(pollTimer);
  $("console").hidden = true;
  $("signin", HTMLFormElement).hidden = false;
  $("token", HTMLInputElement).value = "";
  $("password", HTMLInputElement).value = "";
}

/** @param {SubmitEvent} event */
async function signIn(event) {
  event.preventDefault();
  const box = $("signin-error");
  const token = $("token", HTMLInputElement).value.trim();
  const email = $("email", HTMLInputElement).value.trim();
  const password = $("password", HTMLInputElement).value;
  $("token", HTMLInputElement).value = "";
  $("password", HTMLInputElement).value = "";
  try {
    if (token) {
      const me = (await gql(`{ adminMe { ${IDENTITY} } }`, {}, token)).adminMe;
      await enter(me, { token });
      return;
    }
    if (!email || !password) throw { status: 400 };
    const response = await fetch("/admin/session", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ email, password }),
      credentials: "same-origin",
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw { status: response.status, message: body.message };
    await enter(body, { csrf: body.csrfToken });
  } catch (error) {
    const { status } = failureOf(error);
    auth = null;
    box.hidden = false;
    box.textContent = status === 403 ? t("admin.disabled") : status === 429 ? t("admin.throttled") : status === 400 ? t("admin.needBoth") : t("admin.badToken");
  }
}

async function signOut() {
  // A session ends on the server; a token is simply forgotten.
  if (auth?.csrf) await fetch("/admin/session", { method: "DELETE", headers: { "x-csrf-token": auth.csrf }, credentials: "same-origin" }).catch(() => null);
  signedOut();
}

/** A reload keeps a live session (the cookie); the CSRF token comes back from the server. */
async function resume() {
  const response = await fetch("/admin/session", { headers: { accept: "application/json" }, credentials: "same-origin" }).catch(() => null);
  if (!response?.ok) return;
  const body = await response.json();
  await enter(body, { csrf: body.csrfToken });
}

initLang("title.admin");
onLangChange(() => {
  if (!auth) return;
  $("whoami").textContent = t("admin.whoami", { actor: auth.actor, role: word("role", auth.role) });
  refresh();
});
$("signin", HTMLFormElement).addEventListener("submit", signIn);
$("signout", HTMLButtonElement).addEventListener("click", signOut);
for (const b of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-view]")))
  b.addEventListener("click", () => show(b.dataset.view ?? ""));
$("key-search", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  refresh();
});
$("keys-more", HTMLButtonElement).addEventListener("click", () => loadKeys(true).catch(fail));
$("key-create", HTMLFormElement).addEventListener("submit", createKey);
$("audit-filter", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  refresh();
});
setUpOperators(ctx);
setUpChannelForm(ctx);
$("audit-more", HTMLButtonElement).addEventListener("click", () => loadAudit(ctx, true).catch(fail));
resume().finally(() => {
  $("signin", HTMLFormElement).dataset.ready = "true";
});
