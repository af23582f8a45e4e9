// @ts-check
// Shared by the pages: language, GraphQL over fetch and its errors, the API key field, money and
// dates, small DOM helpers. Live updates over graphql-ws are in live.js.
import { FIELD_LABELS, TASK_ERRORS, messages } from "./i18n.js";
import { yuanLabel } from "./money.js";

const LANG_STORE = "switchyard.lang";
const KEY_STORE = "switchyard.key";

// ---------------------------------------------------------------------------------------------
// Language

/** @returns {"en" | "zh"} */
function firstLang() {
  let stored = null;
  try {
    stored = localStorage.getItem(LANG_STORE);
  } catch {
    /* storage disabled */
  }
  if (stored === "en" || stored === "zh") return stored;
  // The router negotiated Accept-Language into <html lang>.
  return document.documentElement.lang.toLowerCase().startsWith("zh") ? "zh" : "en";
}

let lang = firstLang();
/** @type {Set<(lang: "en" | "zh") => void>} */
const langListeners = new Set();

/** The current language. */
export const currentLang = () => lang;

/**
 * A message in the current language, with `{name}` placeholders filled.
 * @param {string} key a key of router/pages/i18n.js (the key itself when there is none)
 * @param {Record<string, string | number | null | undefined>} [vars]
 * @returns {string}
 */
export function t(key, vars = {}) {
  const text = messages[lang][key] ?? messages.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(vars[name] ?? ""));
}

/**
 * Runs `listener` after every language change.
 * @param {(lang: "en" | "zh") => void} listener
 */
export function onLangChange(listener) {
  langListeners.add(listener);
}

/**
 * Puts the current language on the static parts of the page (`data-i18n*` attributes).
 * @param {string} titleKey the message key of the page's title
 */
function applyLang(titleKey) {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.title = t(titleKey);
  for (const el of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-i18n]"))) el.textContent = t(el.dataset.i18n ?? "");
  for (const el of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-i18n-aria-label]")))
    el.setAttribute("aria-label", t(el.dataset.i18nAriaLabel ?? ""));
  for (const button of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-lang]")))
    button.setAttribute("aria-pressed", String(button.dataset.lang === lang));
}

/**
 * Applies the first language and wires the switch buttons (`[data-lang]`).
 * @param {string} titleKey the message key of the page's title
 */
