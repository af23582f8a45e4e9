/**
 * graphql-sse's "single connection mode" on `/graphql` (PROTOCOL.md of graphql-sse; README
 * "Transports"; docs/adr/0021-transports.md): `PUT` reserves a stream and answers its token,
 * `GET` (or `POST`) with `Accept: text/event-stream` and the token opens it, each `POST` with the
 * token and `extensions.operationId` starts an operation whose events arrive on that stream as
 * `{id, payload}`, `DELETE ?operationId=` stops one.
 *
 * Every operation runs through the gateway exactly as a distinct-connection SSE request does
 * (the same key check, limits, persisted documents, request report): the stream only carries its
 * events. A token belongs to the key that reserved it: every request naming it must carry the
 * same key, else it is answered as if the token did not exist (404), so no other key can use or
 * read the stream. The streams live in this router's memory: behind several routers, the
 * requests of one client must reach the same router (or use distinct connections mode).
 */
import { randomUUID } from "node:crypto";
import type http from "node:http";
import type { Gateway } from "./gateway.ts";
import { postParsed, toShimError } from "./client.ts";
import { checkKey } from "./key-check.ts";
import { KEY_DISABLED_RESULT, type Revocations } from "../revocation.ts";
import { graphqlErrorResult, sendGraphqlError } from "../http/graphql-error.ts";

/** graphql-sse's header (and query parameter `token`) naming a reserved stream. */
export const STREAM_TOKEN_HEADER = "x-graphql-event-stream-token";

/** How long a reserved stream waits to be opened before it is dropped, in milliseconds. */
export const RESERVATION_TTL_MS = 30_000;

/** Streams one key may hold reserved or open at once on one router. */
export const MAX_STREAMS_PER_KEY = 20;

/** Operations one stream may run at once (as graphql-ws connections: router/websocket.ts). */
export const MAX_OPERATIONS_PER_STREAM = 100;

/** How often an open stream sends a comment, so proxies keep it (graphql-sse's and Yoga's 12 s). */
const PING_MS = 12_000;

/** One operation running on a stream. */
interface Operation {
  /** Stops it: its gateway stream is cancelled. */
  stop(): void;
}

/** A reserved stream. */
interface Reservation {
  token: string;
  keyId: string;
  /** The open response, once the client connected. */
  res: http.ServerResponse | null;
  /** Events written before the stream was opened (the protocol lets operations start first). */
  pending: string[];
  ops: Map<string, Operation>;
  timer: NodeJS.Timeout;
  untrack: () => void;
}

/** The single-connection streams of one router. */
export interface SingleConnectionStreams {
  /** Whether a `/graphql` request belongs to single connection mode: a `PUT` accepting text (a reservation), or one naming a token. */
  claims(req: http.IncomingMessage, url: URL): boolean;
  /** Answers such a request (its body, if any, already read and limited into `req.body`). */
  handle(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void>;
  /** Graceful shutdown: every operation gets `complete`, then every stream ends. */
  close(): void;
}

/** One SSE event in graphql-sse's framing. */
function event(name: "next" | "complete", data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The token a request names (header first, then `?token=`), if any. */
function tokenOf(req: http.IncomingMessage, url: URL): string | null {
  const header = req.headers[STREAM_TOKEN_HEADER];
  if (typeof header === "string" && header) return header;
  return url.searchParams.get("token") || null;
}

/** Request headers for the gateway, as router/graph/http.ts passes them (no hop-by-hop ones). */
function gatewayHeaders(req: http.IncomingMessage): Record<string, string> {
  const skip = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "expect", "upgrade", "te", "trailer", STREAM_TOKEN_HEADER]);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !skip.has(name)) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

/**
 * Reads the events of a distinct-connection SSE answer of the gateway (`event: next|complete`,
 * `data: <json>`; comments skipped).
 */
async function* gatewayEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: unknown }> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, "\n");
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!name) continue;
      const text = data.join("\n");
      yield { event: name, data: text ? JSON.parse(text) : null };
    }
  }
}

/**
 * Creates the single-connection streams of a router.
 * @param gateway the router's gateway: every operation runs through it
 * @param revocations a disabled key's streams end with `key_disabled` (router/revocation.ts)
 * @param options `reservationTtlMs`: how long a reserved stream waits to be opened (default {@link RESERVATION_TTL_MS})
 */
