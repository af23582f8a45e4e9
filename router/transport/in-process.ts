/**
 * The in-process transport (docs/architecture.md §1; issue 7): when the router and a subgraph share one process
 * (`npm start`), the gateway runs that subgraph's operations by calling it directly — same
 * schema, context builder, plugins and error format as its HTTP `/graphql` and graphql-ws, minus
 * the socket, the JSON round trip and, for subscriptions, one upstream WebSocket per client
 * subscription. A custom transport kind of the gateway's transport API
 * (@graphql-mesh/transport-common), chosen per subgraph through `transportEntries`.
 */
import { GraphQLError, getOperationAST, print, type DocumentNode, type FormattedExecutionResult } from "graphql";
import type { Executor, Transport } from "@graphql-mesh/transport-common";
import { mapStream, type LocalSubgraph } from "../../subgraphs/shared/contract.ts";

/** The transport kind of in-process subgraphs (`transportEntries: { name: { kind } }`). */
export const IN_PROCESS_KIND = "in-process";

/** One operation as the gateway hands it to a transport. */
export type SubgraphRequest = Parameters<Executor>[0];

/** The gateway's result type: errors as GraphQLError instances, as the HTTP transport makes them. */
type GatewayResult = { data?: unknown; errors?: GraphQLError[]; extensions?: Record<string, unknown> };

// The gateway reuses one DocumentNode per planned fetch: print each once.
const printed = new WeakMap<DocumentNode, string>();
function printOnce(document: DocumentNode): string {
  let text = printed.get(document);
  if (text === undefined) {
    text = print(document);
    printed.set(document, text);
  }
  return text;
}

/** Turns a formatted (JSON-shaped) result into what the HTTP transport would have parsed. */
function asGatewayResult(result: FormattedExecutionResult): GatewayResult {
  if (!result.errors?.length) return result as GatewayResult;
  return {
    ...result,
    errors: result.errors.map((error) => new GraphQLError(error.message, { path: error.path, extensions: error.extensions })),
  } as GatewayResult;
}

/**
 * Creates the transport.
 * @param subgraphs the subgraphs running in this process, by supergraph name
 * @param headersOf the headers one subgraph request carries (gateway.ts decides which are forwarded)
 * @returns a transport for `createGatewayRuntime({ transports })`
 * @throws Error (when the gateway loads a subgraph) for a subgraph that does not run here
 */
export function inProcessTransport(subgraphs: Record<string, LocalSubgraph>, headersOf: (request: SubgraphRequest) => Record<string, string>): Transport {
  return {
    getSubgraphExecutor({ subgraphName }) {
      const local = subgraphs[subgraphName];
      if (!local) throw new Error(`subgraph ${subgraphName} does not run in this process`);
      const executor = async (request: SubgraphRequest) => {
        const operation = {
          query: printOnce(request.document),
          document: request.document,
          variables: request.variables as Record<string, unknown> | undefined,
          operationName: request.operationName,
          headers: headersOf(request),
          // The gateway's context of the client request: one per request, made by this process.
          requestScope: typeof request.context === "object" && request.context !== null ? request.context : undefined,
          operationType: request.operationType ?? getOperationAST(request.document, request.operationName)?.operation,
        };
        if (request.operationType === "subscription") {
          const result = await local.subscribe(operation);
          return Symbol.asyncIterator in result ? mapStream(result, asGatewayResult) : asGatewayResult(result);
        }
        return asGatewayResult(await local.execute(operation));
      };
      return executor as Executor;
    },
  };
}
