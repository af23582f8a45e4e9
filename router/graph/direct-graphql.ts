/**
 * `/graphql` operations one in-process subgraph owns whole, run on it without the query plan's
 * executor (ADR 0030; docs/architecture.md §1.2). The seam is the gateway's executor, below every
 * Yoga and gateway hook: parsing, validation against the API schema, persisted documents, token
 * and depth limits, page size and cost, the deadline, registry codes, the status rules, metrics
 * and the request report all run as for any operation, and see the same result.
 *
 * Which operations: those whose plan, as the Rust planner made it for the gateway's own first run
 * of that document (read with the runtime's `useQueryPlan`), is one Fetch to an in-process
 * subgraph with no `requires` and no rewrites, whose fetch document is the client's operation
 * field for field (no fragments, no directives the planner evaluates, nothing it added or
 * dropped), so the runtime's projection of the answer would be the identity. Everything else —
 * a document's first run, introspection, subscriptions, variables that do not coerce, joins,
 * entity fetches — keeps the gateway's executor.
 *
 * What the runtime does around that one fetch is done here the same way: the variables coerced
 * against the supergraph and only the fetch's passed on, the subgraph's internal headers
 * (router/plugins/useInternalContext.ts) and caller report (router/plugins/useRequestReport.ts),
 * the result as the in-process transport and the runtime shape it (no subgraph extensions, errors
 * without locations, an error with no path given the fetch's first root field, no `data` when the
 * subgraph answered none).
 */
import {
  getOperationAST,
  getVariableValues,
  GraphQLError,
  Kind,
  parse,
  print,
  type DocumentNode,
  type FormattedExecutionResult,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from "graphql";
import { useQueryPlan, type unifiedGraphHandler } from "@graphql-hive/router-runtime";
import { internalHeadersOf } from "../plugins/useInternalContext.ts";
import type { LocalSubgraph } from "../../subgraphs/shared/contract.ts";
import type { RequestReports } from "../request-report.ts";

type HandlerOptions = Parameters<typeof unifiedGraphHandler>[0];
type Handler = Awaited<ReturnType<typeof unifiedGraphHandler>>;
type Executor = NonNullable<Handler["executor"]>;
type ExecutionRequest = Parameters<Executor>[0];

/** The part of a plan's root node this reads (@graphql-hive/router-query-planner `FetchNode`). */
interface PlanNode {
  kind: string;
  serviceName?: string;
  variableUsages?: string[];
  operation?: string;
  requires?: unknown[];
  inputRewrites?: unknown[];
  outputRewrites?: unknown[];
}

/** An operation run directly: the subgraph, and the fetch the planner made for it. */
interface Owned {
  subgraph: string;
  local: LocalSubgraph;
  operation: OperationDefinitionNode;
  fetch: DocumentNode;
  text: string;
  variableUsages: readonly string[];
  /** The runtime's path for an error without one: the fetch's first root field. */
  errorPath: readonly string[];
}

/** Switch and count of the direct path (router/server.ts; tests turn it off to compare). */
export interface DirectGraphql {
  /** Off: every operation goes through the gateway's executor. */
  enabled: boolean;
}

/** Whether the operation's selections use fragments, or a root field is an introspection one. */
function hasFragmentsOrIntrospection(document: DocumentNode, operation: OperationDefinitionNode): boolean {
  if (document.definitions.some((definition) => definition.kind === Kind.FRAGMENT_DEFINITION)) return true;
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind === Kind.FIELD && selection.name.value.startsWith("__")) return true;
  }
  const walk = (set: SelectionSetNode): boolean =>
    set.selections.some((selection) => selection.kind !== Kind.FIELD || (selection.selectionSet !== undefined && walk(selection.selectionSet)));
  return walk(operation.selectionSet);
}

/**
 * Whether two selection sets select the same fields, in the same order, with the same aliases,
 * arguments and directives (printed), so that the answer to one is the answer to the other.
 */
