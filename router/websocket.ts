/**
 * graphql-ws on the router's `/graphql` (DESIGN §6, graphql-transport-ws protocol): the gateway
 * runs each operation; the key in the connection params (`Authorization` or `authorization`,
 * with or without `Bearer `) is checked at connection time, and a bad key closes the socket with
 * 4403 Forbidden.
 */
import type http from "node:http";
import { WebSocketServer } from "ws";
import { useServer } from "graphql-ws/use/ws";
import { getGraphQLWSOptions } from "@graphql-hive/gateway-runtime";
import type { Logger } from "pino";
import type { Gateway } from "./gateway.ts";
import { checkKey } from "./key-check.ts";
import { GRAPHQL_WS_INIT_TIMEOUT_MS, GRAPHQL_WS_MAX_PAYLOAD_BYTES } from "./limits.ts";
import { closeWebSockets } from "../src/net/drain.ts";

/** Connection params with lower-cased names and string values only (the gateway reads them as headers). */
export function normalizeConnectionParams(params: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (params && typeof params === "object") {
    for (const [name, value] of Object.entries(params)) if (typeof value === "string") out[name.toLowerCase()] = value;
  }
  return out;
}

/**
 * Serves graphql-ws on `/graphql` of the router's HTTP server.
 * @returns a close function that ends every connection (close code 1001, going away); a client
 *   that does not answer the close within `timeoutMs` is terminated
 */
export function attachWebSockets(server: http.Server, gateway: Gateway, logger: Logger) {
  const wss = new WebSocketServer({ server, path: "/graphql", maxPayload: GRAPHQL_WS_MAX_PAYLOAD_BYTES });
  const options = getGraphQLWSOptions<Record<string, any>, any>(gateway as any, (ctx) => ({
    req: ctx.extra?.request,
    socket: ctx.extra?.socket,
    connectionParams: normalizeConnectionParams(ctx.connectionParams),
  }));
  const cleanup = useServer(
    {
      ...options,
      connectionInitWaitTimeout: GRAPHQL_WS_INIT_TIMEOUT_MS,
      onConnect: async (ctx) => {
        try {
          return (await checkKey(gateway, normalizeConnectionParams(ctx.connectionParams).authorization)) === null;
        } catch (error) {
          logger.warn({ err: error }, "graphql-ws authorization failed");
          return false;
        }
      },
    },
    wss,
  );
  return {
    async close(timeoutMs?: number) {
      await closeWebSockets(wss, () => cleanup.dispose(), timeoutMs);
    },
  };
}