export function initLang(titleKey) {
  applyLang(titleKey);
  for (const button of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-lang]"))) {
    button.addEventListener("click", () => {
      lang = button.dataset.lang === "zh" ? "zh" : "en";
      try {
        localStorage.setItem(LANG_STORE, lang);
      } catch {
        /* storage disabled */
      }
      applyLang(titleKey);
      for (const listener of langListeners) listener(lang);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Money and dates

/** Money from the graph (`{ amount: "1.125" }`, an exact decimal string) shown in yuan: "¥1.125", "—" for none. */
export const yuan = yuanLabel;

/**
 * An ISO time as a short local date and time (the text itself when it is not a time).
 * @param {string} iso
 * @returns {string}
 */
export function when(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(lang === "zh" ? "zh-CN" : "en-GB", { dateStyle: "short", timeStyle: "medium" }).format(date);
}

// ---------------------------------------------------------------------------------------------
// GraphQL over HTTP

/** Error codes whose English message is the page's own (the rest show the service's message in English). */
const LOCALIZED_CODES = new Set(["unauthorized", "key_disabled", "insufficient_balance", "upstream_failed", "upstream_timeout", "rate_limited"]);

/**
 * The label of a request field named in a service message (`reference_images[2]` → its label).
 * @param {string} field
 */
function fieldLabel(field) {
  const name = field.replace(/\[\d+\]$/, "");
  const key = FIELD_LABELS[name];
  return key ? t(key) : name;
}

/**
 * The service's validation messages (src/errors.ts `validationMessages`), in the page's language;
 * null for any other message.
 * @param {string} message
 * @returns {string | null}
 */
function localFieldMessage(message) {
  if (message === messages.en["err.prompt.required"]) return t("err.prompt.required");
  let match = /^model_id must be one of: ([\d, ]+)$/.exec(message);
  if (match) return t("err.field.modelId", { ids: match[1] });
  match = /^([a-z_]+(?:\[\d+\])?) must be a public HTTPS URL$/.exec(message);
  if (match) return t("err.field.publicUrl", { field: fieldLabel(match[1]) });
  match = /^([a-z_]+(?:\[\d+\])?) has an unsupported value$/.exec(message);
  if (match) return t("err.field.unsupported", { field: fieldLabel(match[1]) });
  return null;
}

/** A failure the page shows inline: localized text, the service's own message, the field concerned. */
export class PageError extends Error {
  /**
   * @param {{ code: string, status: number, message: string, field?: string }} info
   */
  constructor(info) {
    super(info.message);
    this.code = info.code;
    this.status = info.status;
    this.field = info.field;
  }

  /**
   * The text to show. English: the page's message for the common codes (with the service's
   * wording when it differs), else the service's message. Chinese: always Chinese — the
   * service's validation messages translated, else the code's message, else a generic one (the
   * service's English wording then goes to {@link detail}).
   */
  get text() {
    const key = `err.${this.code}`;
    if (this.code === "network") return t("err.network");
    if (lang === "en") {
      if (LOCALIZED_CODES.has(this.code)) {
        const local = t(key);
        return local === this.message || !this.message ? local : `${local} (${this.message})`;
      }
      if (this.message) return this.message;
      return t("err.unknown", { status: this.status });
    }
    return localFieldMessage(this.message) ?? (messages[lang][key] ? t(key) : t("err.unknown", { status: this.status }));
  }

  /** The service's own wording, when {@link text} (in Chinese) does not carry all of it; else "". */
  get detail() {
    if (lang === "en" || !this.message || this.code === "network" || localFieldMessage(this.message)) return "";
    return this.message === messages.en[`err.${this.code}`] ? "" : this.message;
  }

  /** A second line of help for some errors. */
  get hint() {
    if (this.code === "insufficient_balance") return t("err.insufficient_balance.hint");
    if (this.code === "upstream_failed" || this.code === "upstream_timeout") return t("err.upstream.hint");
    return "";
  }
}

/**
 * A task's failure reason (`Task.error`, written by the service in English) in the page's
 * language: `text` to show, and `original` (the service's wording) when `text` is the generic
 * message of a reason the pages do not know.
 * @param {string | null | undefined} error
 * @returns {{ text: string, original: string }}
 */
export function taskFailure(error) {
  const raw = typeof error === "string" ? error.trim() : "";
  if (!raw) return { text: t("task.errorOther"), original: "" };
  const key = TASK_ERRORS[raw];
  if (key) return { text: t(key), original: "" };
  return lang === "en" ? { text: raw, original: "" } : { text: t("task.errorOther"), original: raw };
}

/**
 * The first GraphQL error of a result as a {@link PageError}.
 * @param {any} error a GraphQL error as it came over the wire (anything, checked field by field)
 * @param {number} [status] the HTTP status, when the error has none of its own
 */
export function pageErrorOf(error, status) {
  const extensions = error?.extensions ?? {};
  return new PageError({
    code: typeof extensions.code === "string" ? extensions.code : "unknown",
    status: extensions.http?.status ?? status ?? 500,
    message: typeof error?.message === "string" ? error.message : "",
    field: typeof extensions.field === "string" ? extensions.field : undefined,
  });
}

/**
 * Runs one GraphQL operation on the router's `/graphql`.
 * @param {string} query
 * @param {Record<string, unknown>} [variables]
 * @param {string} [key] the API key, sent as `Authorization: Bearer <key>`
 * @param {Record<string, string>} [extraHeaders] more headers (the console's `X-CSRF-Token`)
 * @returns the `data` of the result
 * @throws {PageError} on a GraphQL error or a network failure
 */
export async function gql(query, variables = {}, key, extraHeaders = {}) {
  /** @type {Record<string, string>} */
  const headers = { "content-type": "application/json", accept: "application/json", "accept-language": lang === "zh" ? "zh-CN" : "en", ...extraHeaders };
  // A key is printable ASCII; anything else cannot even be sent as a header.
  if (key && !/^[\x21-\x7e]+$/.test(key)) throw new PageError({ code: "unauthorized", status: 401, message: "Invalid or missing API key" });
  if (key) headers.authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }), cache: "no-store" });
  } catch {
    throw new PageError({ code: "network", status: 0, message: "" });
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new PageError({ code: "unknown", status: response.status, message: "" });
  }
  if (body?.errors?.length) throw pageErrorOf(body.errors[0], response.status);
  if (!response.ok || !body?.data) throw new PageError({ code: "unknown", status: response.status, message: "" });
  return body.data;
}

