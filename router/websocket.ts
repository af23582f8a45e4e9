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
import { useServer, type Extra } from "graphql-ws/use/ws";
import { CloseCode } from "graphql-ws";
import { getGraphQLWSOptions } from "@graphql-hive/gateway-runtime";
import type { Logger } from "pino";
import type { Gateway } from "./graph/gateway.ts";
import { checkKey } from "./graph/key-check.ts";
import { GRAPHQL_WS_INIT_TIMEOUT_MS, GRAPHQL_WS_MAX_PAYLOAD_BYTES, limitError, GRAPHQL_WS_MAX_OPERATIONS, TOO_MANY_SUBSCRIPTIONS } from "./limits.ts";
import type { Revocations } from "./revocation.ts";
import { createFanOut, shareKeyOf, SHARED_UPSTREAM, type SharedObserver } from "./subscription-fanout.ts";
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

/** Calls `target`'s own methods on `target` (ws reads private fields through `this`). */
function passThrough<T extends object>(target: T, prop: string | symbol): unknown {
  const value = Reflect.get(target, prop, target);
  return typeof value === "function" ? value.bind(target) : value;
}

/**
 * graphql-ws closes a socket whose client sends a server-only message (`next`, `error`,
 * `connection_ack`) with 4500 Internal Server Error, logged as a bug of ours; the protocol calls
 * any message that is not the client's 4400. This hands useServer a view of the server whose
 * sockets close with 4400 on such a message before graphql-ws sees it.
 */
function refusingServerOnlyMessages(wss: WebSocketServer): WebSocketServer {
  const guard = (socket: WebSocket) =>
    new Proxy(socket, {
      get: (target, prop) =>
        prop === "on"
          ? (event: string, listener: (...args: unknown[]) => void) =>
              target.on(
                event,
                event !== "message"
                  ? listener
                  : (data: unknown, ...rest: unknown[]) => {
                      if (isServerOnlyMessage(data)) return void target.close(CloseCode.BadRequest, "Invalid message received");
                      listener(data, ...rest);
                    },
              )
          : passThrough(target, prop),
    });
  return new Proxy(wss, {
    get: (target, prop) =>
      prop === "on"
        ? (event: string, listener: (...args: unknown[]) => void) =>
            target.on(event, event !== "connection" ? listener : (socket: WebSocket, ...rest: unknown[]) => listener(guard(socket), ...rest))
        : passThrough(target, prop),
  });
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
  const wss = new WebSocketServer({ server, path: "/graphql", maxPayload: GRAPHQL_WS_MAX_PAYLOAD_BYTES, perMessageDeflate: false });
  const fanOut = createFanOut(observeShared);
  // What each operation needs of its connection, taken at connect: the upgrade request is not kept.
  const facts = new WeakMap<object, { params: Record<string, string>; clientIp: string }>();
  const options = getGraphQLWSOptions<Record<string, unknown>, Extra>(gateway, (ctx) => {
    const { params: connectionParams, clientIp } = facts.get(ctx) ?? { params: normalizeConnectionParams(ctx.connectionParams), clientIp: "" };
    return {
      socket: ctx.extra?.socket,
      connectionParams,
      // Read by router/plugins/useInternalContext.ts: the only facts the subgraphs get.
      internalHeaders: operationHeaders(connectionParams, clientIp),
    };
  });
  const cleanup = useServer(
    {
      ...options,
      connectionInitWaitTimeout: GRAPHQL_WS_INIT_TIMEOUT_MS,
      onConnect: async (ctx) => {
        let check: Awaited<ReturnType<typeof checkKey>>;
        const connection = { params: normalizeConnectionParams(ctx.connectionParams), clientIp: clientIpOf(ctx.extra.request) };
        try {
          check = await checkKey(gateway, connection.params.authorization, { clientIp: connection.clientIp });
        } catch (error) {
          logger.warn({ err: error }, "graphql-ws authorization failed");
          return false;
        }
        const keyId = check.keyId;
        if (!keyId) {
          // A key check the graph could not answer says nothing about the key: not 4403 (which
          // clients take as final) but "try again later" (router/plugins/useRegistryCodes.ts logged the cause).
          if (check.error?.extensions.code === "service_unavailable") ctx.extra.socket.close(TRY_AGAIN_LATER, ERROR_CODES.service_unavailable.message);
          return false;
        }
        facts.set(ctx, connection);
        // graphql-ws would keep the upgrade request (headers, streams) for the socket's whole life.
        (ctx.extra as { request?: http.IncomingMessage }).request = undefined;
        endWhenRevoked(ctx.extra.socket, keyId);
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
    },
    refusingServerOnlyMessages(wss),
  );
  /** Closes the socket with 4403 when its key is disabled; cut if the client does not answer. */
  function endWhenRevoked(socket: WebSocket, keyId: string) {
    if (socket.readyState !== socket.OPEN) return; // gone while its key was checked
    const untrack = revocations.track(keyId, () => {
      socket.close(CloseCode.Forbidden, "Forbidden: API key is disabled");
      const cut = setTimeout(() => socket.terminate(), REVOKED_CLOSE_GRACE_MS);
      cut.unref();
      socket.once("close", () => clearTimeout(cut));
    });
    socket.once("close", untrack);
  }
  return {
    async close(timeoutMs?: number) {
      await closeWebSockets(wss, () => cleanup.dispose(), timeoutMs);
    },
  };
}
