/**
 * graphql-ws on the router's `/graphql` (docs/architecture.md §6, graphql-transport-ws protocol): the gateway
 * runs each operation; the key in the connection params (`Authorization` or `authorization`,
 * with or without `Bearer `) is checked at connection time, and a bad key closes the socket with
 * 4403 Forbidden (a check the graph could not answer, with 1013 Try Again Later). A connection whose key is disabled later is closed with 4403 too
 * (router/revocation.ts). One socket runs at most {@link GRAPHQL_WS_MAX_OPERATIONS} operations at
 * once: the next `subscribe` gets an `error` message (`too_many_subscriptions`, 429) for its id
 * and the socket and its other operations go on. Subscriptions that would receive the same events
 * share one upstream run (router/subscription-fanout.ts).
 */
import type http from "node:http";
import { randomUUID } from "node:crypto";
import { WebSocketServer, type WebSocket } from "ws";
import type { Extra } from "graphql-ws/use/ws";
import { CloseCode, handleProtocols, makeServer, MessageType, parseMessage, type Context } from "graphql-ws";
import { GraphQLError } from "graphql";
import { getGraphQLWSOptions } from "@graphql-hive/gateway-runtime";
import type { Logger } from "pino";
import type { Gateway } from "./graph/gateway.ts";
import { checkKey } from "./graph/key-check.ts";
import { GRAPHQL_WS_INIT_TIMEOUT_MS, GRAPHQL_WS_MAX_PAYLOAD_BYTES, limitError, GRAPHQL_WS_MAX_OPERATIONS, TOO_MANY_SUBSCRIPTIONS } from "./limits.ts";
import type { Revocations } from "./revocation.ts";
import { createFanOut, shareKeyOf, SHARED_UPSTREAM, type SharedObserver, type SharedStream, type Subscriber } from "./subscription-fanout.ts";
import { closeWebSockets } from "../src/net/drain.ts";
import type { InternalHeaders } from "../subgraphs/shared/internal-context.ts";
import { ERROR_CODES } from "../src/errors.ts";

/** Connection params with lower-cased names and string values only (the gateway reads them as headers). */
export function normalizeConnectionParams(params: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (params && typeof params === "object") {
    for (const [name, value] of Object.entries(params)) if (typeof value === "string") out[name.toLowerCase()] = value;
  }
  return out;
}

export { GRAPHQL_WS_MAX_OPERATIONS, TOO_MANY_SUBSCRIPTIONS } from "./limits.ts";

/** WebSocket close code 1013 (Try Again Later, IANA registry): the key could not be checked. */
export const TRY_AGAIN_LATER = 1013;

/** The keep-alive ping interval; a socket that has not answered a ping by the next one is cut (graphql-ws's `useServer` default). */
const GRAPHQL_WS_KEEP_ALIVE_MS = 12_000;

/** How long a client revoked with 4403 has to answer the close before its socket is cut. */
const REVOKED_CLOSE_GRACE_MS = 1_000;

/** Message types of graphql-transport-ws that only a server sends. */
const SERVER_ONLY_TYPES = new Set(["connection_ack", "next", "error"]);

/** Whether a frame is a message of a type only a server sends. */
function isServerOnlyMessage(data: unknown): boolean {
  const text = String(data);
  if (!/"(?:connection_ack|next|error)"/.test(text)) return false;
  try {
    return SERVER_ONLY_TYPES.has(JSON.parse(text)?.type);
  } catch {
    return false;
  }
}

/**
 * The internal headers of one graphql-ws operation (subgraphs/shared/internal-context.ts): the
 * key and locale from the connection params, the client's address as the router saw the upgrade
 * request, and ids minted here — nothing else the client sent.
 */
function operationHeaders(params: Record<string, string>, clientIp: string): InternalHeaders {
  const headers: InternalHeaders = { "x-request-id": randomUUID(), "x-switchyard-count-id": randomUUID(), "x-switchyard-client-ip": clientIp };
  if (params.authorization) headers.authorization = params.authorization;
  if (params["accept-language"]) headers["accept-language"] = params["accept-language"];
  return headers;
}

/** What a subscription's state is without graphql-ws's own: the async iterator shape lets graphql-ws end it on `complete` and on close. */
const DONE: IteratorResult<never> = Object.freeze({ value: undefined as never, done: true });

/** The `payload` text of a `next` frame for each event, made once for all of a shared stream's sockets. */
const payloadTexts = new WeakMap<object, string>();

