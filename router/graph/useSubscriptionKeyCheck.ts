/**
 * The key check of subscriptions over HTTP (SSE; router/graph/key-check.ts `checkKey`): a bad key
 * is answered with one error result instead of a stream that never starts, and a good key's id is
 * handed to the router's revocation registry (router/revocation.ts: the stream ends when the key
 * is disabled). graphql-ws connections were checked when they connected (router/websocket.ts).
 * The router creates it (router/server.ts) and hands it to the gateway's pipeline: it runs an
 * operation through that gateway, so router/graph/gateway.ts cannot import it without a cycle, and
 * it sits here beside key-check.ts rather than in router/plugins/, which imports nothing of graph/
 * (docs/architecture.md §1.2).
 */
import type { Gateway } from "./gateway.ts";
import { checkKey } from "./key-check.ts";
import { requestKeyIdentified } from "../revocation.ts";

/** What the check reads of a subscription's context: graphql-ws's connection params, or the SSE request's headers and node request. */
interface SubscribeContext {
  connectionParams?: unknown;
  headers?: Headers | Record<string, string | undefined>;
  req?: object;
}

/**
 * The gateway plugin.
 * @param gateway the gateway the check runs its `apiKey` query on (this plugin's own, given late:
 *   it is created with this plugin in its pipeline)
 */
export function useSubscriptionKeyCheck(gateway: () => Gateway) {
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
      // The client IP was set by the router's edge (router/http/edge.ts), never by the client.
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