function sameSelections(a: SelectionSetNode | undefined, b: SelectionSetNode | undefined): boolean {
  if (!a || !b) return a === b;
  if (a.selections.length !== b.selections.length) return false;
  return a.selections.every((left, index) => {
    const right = b.selections[index]!;
    if (left.kind !== Kind.FIELD || right.kind !== Kind.FIELD) return false;
    if (left.name.value !== right.name.value || left.alias?.value !== right.alias?.value) return false;
    if (print({ ...left, selectionSet: undefined }) !== print({ ...right, selectionSet: undefined })) return false;
    return sameSelections(left.selectionSet, right.selectionSet);
  });
}

/** The variable definitions of an operation, printed (names, types, defaults, directives). */
function variablesText(operation: OperationDefinitionNode): string {
  return (operation.variableDefinitions ?? []).map((definition) => print(definition)).join(",");
}

/** The fetch's first root field, as the runtime's `getDefaultErrorPath` takes it. */
function firstRootField(operation: OperationDefinitionNode): string[] {
  const field = operation.selectionSet.selections.find((selection) => selection.kind === Kind.FIELD);
  return field?.kind === Kind.FIELD ? [field.alias?.value ?? field.name.value] : [];
}

/**
 * Decides whether a planned operation is owned whole by one in-process subgraph (see the file comment).
 * @returns the direct run's facts, or null: the gateway's executor
 */
function ownedBy(document: DocumentNode, operation: OperationDefinitionNode, node: PlanNode | undefined, local: Record<string, LocalSubgraph>): Owned | null {
  if (node?.kind !== "Fetch" || !node.serviceName || !node.operation) return null;
  const subgraph = local[node.serviceName];
  if (!subgraph || node.requires?.length || node.inputRewrites?.length || node.outputRewrites?.length) return null;
  if (hasFragmentsOrIntrospection(document, operation) || operation.directives?.length) return null;
  const fetch = parse(node.operation, { noLocation: true });
  const planned = getOperationAST(fetch);
  if (!planned || fetch.definitions.length !== 1 || planned.operation !== operation.operation || planned.directives?.length) return null;
  if (variablesText(planned) !== variablesText(operation) || !sameSelections(planned.selectionSet, operation.selectionSet)) return null;
  return {
    subgraph: node.serviceName,
    local: subgraph,
    operation,
    fetch,
    text: print(fetch),
    variableUsages: node.variableUsages ?? [],
    errorPath: firstRootField(planned),
  };
}

/** The fetch's variables, as the runtime's `selectFetchVariables` picks them. */
function fetchVariables(values: Record<string, unknown> | undefined, usages: readonly string[]): Record<string, unknown> | undefined {
  if (!values || usages.length === 0) return undefined;
  const selected: Record<string, unknown> = Object.create(null);
  let any = false;
  for (const name of usages) {
    if (Object.hasOwn(values, name)) {
      selected[name] = values[name];
      any = true;
    }
  }
  return any ? selected : undefined;
}

/** The runtime's answer to one root fetch's result (executeFetchPlanNode, projection the identity). */
function asPlanResult(result: FormattedExecutionResult, errorPath: readonly string[]): { data?: unknown; errors?: GraphQLError[] } {
  const answer: { data?: unknown; errors?: GraphQLError[] } = {};
  if (result.data && Object.keys(result.data).length > 0) answer.data = result.data;
  if (result.errors?.length) {
    answer.errors = result.errors.map((formatted) => {
      // As the in-process transport makes it (no locations), then relocated as the runtime does.
      const error = new GraphQLError(formatted.message, { path: formatted.path, extensions: formatted.extensions });
      return error.path ? error : new GraphQLError(error.message, { path: errorPath, originalError: error, extensions: error.extensions });
    });
  }
  return answer;
}

/** The runtime's error for a subgraph call that threw (handleSubgraphExecutionError). */
function thrownAsResult(error: unknown, owned: Owned): { errors: GraphQLError[] } {
  if (error instanceof GraphQLError) return { errors: [error] };
  const cause = error instanceof Error ? error : new Error(String(error));
  return {
    errors: [
      new GraphQLError(cause.message, {
        originalError: cause,
        path: owned.errorPath,
        extensions: { code: "DOWNSTREAM_SERVICE_ERROR", serviceName: owned.subgraph },
      }),
    ],
  };
}