/** The `payload` of a graphql-ws `next` frame for a result, as graphql-ws writes it (errors by their `toJSON`). */
function payloadText(result: unknown): string {
  const cached = typeof result === "object" && result !== null ? payloadTexts.get(result) : undefined;
  if (cached !== undefined) return cached;
  const { errors, ...rest } = result as { errors?: readonly unknown[] };
  const text = JSON.stringify(
    errors ? { ...rest, errors: errors.map((e) => (typeof (e as GraphQLError).toJSON === "function" ? (e as GraphQLError).toJSON() : e)) } : rest,
  );
  if (typeof result === "object" && result !== null) payloadTexts.set(result, text);
  return text;
}

/**
 * One graphql-ws connection: the socket graphql-ws's server writes to (`send`, `close`,
 * `onMessage`), its `extra` (`socket`, `request`), and what its operations need (the key's
 * connection params and the client's address). One object per socket; its listeners are shared
 * functions that find it through the socket (no closures per socket).
 */
class Connection {
  /** graphql-ws's message handler of this socket. */
  private receive: ((data: string) => Promise<void>) | null = null;
  /** graphql-ws's context, known once `connection_init` was accepted. */
  ctx: Context<Record<string, unknown>, Extra> | null = null;
  params: Record<string, string> = {};
  clientIp = "";
  /** A ping went out in the last keep-alive sweep and no pong came back yet. */
  awaitingPong = false;
  /** Called when the socket closes: graphql-ws's, then forgetting the key's registration. */
  closed: ((code: number, reason: string) => Promise<void>) | null = null;
  untrack: (() => void) | null = null;
  constructor(
    readonly socket: WebSocket,
    /** The upgrade request, until the key was checked. */
    public request: http.IncomingMessage | undefined,
  ) {}
  get protocol() {
    return this.socket.protocol;
  }
  send(data: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.socket.readyState !== this.socket.OPEN) return resolve();
      this.socket.send(data, (err) => (err ? reject(err) : resolve()));
    });
  }
  /** Writes a frame without waiting for it (a shared stream's events: ws keeps them in order). */
  write(data: string) {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(data);
  }
  close(code?: number, reason?: string) {
    this.socket.close(code, reason);
  }
  onMessage(receive: (data: string) => Promise<void>) {
    this.receive = receive;
  }
  /** Hands a frame to graphql-ws; a failure of ours closes with 4500, as graphql-ws's `useServer` does. */
  async deliver(data: string, logger: Logger) {
    try {
      await this.receive?.(data);
    } catch (err) {
      logger.error({ err }, "graphql-ws message handling failed");
      this.socket.close(CloseCode.InternalServerError, "Internal server error");
    }
  }
}

/**
 * A client subscription served from a running shared stream (router/subscription-fanout.ts): its
 * events go onto the socket as `next` frames with no gateway execution and no graphql-ws loop of its
 * own. graphql-ws holds it in `ctx.subscriptions` (the id's reservation, the operation limit) and
 * ends it through `return()` on the client's `complete` and on close.
 */
class SharedSink implements Subscriber {
  stream: SharedStream | null = null;
  left: (() => void) | null = null;
  /** Ended: by the client (`complete`, close), or by the upstream. */
  ended = false;
  constructor(
    private readonly connection: Connection,
    private readonly id: string,
  ) {}
  push(value: unknown) {
    if (!this.ended) this.connection.write(`{"id":${JSON.stringify(this.id)},"type":"next","payload":${payloadText(value)}}`);
  }
  finish(failure: { error: unknown } | null) {
    if (this.ended) return;
    this.end();
    const subscriptions = this.connection.ctx?.subscriptions as Record<string, unknown> | undefined;
    if (subscriptions?.[this.id] !== this) return;
    delete subscriptions[this.id];
    if (!failure) return this.connection.write(JSON.stringify({ id: this.id, type: "complete" }));
    // As graphql-ws answers a stream that throws.
    const cause = failure.error instanceof Error ? failure.error : new Error(String(failure.error));
    this.connection.write(JSON.stringify({ id: this.id, type: "error", payload: [new GraphQLError(cause.message, { originalError: cause }).toJSON()] }));
  }
  return(): Promise<IteratorResult<unknown>> {
    if (!this.ended) {
      this.end();
      this.stream?.leave(this);
    }
    return Promise.resolve(DONE);
  }
  /** Attached to its shared stream (at once, or once a pending start is through). */
  attached(stream: SharedStream) {
    this.stream = stream;
    if (!this.ended) return;
    // Completed or closed while the start was pending.
    stream.leave(this);
    this.end();
  }
  private end() {
    this.ended = true;
    const left = this.left;
    this.left = null;
    left?.();
  }
  [Symbol.asyncIterator]() {
    return this;
  }
}

