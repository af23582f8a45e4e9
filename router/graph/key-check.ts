/**
 * The router's key check for long-lived operations (subscriptions): asks the graph who the key
 * is (`apiKey`, no scope needed), so the refusal happens before anything is forwarded. The key id
 * it learns tells router/revocation.ts which connections to end when the key is disabled. Used by
 * graphql-ws (router/websocket.ts), graphql-sse's single connection mode (router/graph/sse-single.ts)
 * and, for SSE subscriptions, the gateway plugin router/graph/useSubscriptionKeyCheck.ts.
 */
import { randomUUID } from "node:crypto";
import { GraphQLError } from "graphql";
import { ERROR_CODES, graphqlExtensions, type ErrorCode } from "../../src/errors.ts";
import type { Gateway } from "./gateway.ts";
import { runOperation } from "./client.ts";

/** The outcome of {@link checkKey}: the key's id, or the error refusing it. */
type KeyCheck = { keyId: string; error: null } | { keyId: null; error: GraphQLError };

/**
 * Checks an Authorization value (with or without `Bearer `) for a client at `clientIp`, with
 * every policy of the key (disabled, source-IP allow-list, rate limit: the check counts as one
 * request).
 * @param client `clientIp`, the client's address as the router sees it (TRUST_PROXY applied);
 *   `countId`, the id the rate limiter counts this request under (default: a new one);
 *   `requestId`, the request's id for the logs (default: a new one)
 * @returns the key id when the key is valid, else the GraphQL error the subgraph gave (401/403/429)
 */
export async function checkKey(
  gateway: Gateway,
  authorization: string | undefined | null,
  client: { clientIp: string; countId?: string; requestId?: string },
): Promise<KeyCheck> {
  if (!authorization) return { keyId: null, error: registryError("unauthorized") };
  const result = await runOperation<{ apiKey: { id: string } }>(
    gateway,
    "query KeyCheck { apiKey { id } }",
    {},
    {
      authorization,
      requestId: client.requestId ?? randomUUID(),
      route: "POST /graphql",
      headers: { "x-switchyard-client-ip": client.clientIp, "x-switchyard-count-id": client.countId ?? randomUUID() },
    },
  );
  const error = result.errors?.[0];
  if (error) return { keyId: null, error: new GraphQLError(error.message, { extensions: error.extensions }) };
  const keyId = result.data?.apiKey?.id;
  return keyId ? { keyId, error: null } : { keyId: null, error: registryError("internal") };
}

/** A GraphQL error of a registry code with its message and status (src/errors.ts). */
function registryError(code: ErrorCode): GraphQLError {
  return new GraphQLError(ERROR_CODES[code].message, { extensions: graphqlExtensions(code) });
}
