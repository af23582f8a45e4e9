// @ts-check
// The console's forms and tables (/admin; README "Console"): exact money in milli-yuan, the one
// dialog every write goes through (fields checked before anything is sent, a summary of what will
// change and what it costs), and tables that become labelled cards on a phone.
import { $, h, t } from "./common.js";
import { amountMilli, readYuan, signedYuanLabel } from "./money.js";

/**
 * A node as a console document selects it (its fields are the document's; the documents are
 * checked against the schema by the trusted-documents check, not here).
 * @typedef {Record<string, any>} GraphRow
 */
/**
 * A field of the form dialog; `check` answers the problem to show, or null.
 * @typedef {{ name: string, label: string, value?: string, inputmode?: string, type?: string, check?: (v: string) => string | null }} DialogField
 */
/**
 * A write through the form dialog: its fields, the summary of what will change, the call.
 * @typedef {{ title: string, fields?: DialogField[], summary: (values: Record<string, string>) => string,
 *   submit: (values: Record<string, string>) => Promise<any> }} DialogSpec
 */
/**
 * What the view modules use of the console (admin.js makes it): `run` a document with the
 * operator's credentials, whether the role `can` use a field (`Mutation.adminTopUpAccount`),
 * the signed-in `role` (null when signed out), `write` through the dialog then refresh, show a
 * failure or a ledger entry.
 * @typedef {{ run(query: string, variables?: Record<string, unknown>): Promise<any>, can(field: string): boolean, role(): string | null,
 *   write(spec: DialogSpec): Promise<any>, fail(error: { message?: string, code?: string } | null): void,
 *   showEntry(entry: GraphRow | null): void }} ConsoleContext
 */

// -- Money: exact milli-yuan in the page too ------------------------------------------------------

/**
 * Milli-yuan of a typed yuan amount (surrounding blanks ignored, at most three decimals, no
 * sign), or null when it is not one.
 * @param {string | null | undefined} text
 * @returns {number | null}
 */
export function milli(text) {
  const typed = String(text ?? "").trim();
  return typed.startsWith("-") ? null : readYuan(typed);
}
/**
 * {@link milli} of a value its field's check already accepted (a dialog's summary and submit).
 * @param {string} text
 * @returns {number}
 * @throws {TypeError} when the value was not checked
 */
export function checkedMilli(text) {
  const amount = milli(text);
  if (amount === null) throw new TypeError(`not a checked yuan amount: ${text}`);
  return amount;
}
/** Milli-yuan as yuan: two decimals, three when the last digit is not 0; the sign before ¥. */
export const fmt = signedYuanLabel;
/** Milli-yuan of a graph Money (0 for none). */
export const moneyMilli = amountMilli;

/**
 * What the console shows of a failure it caught (a {@link PageError} from `run`, or any error):
 * its message, code and status, each absent when it has none.
 * @param {unknown} error
 * @returns {{ message?: string, code?: string, status?: number }}
 */
export const failureOf = (error) => (typeof error === "object" && error !== null ? error : {});

/**
 * A value translated when the page has words for it (statuses, payment states, ledger kinds, roles).
 * @param {string} group
 * @param {string} value
 */
export const word = (group, value) => {
  const key = `admin.${group}.${value}`;
  const text = t(key);
  return text === key ? String(value) : text;
};

// -- The form dialog ------------------------------------------------------------------------------

/**
 * Opens the dialog: fields with validation, a summary of what will change and what it costs
 * (recomputed as the operator types), Confirm and Cancel. Confirm checks every field, then runs
 * `submit(values)`; its error stays in the dialog. Resolves with submit's result, or null.
 * @param {DialogSpec} spec
 * @returns {Promise<any>} submit's answer (a document's data), or null
 */