// ---------------------------------------------------------------------------------------------
// The API key field

/**
 * Wires an API key input and its "remember in this tab" checkbox: the key lives in the input
 * (page memory); only when the box is ticked is it copied to sessionStorage, and unticking
 * removes it.
 * @param {HTMLInputElement} input
 * @param {HTMLInputElement} remember
 * @returns the key restored from sessionStorage, if any
 */
export function setupKeyField(input, remember) {
  let restored = "";
  try {
    restored = sessionStorage.getItem(KEY_STORE) ?? "";
  } catch {
    /* storage disabled */
  }
  if (restored) {
    input.value = restored;
    remember.checked = true;
  }
  const sync = () => {
    try {
      if (remember.checked && input.value.trim()) sessionStorage.setItem(KEY_STORE, input.value.trim());
      else sessionStorage.removeItem(KEY_STORE);
    } catch {
      /* storage disabled */
    }
  };
  remember.addEventListener("change", sync);
  input.addEventListener("change", sync);
  return restored;
}

// ---------------------------------------------------------------------------------------------
// Small DOM helpers

/**
 * Result addresses from the service, kept only when they are http(s) (never javascript: or data:).
 * @param {unknown[]} urls
 * @returns {string[]}
 */
export function safeUrls(urls) {
  return /** @type {string[]} */ (urls.filter((url) => typeof url === "string" && /^https?:\/\//i.test(url)));
}

/**
 * The page's element with this id (null when the page has none). `type`, the element's class,
 * types the answer and is checked: a page whose markup changed fails here, not at a later `.value`.
 * @template {abstract new () => HTMLElement} [C=typeof HTMLElement]
 * @param {string} id
 * @param {C} [type]
 * @returns {InstanceType<C>}
 * @throws TypeError when the element is not a `type`
 */
export function $(id, type) {
  const el = document.getElementById(id);
  if (el && type && !(el instanceof type)) throw new TypeError(`#${id} is not an ${type.name}`);
  return /** @type {InstanceType<C>} */ (el);
}

/**
 * Creates an element with properties, attributes (`attrs`) and children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, any>} [props]
 * @param {...(Node | string | null | undefined | false | (Node | string | null | undefined | false)[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  /** The element's properties by name (any of them may be set). */
  const fields = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (el));
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "attrs") for (const [attr, v] of Object.entries(value)) el.setAttribute(attr, String(v));
    else if (name === "dataset") Object.assign(el.dataset, value);
    else fields[name] = value;
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/**
 * A second line with the service's own (English) wording of a message shown translated.
 * @param {string | null | undefined} text
 */
export function originalLine(text) {
  return text ? h("span", { className: "original" }, t("err.original", { text: "" }), h("span", { lang: "en", textContent: text })) : null;
}

/**
 * Shows an error in an inline message element (role="alert"), or clears it with null.
 * @param {HTMLElement} box
 * @param {{ text: string, hint?: string | null, detail?: string | null } | null} error
 */
export function showError(box, error) {
  box.replaceChildren();
  box.hidden = !error;
  if (!error) return;
  box.append(h("strong", { textContent: error.text }));
  if (error.hint) box.append(h("span", { className: "hint", textContent: ` ${error.hint}` }));
  const original = originalLine(error.detail);
  if (original) box.append(original);
}
