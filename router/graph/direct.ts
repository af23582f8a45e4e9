/**
 * Operations one subgraph owns whole, run on that subgraph without planning through the
 * supergraph (ADR 0011; docs/architecture.md §1.2): the REST shims' generation submissions and
 * reads. The operation is the same GraphQL text the gateway would have planned, so the business
 * rules stay in the subgraph; what the gateway adds is kept here:
 * - the page-size and cost limits (router/limits.ts), with the request's variables;
 * - the internal context: the same facts, picked from the same headers (internal-context.ts);
 *   in-process it needs no signature, as the in-process transport's does not;
 * - the caller report (key id, RateLimit headers, operation name; router/request-report.ts) and
 *   the operation metrics (router/metrics.ts).
 * Key check, scopes, rate limit, request log and the request's database budget are the
 * subgraph's own, and run as for any operation. A subgraph reached over HTTP, or tracing on
 * (the gateway's spans), keeps the gateway path.
 */
import { parse, type DocumentNode, type GraphQLFormattedError, type GraphQLSchema } from "graphql";
import type { LocalSubgraph } from "../../subgraphs/shared/contract.ts";
import { pickInternalHeaders } from "../../subgraphs/shared/internal-context.ts";
import { operationLimitErrors } from "../limits.ts";
import type { RequestReports } from "../request-report.ts";
import type { RouterMetrics } from "../metrics.ts";
import { operationHeaders, runOperation, type CallContext, type GraphResult } from "./client.ts";
import type { Gateway } from "./gateway.ts";

/** Runs an operation that one subgraph owns whole (see the file comment). */
export type OwnedOperation = <T = unknown>(subgraph: string, query: string, variables: Record<string, unknown>, call: CallContext) => Promise<GraphResult<T>>;

/** The named operation of a shim document (each has exactly one). */
interface Prepared {
  document: DocumentNode;
  name: string;
  type: string;
}

/**
 * Creates the runner.
 * @param options the gateway (fallback and its API schema, for the cost), the in-process
 *   subgraphs (none, or tracing: everything goes through the gateway), the router's reports and metrics
 * @returns a function with {@link runOperation}'s contract: the GraphQL result, errors included
 */
export function ownedOperations(options: {
  gateway: Gateway;
  schema: () => Promise<GraphQLSchema>;
  localSubgraphs?: Record<string, LocalSubgraph>;
  reports: RequestReports;
  metrics: RouterMetrics;
}): OwnedOperation {
  const prepared = new Map<string, Prepared>();
  const prepare = (query: string): Prepared => {
    let known = prepared.get(query);
    if (!known) {
      const document = parse(query);
      const operation = document.definitions[0] as { name?: { value: string }; operation: string };
      known = { document, name: operation.name?.value ?? "anonymous", type: operation.operation };
      prepared.set(query, known);
    }
    return known;
  };
  return async <T = unknown>(subgraph: string, query: string, variables: Record<string, unknown>, call: CallContext): Promise<GraphResult<T>> => {
    const local = options.localSubgraphs?.[subgraph];
    if (!local) return runOperation<T>(options.gateway, query, variables, call);
    const { document, name, type } = prepare(query);
    const started = process.hrtime.bigint();
    const headers = operationHeaders(call);
    const countId = headers["x-switchyard-count-id"];
    options.reports.noteOperation(countId, name);
    const refused = operationLimitErrors(await options.schema(), document, name, variables);
    const result: GraphResult = refused.length
      ? { errors: refused.map((error) => error.toJSON()) }
      : (options.reports.takeCallerReport(
          countId,
          await local.execute({ query, document, variables, operationName: name, headers: pickInternalHeaders(headers) }),
        ) as GraphResult);
    options.metrics.observeOperation({ operation_name: name, operation_type: type }, outcomeOf(result.errors), Number(process.hrtime.bigint() - started) / 1e9);
    return result as GraphResult<T>;
  };
}

function outcomeOf(errors: readonly GraphQLFormattedError[] | undefined): "ok" | "error" {
  return errors?.length ? "error" : "ok";
}
