// @ts-check
// The operator console (/admin; README "Console"; docs/adr/0022-operators-and-audit.md). Operators
// sign in with email and password (an HttpOnly session cookie the page never sees, plus a CSRF
// token it keeps in memory and sends with every write), or with an operator token or the
// break-glass ADMIN_TOKEN (kept in this module's memory only). Everything goes through admin
// GraphQL on the router's /graphql. The page shows only the views and buttons the operator's
// role may use (`adminMe { allowedFields }`); the server refuses the rest anyway. Every write is a
// form in a dialog that states what will change and what it costs before it runs.
import { $, gql, initLang, onLangChange, t, when, yuan } from "./common.js";
import { code, failureOf, openDialog, word } from "./admin-forms.js";
import { loadChannels, setUpChannelForm } from "./admin-channels.js";
import { createKey, loadKeys } from "./admin-keys.js";
import { loadAudit } from "./admin-audit.js";
import { loadOperators, setUpOperators } from "./admin-operators.js";
import { loadDeliveries, loadOrders, loadWallets } from "./admin-wallets.js";

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

/**
 * Runs a write through the dialog (admin-forms.js), then refreshes the view.
 * @param {DialogSpec} spec
 */
async function write(spec) {
  fail(null);
  const result = await openDialog(spec);
  if (result !== null) await refresh();
  return result;
}

/** What the view modules (admin-keys.js, admin-wallets.js, admin-channels.js, admin-audit.js, admin-operators.js) use of the console. */
const ctx = { run, can, role: () => auth?.role ?? null, write, fail, showEntry };

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
  keys: ["Query.adminApiKeys", () => loadKeys(ctx)],
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
$("keys-more", HTMLButtonElement).addEventListener("click", () => loadKeys(ctx, true).catch(fail));
$("key-create", HTMLFormElement).addEventListener("submit", (event) => createKey(ctx, event));
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
