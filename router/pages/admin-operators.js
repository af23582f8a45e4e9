// @ts-check
// The console's operators view (/admin; README "Console", "Operator roles"): the owner lists,
// creates, disables and enables operators, each through the form dialog (and audited by the
// server). `ctx` is the console's: run, can, write.
import { $, h, t, when } from "./common.js";
import { button, cell, table, word } from "./admin-forms.js";

const ROLES = ["OWNER", "FINANCE", "SUPPORT", "VIEWER"];
const OPERATOR = "id email role status createdAt";

/** @typedef {import("./admin-forms.js").ConsoleContext} ConsoleContext */
/** @typedef {import("./admin-forms.js").GraphRow} GraphRow */

/**
 * The create form: email, role, password (12-256 characters, or empty for a token-only operator).
 * @param {ConsoleContext} ctx
 */
function createOperator(ctx) {
  return ctx.write({
    title: t("admin.operatorCreateTitle"),
    fields: [
      { name: "email", label: t("admin.email"), check: (/** @type {string} */ v) => (/^[^\s@]+@[^\s@]+$/.test(v) ? null : t("admin.badEmail")) },
      {
        name: "role",
        label: t("admin.operatorRole"),
        value: "viewer",
        check: (/** @type {string} */ v) => (ROLES.includes(v.toUpperCase()) ? null : t("admin.badRole")),
      },
      {
        name: "password",
        label: t("admin.password"),
        type: "password",
        check: (/** @type {string} */ v) => (v === "" || (v.length >= 12 && v.length <= 256) ? null : t("admin.badPassword")),
      },
    ],
    summary: ({ email, role, password }) =>
      t(password ? "admin.operatorCreateSummary" : "admin.operatorCreateTokenOnly", { email, role: word("role", role.toUpperCase()) }),
    submit: ({ email, role, password }) =>
      ctx.run(`mutation($input: AdminCreateOperatorInput!) { adminCreateOperator(input: $input) { operator { ${OPERATOR} } } }`, {
        input: { email, role: role.toUpperCase(), password: password || null },
      }),
  });
}

/**
 * Disables or enables an operator.
 * @param {ConsoleContext} ctx
 * @param {GraphRow} o the operator
 */
function setStatus(ctx, o) {
  const status = o.status === "ACTIVE" ? "DISABLED" : "ACTIVE";
  return ctx.write({
    title: t(status === "DISABLED" ? "admin.disableTitle" : "admin.enableTitle", { id: o.email }),
    summary: () => t(status === "DISABLED" ? "admin.operatorDisableSummary" : "admin.operatorEnableSummary", { email: o.email }),
    submit: () =>
      ctx.run(`mutation($input: AdminSetOperatorStatusInput!) { adminSetOperatorStatus(input: $input) { operator { id status } } }`, {
        input: { id: o.id, status },
      }),
  });
}

/** Loads the view. */
/** @param {ConsoleContext} ctx */
export async function loadOperators(ctx) {
  $("operator-create", HTMLButtonElement).hidden = !ctx.can("Mutation.adminCreateOperator");
  const data = await ctx.run(`{ adminOperators { ${OPERATOR} } }`);
  table(
    $("operators-table", HTMLTableElement),
    ["admin.col.operator", "admin.operatorRole", "admin.col.status", "admin.col.created", "admin.col.actions"],
    data.adminOperators.map((/** @type {GraphRow} */ o) =>
      h(
        "tr",
        { dataset: { operator: o.email } },
        cell(o.email, h("div", { className: "hint", textContent: o.id })),
        cell(word("role", o.role)),
        cell(word("status", o.status)),
        cell(when(o.createdAt)),
        cell(ctx.can("Mutation.adminSetOperatorStatus") ? button(o.status === "ACTIVE" ? "admin.disable" : "admin.enable", () => setStatus(ctx, o)) : null),
      ),
    ),
  );
}

/** Wires the view's create button. */
/** @param {ConsoleContext} ctx */
export function setUpOperators(ctx) {
  $("operator-create", HTMLButtonElement).addEventListener("click", () => createOperator(ctx));
}