export function openDialog(spec) {
  const dialog = $("op-dialog", HTMLDialogElement);
  const fields = spec.fields ?? [];
  $("op-dialog-title").textContent = spec.title;
  $("op-error").hidden = true;
  const inputs = fields.map((f) => {
    const input = h("input", { id: `op-${f.name}`, name: f.name, value: f.value ?? "", spellcheck: false, autocomplete: "off" });
    if (f.inputmode) input.inputMode = f.inputmode;
    if (f.type) input.type = f.type;
    const error = h("p", { className: "field-error", id: `op-${f.name}-error`, hidden: true });
    input.setAttribute("aria-describedby", error.id);
    return { f, input, error, wrap: h("div", { className: "field" }, h("label", { htmlFor: input.id, textContent: f.label }), input, error) };
  });
  $("op-fields").replaceChildren(...inputs.map((i) => i.wrap));
  // A password is taken as typed; other values without stray spaces.
  const typedValue = (/** @type {{ f: DialogField, input: HTMLInputElement }} */ i) => (i.f.type === "password" ? i.input.value : i.input.value.trim());
  const values = () => Object.fromEntries(inputs.map((i) => [i.f.name, typedValue(i)]));
  const check = () => {
    let ok = true;
    for (const i of inputs) {
      const problem = i.f.check?.(typedValue(i)) ?? null;
      i.error.hidden = !problem;
      i.error.textContent = problem ?? "";
      i.input.setAttribute("aria-invalid", String(Boolean(problem)));
      if (problem) ok = false;
    }
    return ok;
  };
  const update = () => {
    const complete = inputs.every((i) => !i.f.check?.(typedValue(i)));
    $("op-summary").textContent = complete ? spec.summary(values()) : t("admin.fillIn");
  };
  for (const i of inputs) i.input.addEventListener("input", update);
  update();
  return new Promise((resolve) => {
    const form = $("op-form", HTMLFormElement);
    const close = (/** @type {unknown} */ result) => {
      form.removeEventListener("submit", onSubmit);
      $("op-cancel", HTMLButtonElement).removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      dialog.close();
      resolve(result);
    };
    const onCancel = (/** @type {Event} */ event) => {
      event.preventDefault();
      close(null);
    };
    const onSubmit = async (/** @type {SubmitEvent} */ event) => {
      event.preventDefault();
      if (!check()) return;
      $("op-confirm", HTMLButtonElement).disabled = true;
      try {
        close(await spec.submit(values()));
      } catch (error) {
        $("op-error").hidden = false;
        const failure = failureOf(error);
        $("op-error").textContent = `${t("admin.failed")} ${failure.message || failure.code || ""}`;
      } finally {
        $("op-confirm", HTMLButtonElement).disabled = false;
      }
    };
    form.addEventListener("submit", onSubmit);
    $("op-cancel", HTMLButtonElement).addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    (inputs[0]?.input ?? $("op-confirm", HTMLButtonElement)).focus();
  });
}

/** Field checks: a positive yuan amount, a yuan amount of zero or more, a list, a rate. */
export const positiveYuan = (/** @type {string} */ v) => (milli(v) === null || milli(v) === 0 ? t("admin.badAmount") : null);
export const yuanOrZero = (/** @type {string} */ v) => (milli(v) === null ? t("admin.badAmount") : null);
export const optionalYuan = (/** @type {string} */ v) => (v === "" ? null : yuanOrZero(v));
export const rateCheck = (/** @type {string} */ v) => (v === "" || /^\d{1,10}$/.test(v) ? null : t("admin.badRate"));
export const listOf = (/** @type {string} */ text) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

// -- Tables ----------------------------------------------------------------------------------------

/**
 * Gives each cell its column's label (phones show one labelled card per row).
 * @param {HTMLTableRowElement[]} rows
 * @param {string[]} labels
 */
function labelCells(rows, labels) {
  for (const row of rows) {
    for (const [i, td] of [...row.children].entries()) td.setAttribute("data-label", labels[i] ?? "");
  }
}

/**
 * A table whose cells carry their column's label (phones show one labelled card per row).
 * @param {HTMLTableElement} el
 * @param {string[]} headers the columns' message keys
 * @param {HTMLTableRowElement[]} rows
 * @param {boolean} [append] add the rows below the table's own (a next page) instead of replacing them
 */
export function table(el, headers, rows, append = false) {
  const labels = headers.map((key) => t(key));
  labelCells(rows, labels);
  const body = el.tBodies[0];
  if (append && body) {
    body.append(...rows);
    return;
  }
  el.replaceChildren(
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        labels.map((label) => h("th", { textContent: label })),
      ),
    ),
    h("tbody", {}, rows),
  );
}
// One wrapper per cell: on a phone the cell is a grid of its label and this.
export const cell = (/** @type {(Node | string | null | undefined | false)[]} */ ...children) => h("td", {}, h("div", {}, ...children));
export const button = (/** @type {string} */ label, /** @type {() => unknown} */ onclick) =>
  h("button", { type: "button", className: "secondary small", textContent: t(label), onclick });
export const code = (/** @type {string} */ text) => h("code", { textContent: text });
