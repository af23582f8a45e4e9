// @ts-check
// /client: the customer's balance page. The key is sent with each GraphQL request and kept in the
// page (sessionStorage only when "remember in this tab" is ticked). While an account is shown, a
// graphql-ws subscription to the key's own task changes (`tasks`) refreshes it live.
import { $, PageError, gql, h, initLang, onLangChange, originalLine, safeUrls, setupKeyField, showError, t, taskFailure, when, yuan } from "./common.js";
import { subscribe } from "./live.js";
import { amountMilli } from "./money.js";
import { DEFAULT_PAGE_SIZE } from "./page-size.js";
import { createUsageChart } from "./usage-chart.js";

const VIEWER = `query PageViewer($first: Int!, $days: Int!) { viewer {
  balance { amount } spent { amount } billedSeconds billedImages
  usageByDay(days: $days) { date spent { amount } billedSeconds billedImages }
  tasks(first: $first) { totalCount nodes {
    id status result images error createdAt count seconds resolution
    price { amount } refunded { amount } charged { amount } providerUsage { seconds images points tokens } model { id name kind } } } } }`;
const CHANGES = `subscription PageTaskChanges { tasks { id status } }`;
/** Tasks listed: the service's default page. */
const RECENT = DEFAULT_PAGE_SIZE;
const CHART_DAYS = 30;

const form = $("lookup", HTMLFormElement);
const keyInput = $("key", HTMLInputElement);
const keyError = $("key-error");
const account = $("account");
const usageChart = createUsageChart($("usage"));

/**
 * A node of a page document, as VIEWER selects it (its fields are the document's; the documents
 * are checked against the schema by the trusted-documents check, not here).
 * @typedef {Record<string, any>} GraphRow
 */

/** The key whose account is shown, and its last answer. */
let shownKey = "";
/** @type {GraphRow | null} */
let viewer = null;
/** @type {Date | null} */
let updatedAt = null;
/** State of the live updates: "connecting", "live", "reconnecting" or "stopped". */
let live = "stopped";
let stopLive = () => {};
let loadSeq = 0;

initLang("title.client");
const restored = setupKeyField(keyInput, $("remember", HTMLInputElement));

/** @type {PageError | null} */
let lastKeyError = null;

/** @param {PageError | null} error */
function setKeyError(error) {
  lastKeyError = error;
  showError(keyError, error);
  if (error) keyInput.setAttribute("aria-invalid", "true");
  else keyInput.removeAttribute("aria-invalid");
}

/**
 * Loads the account of `key`; shows an inline error instead when the key is refused.
 * @param {string} key
 */
async function load(key, { announceBalance = false } = {}) {
  const seq = ++loadSeq;
  account.setAttribute("aria-busy", "true");
  try {
    const data = await gql(VIEWER, { first: RECENT, days: CHART_DAYS }, key);
    if (seq !== loadSeq || key !== shownKey) return;
    const before = viewer?.balance?.amount;
    const next = data.viewer;
    viewer = next;
    updatedAt = new Date();
    setKeyError(null);
    render();
    if (announceBalance || (before !== undefined && before !== next.balance?.amount)) {
      $("announce").textContent = `${t("balance.colon")}${yuan(next.balance)}`;
    }
  } catch (error) {
    if (seq !== loadSeq) return;
    const pageError = error instanceof PageError ? error : new PageError({ code: "unknown", status: 0, message: "" });
    if (pageError.code === "unauthorized" || pageError.code === "key_disabled") {
      forget();
      keyInput.focus();
    }
    setKeyError(pageError);
  } finally {
    if (seq === loadSeq) account.removeAttribute("aria-busy");
  }
}

/** Stops showing an account (a bad key, or the key was changed). */
function forget() {
  shownKey = "";
  viewer = null;
  account.hidden = true;
  stopLive();
  stopLive = () => {};
  live = "stopped";
}

/** @type {ReturnType<typeof setTimeout> | undefined} */
let refreshTimer;
/** Refreshes soon, once for a burst of task events. */
function refreshSoon() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => shownKey && load(shownKey), 150);
}

/**
 * Follows the key's task changes on the page's one live connection. A change, and every
 * (re)connection (changes made while no socket was up were missed), reloads the account.
 * @param {string} key
 */
function goLive(key) {
  stopLive();
  const setLive = (/** @type {string} */ value) => {
    if (key !== shownKey || live === value) return;
    live = value;
    renderLiveState();
  };
  live = "connecting";
  stopLive = subscribe(
    key,
    CHANGES,
    {},
    {
      next: refreshSoon,
      connected: () => {
        setLive("live");
        refreshSoon();
      },
      disconnected: () => setLive("reconnecting"),
      complete: () => setLive("stopped"),
      error: () => setLive("stopped"),
    },
  );
}

