// @ts-check
// Live updates for /client and /test: subscriptions over the graphql-ws client library, one
// WebSocket per page and key, reconnected with backoff and closed when idle.
import { createClient } from "./graphql-ws.js";
import { PageError, currentLang, pageErrorOf } from "./common.js";

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
 * @param {number} retries
 */
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
    connectionParams: () => ({ Authorization: `Bearer ${key}`, "Accept-Language": currentLang() === "zh" ? "zh-CN" : "en" }),
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