export function createSingleConnectionStreams(
  gateway: Gateway,
  revocations: Revocations,
  options: { reservationTtlMs?: number } = {},
): SingleConnectionStreams {
  const reservationTtlMs = options.reservationTtlMs ?? RESERVATION_TTL_MS;
  const streams = new Map<string, Reservation>();
  const perKey = new Map<string, number>();

  const drop = (reservation: Reservation) => {
    if (streams.get(reservation.token) !== reservation) return;
    streams.delete(reservation.token);
    clearTimeout(reservation.timer);
    reservation.untrack();
    const left = (perKey.get(reservation.keyId) ?? 1) - 1;
    if (left > 0) perKey.set(reservation.keyId, left);
    else perKey.delete(reservation.keyId);
    for (const op of reservation.ops.values()) op.stop();
    reservation.ops.clear();
  };

  const write = (reservation: Reservation, text: string) => {
    if (reservation.res) {
      if (!reservation.res.writableEnded) reservation.res.write(text);
    } else reservation.pending.push(text);
  };

  /** Resolves when the open stream's buffer has room again (at once when it has, or is closed or not open). */
  const drained = (reservation: Reservation): Promise<void> => {
    const res = reservation.res;
    if (!res?.writableNeedDrain || res.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        res.off("drain", done);
        res.off("close", done);
        resolve();
      };
      res.on("drain", done);
      res.on("close", done);
    });
  };

  /** Ends a stream: `next` with `last` (if any) and `complete` for each operation, then the response. */
  const end = (reservation: Reservation, last?: unknown) => {
    const ids = [...reservation.ops.keys()];
    const res = reservation.res;
    drop(reservation);
    if (!res || res.writableEnded) return;
    res.end(ids.map((id) => (last ? event("next", { id, payload: last }) : "") + event("complete", { id })).join(""));
  };

  /** Checks the request's key; writes the refusal. @returns the key id, or null when refused */
  const keyOf = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<string | null> => {
    const check = await checkKey(gateway, req.headers.authorization, {
      clientIp: String(req.headers["x-switchyard-client-ip"] ?? ""),
      countId: String(req.headers["x-switchyard-count-id"] ?? randomUUID()),
      requestId: String(req.headers["x-request-id"] ?? randomUUID()),
    });
    if (!check.error) return check.keyId;
    const { code, status, message, details } = toShimError(check.error);
    // A rate-limited request keeps `Retry-After`, as on every other path (router/request-report.ts).
    const retryAfter = check.error.extensions.retry_after_seconds;
    const body = JSON.stringify(graphqlErrorResult(code, message, details));
    res.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      ...(typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {}),
    });
    res.end(body);
    return null;
  };

  /** The stream a request names, when it belongs to the request's key; else the 404 is written. */
  const ownStream = async (req: http.IncomingMessage, res: http.ServerResponse, token: string | null): Promise<Reservation | null> => {
    const keyId = await keyOf(req, res);
    if (!keyId) return null;
    const reservation = token ? streams.get(token) : undefined;
    // Another key's token is answered as an unknown one: nothing says it exists.
    if (!reservation || reservation.keyId !== keyId) {
      sendGraphqlError(res, "not_found", "Stream not found");
      return null;
    }
    return reservation;
  };

  const reserve = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const keyId = await keyOf(req, res);
    if (!keyId) return;
    if ((perKey.get(keyId) ?? 0) >= MAX_STREAMS_PER_KEY) {
      return sendGraphqlError(res, "too_many_subscriptions", `A key holds at most ${MAX_STREAMS_PER_KEY} event streams at once on one router`);
    }
    const token = randomUUID();
    const reservation: Reservation = {
      token,
      keyId,
      res: null,
      pending: [],
      ops: new Map(),
      // Reserved but never opened: dropped, so reservations cannot pile up.
      timer: setTimeout(() => {
        if (!reservation.res) drop(reservation);
      }, reservationTtlMs),
      untrack: () => {},
    };
    reservation.timer.unref();
    reservation.untrack = revocations.track(keyId, () => end(reservation, KEY_DISABLED_RESULT));
    streams.set(token, reservation);
    perKey.set(keyId, (perKey.get(keyId) ?? 0) + 1);
    res.writeHead(201, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
    res.end(token);
  };

  const open = async (req: http.IncomingMessage, res: http.ServerResponse, token: string | null) => {
    const reservation = await ownStream(req, res, token);
    if (!reservation) return;
    if (reservation.res) return sendGraphqlError(res, "conflict", "Stream already open");
    reservation.res = res;
    clearTimeout(reservation.timer);
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
    res.write(`:\n\n${reservation.pending.join("")}`);
    reservation.pending = [];
    const ping = setInterval(() => res.write(":\n\n"), PING_MS);
    // The client left: its operations stop and the token is gone.
    res.once("close", () => {
      clearInterval(ping);
      drop(reservation);
    });
  };

  const operate = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL, token: string | null) => {
    const reservation = await ownStream(req, res, token);
    if (!reservation) return;
    const raw = (req as http.IncomingMessage & { body?: Buffer }).body;
    let params: unknown;
    try {
      params = JSON.parse(raw?.toString("utf8") ?? "");
    } catch {
      return sendGraphqlError(res, "invalid_json");
    }
    if (!params || typeof params !== "object" || Array.isArray(params)) {
      return sendGraphqlError(res, "invalid_request", "The body must be one JSON object with `query`");
    }
    const extensions = (params as { extensions?: { operationId?: unknown } }).extensions;
    const id = typeof extensions?.operationId === "string" ? extensions.operationId : "";
    if (!id) return sendGraphqlError(res, "invalid_request", "extensions.operationId is missing");
    if (reservation.ops.has(id)) return sendGraphqlError(res, "conflict", "Operation with ID already exists");
    if (reservation.ops.size >= MAX_OPERATIONS_PER_STREAM) {
      return sendGraphqlError(res, "too_many_subscriptions", `A stream runs at most ${MAX_OPERATIONS_PER_STREAM} operations at once`);
    }
    const { operationId: _, ...rest } = extensions as Record<string, unknown>;
    const body = { ...(params as Record<string, unknown>), extensions: Object.keys(rest).length ? rest : undefined };
    const headers = { ...gatewayHeaders(req), accept: "text/event-stream", "content-type": "application/json" };
    let stopped = false;
    let cancel: (() => void) | null = null;
    reservation.ops.set(id, {
      stop() {
        stopped = true;
        cancel?.();
      },
    });
    let response: Response;
    try {
      response = await postParsed(gateway, `http://router.internal${url.pathname}`, headers, body);
    } catch (error) {
      reservation.ops.delete(id);
      throw error;
    }
    res.writeHead(202, { "content-type": "text/plain; charset=utf-8" });
    res.end();
    void pump(
      reservation,
      id,
      response,
      () => stopped,
      (stop) => (cancel = stop),
    );
  };

  /** Writes an operation's gateway answer onto its stream as `{id, payload}` events, then `complete`. */
  const pump = async (reservation: Reservation, id: string, response: Response, stopped: () => boolean, onCancel: (stop: () => void) => void) => {
    const body = response.body;
    try {
      if (!body) throw new Error("no body");
      if (!/text\/event-stream/.test(response.headers.get("content-type") ?? "")) {
        // An answer the gateway wrote as JSON (a refusal before any stream): one `next` with it.
        write(reservation, event("next", { id, payload: await response.json() }));
      } else {
        const stop = () => void body.cancel().catch(() => undefined);
        onCancel(stop);
        if (stopped()) return stop(); // stopped (DELETE, client gone) before the gateway answered
        for await (const { event: name, data } of gatewayEvents(body)) {
          if (stopped()) return;
          if (name === "next") write(reservation, event("next", { id, payload: data }));
          await drained(reservation); // a slow client slows its operations, not the router's memory
          if (name === "complete") break;
        }
      }
    } catch {
      if (stopped()) return;
      write(reservation, event("next", { id, payload: graphqlErrorResult("internal") }));
    }
    if (stopped() || reservation.ops.get(id) === undefined) return;
    reservation.ops.delete(id);
    write(reservation, event("complete", { id }));
  };

  const cancelOperation = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL, token: string | null) => {
    const reservation = await ownStream(req, res, token);
    if (!reservation) return;
    const id = url.searchParams.get("operationId");
    if (!id) return sendGraphqlError(res, "invalid_request", "operationId is missing");
    reservation.ops.get(id)?.stop();
    reservation.ops.delete(id);
    res.writeHead(200);
    res.end();
  };

  return {
    claims(req, url) {
      if (tokenOf(req, url) !== null) return true;
      // A reservation asks for the token as text (graphql-sse's rule); any other PUT is not this protocol's (405 from the gateway).
      const accept = String(req.headers.accept ?? "*/*").trim();
      return req.method === "PUT" && (accept === "*/*" || accept === "" || /^text\/plain\s*(;|$)/i.test(accept));
    },
    async handle(req, res, url) {
      const token = tokenOf(req, url);
      const streaming = String(req.headers.accept ?? "").includes("text/event-stream");
      if (req.method === "PUT") return reserve(req, res);
      if (req.method === "DELETE") return cancelOperation(req, res, url, token);
      if (streaming && (req.method === "GET" || req.method === "POST")) return open(req, res, token);
      if (req.method === "POST") return operate(req, res, url, token);
      res.setHeader("allow", "GET, POST, PUT, DELETE");
      sendGraphqlError(res, "method_not_allowed");
    },
    close() {
      for (const reservation of [...streams.values()]) end(reservation);
    },
  };
}
