/**
 * A JSON `/graphql` body is read, limited and parsed once, by the router (router/http/body.ts,
 * router/graph/http.ts); the gateway takes the parsed parameters instead of reading it again.
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

/**
 * Where router/graph/client.ts `postParsed` leaves the parsed body of a request for
 * {@link usePreparsedParams} (the server context of the gateway's fetch handler).
 */
export const PARSED_BODY = Symbol("switchyard.parsedBody");

/**
 * Lets the gateway take a JSON body the router has already read, limited and parsed: the request
 * reaches it without a body, so GraphQL Yoga neither re-streams it through its own size guard (a
 * TransformStream per request; ours ran first, router/http/body.ts `limitGraphqlBody`) nor parses
 * it again. Yoga's checks of the parameters themselves (onParams) still run.
 */
export const usePreparsedParams: GatewayPlugin = {
  onRequestParse({ serverContext, setRequestParser }) {
    const params = (serverContext as { [PARSED_BODY]?: unknown } | undefined)?.[PARSED_BODY];
    if (params) setRequestParser(() => params as Awaited<ReturnType<Parameters<typeof setRequestParser>[0]>>);
  },
};