/** The graphql-ws connection of each socket. */
const connections = new WeakMap<WebSocket, Connection>();

/**
 * Serves graphql-ws on `/graphql` of the router's HTTP server.
 * @param revocations where each connection is registered under its key, so disabling the key
 *   closes it with 4403
 * @param clientIpOf the client's address of an upgrade request (TRUST_PROXY applied, router/server.ts)
 * @param observeShared told of each client of a shared subscription (router/metrics.ts)
 * @returns a close function that ends every connection (close code 1001, going away); a client
 *   that does not answer the close within `timeoutMs` is terminated
 */
export function attachWebSockets(
  server: http.Server,
  gateway: Gateway,
  logger: Logger,
  revocations: Revocations,
  clientIpOf: (req: http.IncomingMessage) => string,
  observeShared?: SharedObserver,
) {
  // No compression: a deflate context per socket costs far more memory than these small messages save.
  const wss = new WebSocketServer({ server, path: "/graphql", maxPayload: GRAPHQL_WS_MAX_PAYLOAD_BYTES, perMessageDeflate: false, handleProtocols });
  const fanOut = createFanOut(observeShared);
  const options = getGraphQLWSOptions<Record<string, unknown>, Extra>(gateway, (ctx) => {
    const connection = ctx.extra as unknown as Connection;
    return {
      socket: connection.socket,
      connectionParams: connection.params,
      // Read by router/plugins/useInternalContext.ts: the only facts the subgraphs get.
      internalHeaders: operationHeaders(connection.params, connection.clientIp),
    };
  });
  const graphqlWs = makeServer<Record<string, unknown>, Extra>({
    ...options,
    connectionInitWaitTimeout: GRAPHQL_WS_INIT_TIMEOUT_MS,
    onConnect: async (ctx) => {
      const connection = ctx.extra as unknown as Connection;
      const params = normalizeConnectionParams(ctx.connectionParams);
      const clientIp = connection.request ? clientIpOf(connection.request) : "";
      let check: Awaited<ReturnType<typeof checkKey>>;
      try {
        check = await checkKey(gateway, params.authorization, { clientIp });
      } catch (error) {
        logger.warn({ err: error }, "graphql-ws authorization failed");
        return false;
      }
      const keyId = check.keyId;
      if (!keyId) {
        // A key check the graph could not answer says nothing about the key: not 4403 (which
        // clients take as final) but "try again later" (router/plugins/useRegistryCodes.ts logged the cause).
        if (check.error?.extensions.code === "service_unavailable") connection.close(TRY_AGAIN_LATER, ERROR_CODES.service_unavailable.message);
        return false;
      }
      connection.params = params;
      connection.clientIp = clientIp;
      connection.ctx = ctx;
      // graphql-ws would keep the upgrade request (headers, streams) for the socket's whole life.
      connection.request = undefined;
      endWhenRevoked(connection, keyId);
      return true;
    },
    onSubscribe: (ctx, id, payload) => {
      // graphql-ws has already reserved this id in ctx.subscriptions.
      if (Object.keys(ctx.subscriptions).length > GRAPHQL_WS_MAX_OPERATIONS) {
        return [limitError(`Too many subscriptions on one connection: at most ${GRAPHQL_WS_MAX_OPERATIONS} at once`, TOO_MANY_SUBSCRIPTIONS)];
      }
      return options.onSubscribe!(ctx, id, payload); // the gateway's: getGraphQLWSOptions always sets it
    },
    subscribe: (args) => {
      const context = args.contextValue as { params: Record<string, unknown>; internalHeaders: InternalHeaders; [SHARED_UPSTREAM]?: boolean };
      const headers = context.internalHeaders;
      const share = shareKeyOf(context.params, {
        authorization: headers.authorization,
        locale: headers["accept-language"],
        clientIp: headers["x-switchyard-client-ip"],
      });
      let started = !share;
      const stream = fanOut.subscribe(share, () => {
        started = true;
        if (share) context[SHARED_UPSTREAM] = true;
        return options.subscribe!(args);
      });
      // An operation that joined a running stream needs no context of its own (graphql-ws keeps args).
      return stream.then((result) => {
        if (!started) args.contextValue = undefined;
        return result;
      }) as ReturnType<NonNullable<typeof options.subscribe>>;
    },
  });

  /**
   * Serves a `subscribe` that can join a running shared stream without graphql-ws's loop and the
   * gateway (they would only copy the shared events). Returns false for every other frame, which
   * graphql-ws then handles: the first subscription of a share key, refusals, duplicates, limits.
   */
  function joinShared(connection: Connection, text: string): boolean | Promise<boolean> {
    const ctx = connection.ctx;
    if (!ctx?.acknowledged || !text.includes('"subscribe"')) return false;
    let message: ReturnType<typeof parseMessage>;
    try {
      message = parseMessage(text);
    } catch {
      return false;
    }
    if (message.type !== MessageType.Subscribe || message.id in ctx.subscriptions || Object.keys(ctx.subscriptions).length >= GRAPHQL_WS_MAX_OPERATIONS)
      return false;
    const share = shareKeyOf(message.payload, {
      authorization: connection.params.authorization,
      locale: connection.params["accept-language"],
      clientIp: connection.clientIp,
    });
    if (!share) return false;
    const sink = new SharedSink(connection, message.id);
    // Reserved now, as graphql-ws would: a duplicate id or a `complete` meanwhile find it.
    ctx.subscriptions[message.id] = sink as unknown as AsyncGenerator;
    const attached = fanOut.attach(share, sink);
    const settle = (stream: SharedStream | null) => {
      if (stream) {
        sink.attached(stream);
        return true;
      }
      // None runs (or its start was refused): graphql-ws runs it, unless the client ended it meanwhile.
      if ((ctx.subscriptions as Record<string, unknown>)[message.id] !== sink) return true;
      delete ctx.subscriptions[message.id];
      return false;
    };
    return attached instanceof Promise ? attached.then(settle) : settle(attached);
  }

  function onMessage(this: WebSocket, data: unknown) {
    const connection = connections.get(this);
    if (!connection) return;
    // graphql-ws would close with 4500 (logged as a bug of ours); the protocol calls any message that is not the client's 4400.
    if (isServerOnlyMessage(data)) return void this.close(CloseCode.BadRequest, "Invalid message received");
    const text = String(data);
    const joined = joinShared(connection, text);
    if (joined === true) return;
    if (joined === false) return void connection.deliver(text, logger);
    void joined.then((done) => (done ? undefined : connection.deliver(text, logger)));
  }
  function onPong(this: WebSocket) {
    const connection = connections.get(this);
    if (connection) connection.awaitingPong = false;
  }
  function onClose(this: WebSocket, code: number, reason: Buffer) {
    const connection = connections.get(this);
    if (!connection) return;
    connections.delete(this);
    connection.untrack?.();
    void connection.closed?.(code, String(reason));
  }
  function onSocketError(this: WebSocket, error: Error) {
    logger.error({ err: error }, "graphql-ws socket error");
    this.close(CloseCode.InternalServerError, "Internal server error");
  }

  wss.on("connection", (socket: WebSocket, request: http.IncomingMessage) => {
    const connection = new Connection(socket, request);
    connections.set(socket, connection);
    socket.once("error", onSocketError);
    socket.on("message", onMessage);
    socket.on("pong", onPong);
    socket.once("close", onClose);
    connection.closed = graphqlWs.opened(connection, connection as unknown as Extra);
  });
  wss.once("error", (error) => {
    logger.error({ err: error }, "graphql-ws server error");
    for (const client of wss.clients) client.close(CloseCode.InternalServerError, "Internal server error");
  });

  // One keep-alive sweep for every socket (graphql-ws's useServer runs a timer per socket): a
  // socket that did not answer the last sweep's ping is cut.
  const keepAlive = setInterval(() => {
    for (const socket of wss.clients) {
      const connection = connections.get(socket);
      if (!connection || socket.readyState !== socket.OPEN) continue;
      if (connection.awaitingPong) {
        socket.terminate();
        continue;
      }
      connection.awaitingPong = true;
      socket.ping();
    }
  }, GRAPHQL_WS_KEEP_ALIVE_MS);
  keepAlive.unref();

  /** Closes the socket with 4403 when its key is disabled; cut if the client does not answer. */
  function endWhenRevoked(connection: Connection, keyId: string) {
    const socket = connection.socket;
    if (socket.readyState !== socket.OPEN) return; // gone while its key was checked
    connection.untrack = revocations.track(keyId, () => {
      socket.close(CloseCode.Forbidden, "Forbidden: API key is disabled");
      const cut = setTimeout(() => socket.terminate(), REVOKED_CLOSE_GRACE_MS);
      cut.unref();
      socket.once("close", () => clearTimeout(cut));
    });
  }
  return {
    async close(timeoutMs?: number) {
      clearInterval(keepAlive);
      await closeWebSockets(
        wss,
        async () => {
          for (const client of wss.clients) client.close(1001, "Going away");
          wss.removeAllListeners();
        },
        timeoutMs,
      );
    },
  };
}
