// @ts-check
// The console's audit log view (/admin; README "Console", "The audit log"): filtered by operator,
// object and time, newest first, each row's before and after. `ctx` is the console's: run, fail.
import { $, h, t, when } from "./common.js";
import { cell, code, table, word } from "./admin-forms.js";

/** @typedef {import("./admin-forms.js").ConsoleContext} ConsoleContext */
/** @typedef {import("./admin-forms.js").GraphRow} GraphRow */

/** @type {string | null} */
let auditAfter = null;

/** A local datetime-local value as ISO 8601 UTC, or null. */
const isoOf = (/** @type {string} */ value) => (value ? new Date(value).toISOString() : null);

/**
 * Loads the audit log with the form's filters; `append` adds the next page below.
 * @param {ConsoleContext} ctx
 */
export async function loadAudit(ctx, append = false) {
  const actor = $("audit-actor", HTMLInputElement).value.trim() || null;
  const objectId = $("audit-object", HTMLInputElement).value.trim() || null;
  const data = await ctx.run(
    `query($actor: String, $objectId: String, $since: DateTime, $until: DateTime, $after: String) { adminAuditLog(actor: $actor, objectId: $objectId, since: $since, until: $until, after: $after, first: 50) { pageInfo { hasNextPage endCursor } nodes { id at actor role action objectType objectId requestId before after ledgerEntryId } } }`,
    {
      actor,
      objectId,
      since: isoOf($("audit-since", HTMLInputElement).value),
      until: isoOf($("audit-until", HTMLInputElement).value),
      after: append ? auditAfter : null,
    },
  );
  const conn = data.adminAuditLog;
  auditAfter = conn.pageInfo.endCursor;
  $("audit-more", HTMLButtonElement).hidden = !conn.pageInfo.hasNextPage;
  const change = (/** @type {GraphRow} */ e) =>
    h(
      "details",
      {},
      h("summary", { textContent: e.ledgerEntryId ? t("admin.auditLedger", { id: e.ledgerEntryId }) : t("admin.auditChange") }),
      h("div", { className: "audit-json", textContent: `${t("admin.auditBefore")} ${e.before ?? "—"}\n${t("admin.auditAfter")} ${e.after ?? "—"}` }),
    );
  const headers = ["admin.col.time", "admin.col.operator", "admin.col.action", "admin.col.object", "admin.col.request", "admin.col.change"];
  const rows = conn.nodes.map((/** @type {GraphRow} */ e) =>
    h(
      "tr",
      { dataset: { audit: e.id } },
      cell(when(e.at)),
      cell(e.actor, e.role ? h("div", { className: "hint", textContent: word("role", e.role.toUpperCase()) }) : null),
      cell(h("code", { className: "audit-action", textContent: e.action })),
      cell(`${e.objectType} `, e.objectId ? code(e.objectId) : ""),
      cell(e.requestId ? code(e.requestId) : "—"),
      cell(change(e)),
    ),
  );
  table($("audit-table", HTMLTableElement), headers, rows, append);
}
