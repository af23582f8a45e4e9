/**
 * The router's key check for long-lived operations (subscriptions): asks the graph who the key
 * is (`apiKey`, no scope needed), so the refusal happens before anything is forwarded. The key id
 * it learns tells router/revocation.ts which connections to end when the key is disabled.
 */
import { randomUUID } from "node:crypto";
import { GraphQLError } from "graphql";
import { ERROR_CODES, graphqlExtensions, type ErrorCode } from "../../src/errors.ts";
import type { Gateway } from "./gateway.ts";
import { runOperation } from "./client.ts";
import { requestKeyIdentified } from "../revocation.ts";

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

/** What the check reads of a subscription's context: graphql-ws's connection params, or the SSE request's headers and node request. */
interface SubscribeContext {
  connectionParams?: unknown;
  headers?: Headers | Record<string, string | undefined>;
  req?: object;
}

/**
 * An envelop plugin refusing subscriptions over HTTP (SSE) whose key is bad: the answer is one
 * error result instead of a stream that never starts. A good key's id is handed to the router's
 * revocation registry (the stream ends when the key is disabled).
 */
export function subscriptionKeyCheck(gateway: () => Gateway) {
  return {
    async onSubscribe({
      args,
      setResultAndStopExecution,
    }: {
      args: { contextValue: SubscribeContext | null };
      setResultAndStopExecution(result: unknown): void;
    }) {
      const context = args.contextValue ?? {};
      // graphql-ws connections were checked when they connected.
      if (context.connectionParams) return;
      const headers = context.headers ?? {};
      // A fetch Headers (the gateway's may be a ponyfill, not the global class) or a plain record.
      const header = (name: string): string | undefined =>
        (typeof headers.get === "function" ? (headers as Headers).get(name) : (headers as Record<string, string | undefined>)[name]) ?? undefined;
      // The client IP was set by the router's edge (router/server.ts), never by the client.
      // The SSE request and its key check count as one request.
      const check = await checkKey(gateway(), header("authorization"), {
        clientIp: header("x-switchyard-client-ip") ?? "",
        countId: header("x-switchyard-count-id"),
        requestId: header("x-request-id"),
      });
      if (check.error) setResultAndStopExecution({ errors: [check.error] });
      else requestKeyIdentified(context.req, check.keyId);
    },
  };
}