function renderLiveState() {
  $("live-state").textContent = t(`client.${live}`);
  $("live-state").className = live === "live" ? "live" : "";
  $("live-state").dataset.state = live;
}

/** @param {string} status */
function statusBadge(status) {
  return h("span", { className: `badge status-${status.toLowerCase()}`, textContent: t(`status.${status}`) });
}

/** @param {GraphRow} task */
function resultLinks(task) {
  if (task.status === "FAILED") {
    const failure = taskFailure(task.error);
    return h("span", { className: "muted failure", dataset: { role: "failure" } }, failure.text, originalLine(failure.original));
  }
  if (task.status !== "SUCCEEDED") return "—";
  const urls = safeUrls(task.images?.length ? task.images : [task.result]);
  if (!urls.length) return "—";
  return h(
    "span",
    { className: "links" },
    urls.map((url, i) =>
      h("a", { href: url, target: "_blank", rel: "noopener noreferrer", textContent: urls.length > 1 ? t("task.downloadN", { n: i + 1 }) : t("task.open") }),
    ),
    h("span", { className: "ai-mark small", textContent: t("ai.mark") }),
  );
}

/**
 * What the provider reported the task used, in its units (shown beside our price), or null.
 * @param {GraphRow} task
 */
function providerUsage(task) {
  const u = task.providerUsage;
  if (!u) return null;
  const parts = [
    u.seconds != null ? t("unit.seconds", { n: u.seconds }) : null,
    u.images != null ? `${u.images} img` : null,
    u.points != null ? `${u.points} pts` : null,
    u.tokens != null ? `${u.tokens} tok` : null,
  ].filter(Boolean);
  return parts.length ? h("div", { className: "muted provider-usage", textContent: `${t("task.providerUsage")} ${parts.join(" · ")}` }) : null;
}

/** @param {GraphRow} task */
function chargedCell(task) {
  const refunded = amountMilli(task.refunded) !== 0;
  const usage = providerUsage(task);
  return [
    yuan(task.charged),
    refunded ? h("span", { className: "muted", textContent: ` (${t("task.refunded")} ${yuan(task.refunded)})` }) : null,
    usage,
  ].filter(Boolean);
}

/** @param {GraphRow} task */
function describe(task) {
  const parts = [];
  if (task.resolution) parts.push(task.resolution);
  if (task.seconds) parts.push(t("unit.seconds", { n: task.seconds }));
  parts.push(`× ${task.count}`);
  return parts.join(" · ");
}

function render() {
  if (!viewer) return;
  account.hidden = false;
  $("balance").textContent = yuan(viewer.balance);
  $("spent").textContent = yuan(viewer.spent);
  $("billed-seconds").textContent = String(viewer.billedSeconds ?? 0);
  $("billed-images").textContent = String(viewer.billedImages ?? 0);
  $("updated").textContent = updatedAt ? t("client.updated", { time: when(updatedAt.toISOString()) }) : "";
  renderLiveState();
  void usageChart.update(viewer.usageByDay);
  const nodes = viewer.tasks?.nodes ?? [];
  $("no-tasks").hidden = nodes.length > 0;
  $("tasks-table", HTMLTableElement).hidden = nodes.length === 0;
  const cell = (
    /** @type {string} */ label,
    /** @type {(Node | string | null | undefined | false | (Node | string | null | undefined | false)[])[]} */ ...children
  ) => h("td", { dataset: { label: t(label) } }, h("span", {}, ...children));
  $("tasks").replaceChildren(
    ...nodes.map((/** @type {GraphRow} */ task) =>
      h(
        "tr",
        { dataset: { taskId: task.id, status: task.status } },
        cell("col.created", h("time", { dateTime: task.createdAt, textContent: when(task.createdAt) })),
        cell("col.task", h("code", { textContent: task.id })),
        cell("col.model", `${task.model.name} `, h("span", { className: "muted", textContent: describe(task) })),
        cell("col.status", statusBadge(task.status)),
        cell("col.amount", chargedCell(task)),
        cell("col.result", resultLinks(task)),
      ),
    ),
  );
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  if (!key) {
    forget();
    setKeyError(new PageError({ code: "unauthorized", status: 401, message: "Invalid or missing API key" }));
    keyInput.focus();
    return;
  }
  if (key !== shownKey) {
    forget();
    shownKey = key;
    goLive(key);
  }
  load(key, { announceBalance: true });
});

$("refresh", HTMLButtonElement).addEventListener("click", () => shownKey && load(shownKey));
keyInput.addEventListener("input", () => {
  if (shownKey && keyInput.value.trim() !== shownKey) forget();
});
onLangChange(() => {
  $("announce").textContent = ""; // an announcement in the other language is stale
  render();
  showError(keyError, lastKeyError);
});
window.addEventListener("pagehide", () => stopLive());

if (restored) form.requestSubmit();
form.dataset.ready = "true";