/**
 * Wraps the Rust planner's unified graph handler so that owned operations skip the plan's
 * executor (see the file comment).
 * @param options the in-process subgraphs, the router's request reports, the switch, and a
 *   counter called with the subgraph's name for each operation run directly
 * @returns a `unifiedGraphHandler` for createGatewayRuntime
 */
export function directFirst(
  handler: typeof unifiedGraphHandler,
  options: { localSubgraphs: Record<string, LocalSubgraph>; reports: RequestReports; direct: DirectGraphql; onDirect(subgraph: string): void },
): (opts: HandlerOptions) => Promise<Handler> {
  return async (opts) => {
    const inner = await handler(opts);
    const base = inner.executor;
    if (!base || Object.keys(options.localSubgraphs).length === 0) return inner;
    const supergraph = inner.unifiedGraph;
    // Per document and operation name: undefined not planned yet, null the gateway's, else direct.
    const decided = new WeakMap<DocumentNode, Map<string, Owned | null>>();
    // The plan of the gateway's run just finished, as the runtime's own plugin reads it.
    let lastPlan: { node?: PlanNode } | undefined;
    const planReader = useQueryPlan({ onQueryPlan: (plan) => (lastPlan = plan as { node?: PlanNode }) });
    const readPlan = (request: ExecutionRequest): { node?: PlanNode } | undefined => {
      lastPlan = undefined;
      const hooks = planReader.onExecute?.({ context: request.context, args: { document: request.document } } as never) as
        | { onExecuteDone?(payload: unknown): void }
        | undefined;
      hooks?.onExecuteDone?.({ result: {}, setResult() {} });
      return lastPlan;
    };
    const learn = (request: ExecutionRequest, byName: Map<string, Owned | null>, name: string) => {
      const operation = getOperationAST(request.document, request.operationName);
      if (!operation || operation.operation === "subscription") {
        byName.set(name, null);
        return base(request);
      }
      const result = base(request);
      const decide = () => {
        if (!byName.has(name)) byName.set(name, ownedBy(request.document, operation, readPlan(request)?.node, options.localSubgraphs));
      };
      if (result && typeof (result as PromiseLike<unknown>).then === "function") (result as Promise<unknown>).then(decide, () => undefined);
      else decide();
      return result;
    };
    const run = (owned: Owned, request: ExecutionRequest, variables: Record<string, unknown> | undefined) => {
      const headers = internalHeadersOf(request.context);
      const countId = headers["x-switchyard-count-id"];
      options.onDirect(owned.subgraph);
      return owned.local
        .execute({
          query: owned.text,
          document: owned.fetch,
          variables: fetchVariables(variables, owned.variableUsages),
          headers,
          requestScope: typeof request.context === "object" && request.context !== null ? request.context : undefined,
          // The read-only rule of ADR 0031: a query may take the totals read with the key.
          operationType: owned.operation.operation,
        })
        .then(
          (result) => asPlanResult(options.reports.takeCallerReport(countId, result), owned.errorPath),
          (error: unknown) => thrownAsResult(error, owned),
        );
    };
    const executor = ((request: ExecutionRequest) => {
      if (!options.direct.enabled) return base(request);
      let byName = decided.get(request.document);
      if (!byName) {
        byName = new Map();
        decided.set(request.document, byName);
      }
      const name = request.operationName ?? "";
      const owned = byName.get(name);
      if (owned === undefined) return learn(request, byName, name);
      if (owned === null) return base(request);
      let variables = request.variables as Record<string, unknown> | undefined;
      if (owned.operation.variableDefinitions?.length) {
        const coerced = getVariableValues(supergraph, owned.operation.variableDefinitions, variables ?? {});
        // The runtime throws these; its executor words them.
        if (coerced.errors) return base(request);
        variables = coerced.coerced;
      }
      return run(owned, request, variables);
    }) as Executor;
    return { ...inner, executor };
  };
}
