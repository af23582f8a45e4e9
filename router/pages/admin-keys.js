// @ts-check
// The console's API keys view (/admin; README "Console"): the keys across accounts, searched and
// paged, their top-up, status and settings, and a new key whose secret is shown once, each write
// through the form dialog. `ctx` is the console's: run, can, role, write, fail, showEntry.
import { $, h, t, yuan } from "./common.js";
import { button, cell, checkedMilli, code, fmt, listOf, moneyMilli, optionalYuan, positiveYuan, rateCheck, table, word } from "./admin-forms.js";

/** The fields of a ledger entry a money write answers (a module-level constant: the trusted-documents manifest resolves it). */
const ENTRY = "id accountId customerId keyId kind amount { amount } balanceAfter { amount } orderId reason createdAt";
const KEY = "id name accountId status scopes allowedIps rateLimit callbackUrl balance { amount } spent { amount } taskCount createdAt";

/** @typedef {import("./admin-forms.js").ConsoleContext} ConsoleContext */
/** @typedef {import("./admin-forms.js").GraphRow} GraphRow */

/** The cursor after the last key shown (the next page's `after`). */
/** @type {string | null} */
let keysAfter = null;

/**
 * @param {ConsoleContext} ctx
 * @param {GraphRow} k
 */
function topUpKeyDialog(ctx, k) {
  return ctx.write({
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
      const data = await ctx.run(`mutation($input: AdminTopUpAccountInput!) { adminTopUpAccount(input: $input) { ledgerEntry { ${ENTRY} } } }`, {
        input: { keyId: k.id, amount },
      });
      ctx.showEntry(data.adminTopUpAccount.ledgerEntry);
      return data;
    },
  });
}

/**
 * @param {ConsoleContext} ctx
 * @param {GraphRow} k
 */
function keyStatusDialog(ctx, k) {
  const status = k.status === "ACTIVE" ? "DISABLED" : "ACTIVE";
  return ctx.write({
    title: t(status === "DISABLED" ? "admin.disableTitle" : "admin.enableTitle", { id: k.id }),
    summary: () => t(status === "DISABLED" ? "admin.disableKeySummary" : "admin.enableKeySummary", { id: k.id, name: k.name }),
    submit: async () => {
      ctx.showEntry(null);
      return ctx.run(`mutation($input: AdminSetApiKeyStatusInput!) { adminSetApiKeyStatus(input: $input) { apiKey { id status } } }`, {
        input: { keyId: k.id, status },
      });
    },
  });
}

/**
 * @param {ConsoleContext} ctx
 * @param {GraphRow} k
 */
function keySettingsDialog(ctx, k) {
  return ctx.write({
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
      ctx.showEntry(null);
      const input = { keyId: k.id, scopes: listOf(scopes), allowedIps: listOf(ips).length ? listOf(ips) : null, rateLimit: rate === "" ? null : Number(rate) };
      return ctx.run(`mutation($input: AdminUpdateApiKeyInput!) { adminUpdateApiKey(input: $input) { apiKey { id } } }`, { input });
    },
  });
}

/**
 * @param {ConsoleContext} ctx
 * @param {GraphRow} k
 */
function keyActions(ctx, k) {
  // Support may disable a key, not enable one (README "Operator roles").
  const mayToggle = ctx.can("Mutation.adminSetApiKeyStatus") && (ctx.role() !== "SUPPORT" || k.status === "ACTIVE");
  return [
    ctx.can("Mutation.adminTopUpAccount") ? button("admin.topup", () => topUpKeyDialog(ctx, k)) : null,
    mayToggle ? button(k.status === "ACTIVE" ? "admin.disable" : "admin.enable", () => keyStatusDialog(ctx, k)) : null,
    ctx.can("Mutation.adminUpdateApiKey") ? button("admin.settings", () => keySettingsDialog(ctx, k)) : null,
  ];
}

/**
 * Loads the keys view (searched by the search box), or its next page when `append`.
 * @param {ConsoleContext} ctx
 */
export async function loadKeys(ctx, append = false) {
  $("key-create", HTMLFormElement).hidden = !ctx.can("Mutation.adminCreateApiKey");
  const data = await ctx.run(
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
      cell(...keyActions(ctx, k)),
    ),
  );
  table($("keys-table", HTMLTableElement), headers, rows, append);
}

/**
 * Creates a key from the create form, through the dialog, and shows its secret once.
 * @param {ConsoleContext} ctx
 * @param {SubmitEvent} event
 */
export async function createKey(ctx, event) {
  event.preventDefault();
  const name = $("new-name", HTMLInputElement).value.trim();
  const balance = $("new-balance", HTMLInputElement).value.trim();
  if (!name || optionalYuan(balance)) {
    ctx.fail({ message: !name ? t("admin.nameNeeded") : t("admin.badAmount") });
    return;
  }
  const created = await ctx.write({
    title: t("admin.createTitle"),
    summary: () =>
      t(balance && checkedMilli(balance) > 0 ? "admin.createSummaryMoney" : "admin.createSummary", { name, amount: balance ? fmt(checkedMilli(balance)) : "" }),
    submit: () =>
      ctx.run(`mutation($input: AdminCreateApiKeyInput!) { adminCreateApiKey(input: $input) { key id ledgerEntry { ${ENTRY} } } }`, {
        input: { name, balance: balance || null },
      }),
  });
  if (!created) return;
  const c = created.adminCreateApiKey;
  ctx.showEntry(c.ledgerEntry);
  const secret = $("new-secret");
  secret.hidden = false;
  secret.replaceChildren(h("strong", { textContent: t("admin.secretOnce") }), " ", h("code", { id: "new-key", textContent: c.key }), ` (${c.id})`);
  $("new-name", HTMLInputElement).value = "";
  $("new-balance", HTMLInputElement).value = "";
}
