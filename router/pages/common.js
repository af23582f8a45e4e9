// @ts-check
// Shared by /client and /test: language, GraphQL over fetch, live updates over graphql-ws (the
// graphql-ws client library, one WebSocket per page and key), the API key field, money and dates.
import { createClient } from "./graphql-ws.js";
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

/** Every language's messages by key (router/pages/i18n.js). */
const MESSAGES = /** @type {Record<"en" | "zh", Record<string, string | undefined>>} */ (messages);

/**
 * A message in the current language, with `{name}` placeholders filled.
 * @param {string} key a key of router/pages/i18n.js (the key itself when there is none)
 * @param {Record<string, string | number | null | undefined>} [vars]
 * @returns {string}
 */
export function t(key, vars = {}) {
  const text = MESSAGES[lang][key] ?? MESSAGES.en[key] ?? key;
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

/** Message keys of the request fields' labels, by field name. */
const FIELD_LABEL_KEYS = /** @type {Record<string, string | undefined>} */ (FIELD_LABELS);

/**
 * The label of a request field named in a service message (`reference_images[2]` → its label).
 * @param {string} field
 */
function fieldLabel(field) {
  const name = field.replace(/\[\d+\]$/, "");
  const key = FIELD_LABEL_KEYS[name];
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
  const key = /** @type {Record<string, string | undefined>} */ (TASK_ERRORS)[raw];
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
// Live updates: the graphql-ws client library over one shared WebSocket

/** Reconnection waits double from 1 s up to this, with jitter. */
const LIVE_RETRY_MAX_MS = 30_000;
/** A ping this long after the last message; no pong within LIVE_PONG_WAIT_MS drops the socket. */
const LIVE_KEEP_ALIVE_MS = 15_000;
const LIVE_PONG_WAIT_MS = 5_000;
/** How long a socket without subscriptions stays open, ready for the next one. */
const LIVE_IDLE_CLOSE_MS = 60_000;
/** The most the server may take to acknowledge a connection before it is retried. */
const LIVE_ACK_WAIT_MS = 10_000;

/**
 * Waits before reconnection attempt `retries` (0, 1, …): exponential backoff, 1 s, 2 s, 4 s … at
 * most 30 s, each with "equal jitter" (half fixed, half random) so that the pages of a restarted
 * server do not all come back at the same instant.
 */
/** @param {number} retries */
function backoff(retries) {
  const ceiling = Math.min(LIVE_RETRY_MAX_MS, 1000 * 2 ** retries);
  return new Promise((resolve) => setTimeout(resolve, ceiling / 2 + Math.random() * (ceiling / 2)));
}

/** @type {(value: unknown) => value is CloseEvent} */
const isCloseEvent = (value) => typeof value === "object" && value !== null && "code" in value && "reason" in value;

/** @type {Map<string, { client: import("./graphql-ws.js").Client, members: Set<{ connected(wasRetry: boolean): void, disconnected(): void }> }>} */
const liveClients = new Map();

/**
 * The page's live connection for `key`: one graphql-ws client, so every subscription of the key
 * shares one WebSocket. It connects on the first subscription, reconnects with {@link backoff}
 * (never after 4403, a refused key), pings every 15 s, and closes a minute after its last
 * subscription ends.
 * @param {string} key
 */
function liveClient(key) {
  let live = liveClients.get(key);
  if (live) return live;
  const members = new Set();
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let pongTimer;
  const client = createClient({
    url: `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/graphql`,
    // Read on every (re)connection, so a reconnection speaks the current language.
    connectionParams: () => ({ Authorization: `Bearer ${key}`, "Accept-Language": lang === "zh" ? "zh-CN" : "en" }),
    lazy: true,
    lazyCloseTimeout: LIVE_IDLE_CLOSE_MS,
    keepAlive: LIVE_KEEP_ALIVE_MS,
    connectionAckWaitTimeout: LIVE_ACK_WAIT_MS,
    retryAttempts: Infinity,
    retryWait: backoff,
    shouldRetry: (event) => isCloseEvent(event) && event.code !== 4403,
    on: {
      ping: (received) => {
        if (!received) pongTimer = setTimeout(() => client.terminate(), LIVE_PONG_WAIT_MS);
      },
      pong: (received) => {
        if (received) clearTimeout(pongTimer);
      },
      connected: (_socket, _payload, wasRetry) => {
        for (const member of [...members]) member.connected(wasRetry);
      },
      closed: () => {
        clearTimeout(pongTimer);
        for (const member of [...members]) member.disconnected();
      },
    },
  });
  live = { client, members };
  liveClients.set(key, live);
  return live;
}

/**
 * What a subscription's sink gets on failure: a {@link PageError}, or `{ closeCode }` when the socket cannot be used.
 * @param {unknown} error graphql-ws's: GraphQL errors, a CloseEvent, or anything else
 */
function liveError(error) {
  if (Array.isArray(error)) return pageErrorOf(error[0]);
  if (isCloseEvent(error) && error.code === 4403) return new PageError({ code: "unauthorized", status: 401, message: "Invalid or missing API key" });
  return { closeCode: isCloseEvent(error) ? error.code : 0 };
}

/**
 * Subscribes on the router's `/graphql` WebSocket with the key in the connection params, on the
 * page's one connection for that key.
 * @param {string} key
 * @param {string} query
 * @param {Record<string, unknown>} variables
 * @param {{ next(data: any): void, error(error: PageError | { closeCode: number }): void, complete(): void,
 *   connected?(wasRetry: boolean): void, disconnected?(): void }} sink `connected` runs each time the
 *   socket is (re)acknowledged while the subscription lasts (events sent meanwhile were missed),
 *   `disconnected` each time it closes and a reconnection is tried; `error` ends the subscription
 *   (a GraphQL error, a refused key, or a socket that will not be retried)
 * @returns a function that stops the subscription
 */
export function subscribe(key, query, variables, sink) {
  const live = liveClient(key);
  let done = false;
  const member = { connected: (/** @type {boolean} */ wasRetry) => !done && sink.connected?.(wasRetry), disconnected: () => !done && sink.disconnected?.() };
  live.members.add(member);
  const finish = () => {
    done = true;
    live.members.delete(member);
  };
  const stop = live.client.subscribe(
    { query, variables },
    {
      next: (result) => {
        if (done) return;
        if (result.errors?.length) {
          finish();
          stop();
          sink.error(pageErrorOf(result.errors[0]));
        } else sink.next(result.data);
      },
      error: (error) => {
        if (done) return;
        finish();
        sink.error(liveError(error));
      },
      complete: () => {
        if (done) return;
        finish();
        sink.complete();
      },
    },
  );
  return () => {
    if (done) return;
    finish();
    stop();
  };
}

window.addEventListener("pagehide", () => {
  for (const { client } of liveClients.values()) client.dispose();
  liveClients.clear();
});

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
