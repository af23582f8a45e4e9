/**
 * The signed internal context of every subgraph request (subgraphs/shared/internal-context.ts):
 * the only facts a subgraph learns about the client request, all set by the router.
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { INTERNAL_EXTENSION, newInternalContext, pickInternalHeaders, type InternalHeaders } from "../../subgraphs/shared/internal-context.ts";

/**
 * Puts the internal context of a subgraph request (subgraphs/shared/internal-context.ts) in its
 * `switchyard` extension, from facts the router alone has set: for HTTP requests the request's
 * headers, rewritten at the router's edge (router/server.ts strips every `x-switchyard-*` a client
 * sends and sets its own); for graphql-ws operations the `internalHeaders` the router built when
 * the operation started (router/websocket.ts). Nothing else a client sends reaches a subgraph.
 * Each subgraph fetch (one client request may make several, to one subgraph or both) gets a
 * context of its own: a new nonce, and the name of the subgraph it is for.
 */
export const useInternalContext: GatewayPlugin = {
  onSubgraphExecute({ subgraphName, executionRequest }) {
    const headers = internalHeadersOf(executionRequest.context);
    executionRequest.extensions = { ...executionRequest.extensions, [INTERNAL_EXTENSION]: newInternalContext(subgraphName, headers) };
  },
};

/**
 * The internal headers of a gateway operation (see {@link useInternalContext} for where they come from).
 * @param context the gateway's context of the client request (`internalHeaders` for graphql-ws, else its `request`)
 * @returns the headers, or none when the context has neither
 */
export function internalHeadersOf(context: unknown): InternalHeaders {
  const { internalHeaders, request } = (context ?? {}) as { internalHeaders?: InternalHeaders; request?: Request };
  return internalHeaders ?? (request ? pickInternalHeaders((name) => request.headers.get(name)) : {});
}
