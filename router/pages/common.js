// Shared by /client and /test: language, GraphQL over fetch, one graphql-ws subscription
// (the graphql-transport-ws protocol in a few lines), the API key field, money and dates.
import { messages } from "./i18n.js";

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
const langListeners = new Set();

/** The current language. */
export const currentLang = () => lang;

/** A message in the current language, with `{name}` placeholders filled. */
export function t(key, vars = {}) {
  const text = messages[lang][key] ?? messages.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(vars[name] ?? ""));
}

/** Runs `listener` after every language change. */
export function onLangChange(listener) {
  langListeners.add(listener);
}

/** Puts the current language on the static parts of the page (`data-i18n*` attributes). */
function applyLang(titleKey) {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.title = t(titleKey);
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-aria-label]")) el.setAttribute("aria-label", t(el.dataset.i18nAriaLabel));
  for (const button of document.querySelectorAll("[data-lang]")) button.setAttribute("aria-pressed", String(button.dataset.lang === lang));
}

/** Applies the first language and wires the switch buttons (`[data-lang]`). */
export function initLang(titleKey) {
  applyLang(titleKey);
  for (const button of document.querySelectorAll("[data-lang]")) {
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

/** Money from the graph (`{ amount: "1.125" }`, an exact decimal string) shown in yuan. */
export function yuan(money) {
  return money ? `¥${money.amount}` : "—";
}

/** An ISO time as a short local date and time. */
export function when(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(lang === "zh" ? "zh-CN" : "en-GB", { dateStyle: "short", timeStyle: "medium" }).format(date);
}

// ---------------------------------------------------------------------------------------------
// GraphQL over HTTP

/** Error codes with a localized message of their own (the rest show the service's message). */
const LOCALIZED_CODES = new Set(["unauthorized", "key_disabled", "insufficient_balance", "upstream_failed", "upstream_timeout", "rate_limited"]);

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

  /** The text to show: the localized message (and the service's wording when it differs). */
  get text() {
    const key = `err.${this.code}`;
    if (this.code === "network") return t("err.network");
    if (LOCALIZED_CODES.has(this.code)) {
      const local = t(key);
      return local === this.message || !this.message ? local : `${local} (${this.message})`;
    }
    if (this.message) return this.message;
    return t("err.unknown", { status: this.status });
  }

  /** A second line of help for some errors. */
  get hint() {
    if (this.code === "insufficient_balance") return t("err.insufficient_balance.hint");
    if (this.code === "upstream_failed" || this.code === "upstream_timeout") return t("err.upstream.hint");
    return "";
  }
}

/** The first GraphQL error of a result as a {@link PageError}. */
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
 * @returns the `data` of the result
 * @throws {PageError} on a GraphQL error or a network failure
 */
export async function gql(query, variables = {}, key) {
  const headers = { "content-type": "application/json", accept: "application/json", "accept-language": lang === "zh" ? "zh-CN" : "en" };
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
// One subscription over graphql-ws (protocol graphql-transport-ws)

/**
 * Subscribes on the router's `/graphql` WebSocket with the key in the connection params.
 * @param {string} key
 * @param {string} query
 * @param {Record<string, unknown>} variables
 * @param {{ next(data: any): void, error(error: PageError | { closeCode: number }): void, complete(): void }} sink
 * @returns a function that stops the subscription
 */
export function subscribe(key, query, variables, sink) {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/graphql`;
  let finished = false;
  let socket;
  try {
    socket = new WebSocket(url, "graphql-transport-ws");
  } catch {
    queueMicrotask(() => sink.error({ closeCode: 0 }));
    return () => {};
  }
  const send = (message) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify(message));
  const finish = (then) => {
    if (finished) return;
    finished = true;
    if (socket.readyState === WebSocket.OPEN) socket.close(1000, "done");
    then();
  };
  socket.addEventListener("open", () =>
    send({ type: "connection_init", payload: { Authorization: `Bearer ${key}`, "Accept-Language": lang === "zh" ? "zh-CN" : "en" } }),
  );
  socket.addEventListener("message", (event) => {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    switch (message.type) {
      case "connection_ack":
        send({ id: "1", type: "subscribe", payload: { query, variables } });
        break;
      case "ping":
        send({ type: "pong" });
        break;
      case "next":
        if (message.payload?.errors?.length) finish(() => sink.error(pageErrorOf(message.payload.errors[0])));
        else if (!finished) sink.next(message.payload.data);
        break;
      case "error":
        finish(() => sink.error(pageErrorOf(message.payload?.[0])));
        break;
      case "complete":
        finish(() => sink.complete());
        break;
    }
  });
  socket.addEventListener("close", (event) => {
    if (finished) return;
    finished = true;
    sink.error(event.code === 4403 ? new PageError({ code: "unauthorized", status: 401, message: "Invalid or missing API key" }) : { closeCode: event.code });
  });
  return () => {
    if (finished) return;
    finished = true;
    send({ id: "1", type: "complete" });
    socket.close(1000, "stopped");
  };
}

// ---------------------------------------------------------------------------------------------
// The API key field

/**
 * Wires an API key input and its "remember in this tab" checkbox: the key lives in the input
 * (page memory); only when the box is ticked is it copied to sessionStorage, and unticking
 * removes it.
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

/** Result addresses from the service, kept only when they are http(s) (never javascript: or data:). */
export function safeUrls(urls) {
  return urls.filter((url) => typeof url === "string" && /^https?:\/\//i.test(url));
}

/** Creates an element with properties, attributes (`attrs`) and children. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "attrs") for (const [attr, v] of Object.entries(value)) el.setAttribute(attr, String(v));
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el[name] = value;
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/** Shows an error in an inline message element (role="alert"), or clears it with null. */
export function showError(box, error) {
  box.replaceChildren();
  box.hidden = !error;
  if (!error) return;
  box.append(h("strong", { textContent: error.text }));
  if (error.hint) box.append(h("span", { className: "hint", textContent: ` ${error.hint}` }));
}
