/**
 * Safety limits of the router's `/graphql` (issue 4 item 6; docs/architecture.md §1, §4): what a dashboard or a
 * REST shim sends stays far below every limit, and anything past one is refused at the router,
 * before a subgraph sees it, with a GraphQL error carrying `extensions.code` and
 * `extensions.http.status`: a code of the error registry (src/errors.ts) with its status.
 *
 * | limit | value | enforced by | code (HTTP status) |
 * |---|---|---|---|
 * | depth | 12 | GraphQL Armor max-depth (validation), router/plugins/useValidationLimits.ts | `query_too_deep` (400) |
 * | aliases | 30 | GraphQL Armor max-aliases (validation), router/plugins/useValidationLimits.ts | `too_many_aliases` (400) |
 * | directives | 20 | GraphQL Armor max-directives (validation), router/plugins/useValidationLimits.ts | `too_many_directives` (400) |
 * | tokens | 2000 | GraphQL Armor max-tokens (parser), router/plugins/useTokenLimit.ts | `too_many_tokens` (400) |
 * | cost | 5000 | router/plugins/useOperationLimits.ts ({@link operationLimitErrors}): graphql-query-complexity with the request's variables (router/cost.ts), before execution | `query_too_costly` (400) |
 * | `first`/`last` | 1-100 (src/pagination.ts, the one page-size rule) | router/plugins/useOperationLimits.ts (before execution; literals and variables) | `page_size_too_large` above, `invalid_request` below 1 (400) |
 * | request time | REQUEST_TIMEOUT_MS (30000) | router/plugins/useRequestDeadline.ts (a timer per request) | `request_timeout` (504) |
 * | body size | BODY_LIMIT_BYTES (1 MiB) | router/http/body.ts `limitGraphqlBody` | `payload_too_large` (413) |
 * | nesting the parser cannot recurse through | the stack (~2000 nested lists) | router/plugins/useDeepDocumentIs400.ts | `query_too_deep` (400) |
 * | introspection | off in production | the gateway's `disableIntrospection` (router/graph/gateway.ts) | graphql-js message (400) |
 * | field suggestions | off in production | GraphQL Armor block-field-suggestions, router/plugins/useHiddenSuggestions.ts | — |
 *
 * The body always carries `extensions.http.status`; the response status follows GraphQL over
 * HTTP: 400 for a client accepting `application/graphql-response+json`, while a client accepting
 * only `application/json` gets 200 for errors found in parsing or validation (tokens, depth,
 * aliases, directives, introspection) and 400 for the page size and the cost, checked after
 * validation with the request's variables.
 *
 * The cost (router/cost.ts) is about the number of objects an answer can hold: an object field
 * costs 1, a scalar 0, and a field with `first`/`last` multiplies its selection by that page size
 * (literal or variable; 20 when absent). Measured with bench/measure.ts `measureOperation` (pinned by
 * test/integration/router-limits.test.ts), the operations the router itself sends — the REST
 * shims' OPERATIONS and CLOUD_OPERATIONS, /health's `RestModels` — with every page at 100 peak at
 * 91 tokens (`RestTransactions`), depth 5 (`RestUsage`, `RestProducts`), cost 703 (`RestUsage`:
 * 100 tasks and 100 request-log rows) and no alias or directive: under 5% of the token limit, 42%
 * of the depth limit, 14% of the cost limit. The dashboard (viewer with `tasks(first:
 * 100)` and `orders(first: 100)`, product, vendor, resource, customer) measures 74 tokens, depth 6
 * and cost 1103 (22%); two nested pages of 100 (`products(first: 100) { nodes { vendor {
 * products(first: 100) { nodes { id } } } } }`, 10,000 rows) cost 20300, four times the limit, and
 * the aliased products → vendor → products → vendor → products about 20 million.
 *
 * This file holds the table, the limits' values and the pure checks the plugins share (and
 * router/graph/direct.ts, which runs owned operations without the gateway); each limit's gateway
 * plugin is its own file in router/plugins/, and router/graph/gateway.ts `pipeline` orders them.
 */
import { graphqlExtensions, type ErrorCode } from "../src/errors.ts";
import { MAX_PAGE_SIZE, pageSizeError } from "../src/pagination.ts";
import {
  BREAK,
  GraphQLError,
  Kind,
  visit,
  type ASTNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from "graphql";
import { MAX_COST_NODES, operationCost } from "./cost.ts";

/** The limits (see the table above): counts, except `cost` (router/cost.ts's units) and `pageSize` (items). */
export const LIMITS = {
  depth: 12,
  aliases: 30,
  directives: 20,
  tokens: 2000,
  cost: 5_000,
  /** src/pagination.ts's {@link MAX_PAGE_SIZE}: the one page-size rule. */
  pageSize: MAX_PAGE_SIZE,
} as const;

/**
 * graphql-ws: how long a socket may stay open without `connection_init` before the server closes
 * it with 4408 (graphql-ws's own default, stated so the router and its tests agree). For
 * router/websocket.ts's graphql-ws server options: `connectionInitWaitTimeout: GRAPHQL_WS_INIT_TIMEOUT_MS`.
 */
export const GRAPHQL_WS_INIT_TIMEOUT_MS = 3_000;

/**
 * The most operations (subscriptions, in practice) one graphql-ws socket runs at once. Each costs
 * an upstream subscription and a pub/sub listener: without a cap one socket could hold thousands.
 * A client needing more opens another connection.
 */
export const GRAPHQL_WS_MAX_OPERATIONS = 100;

/** `extensions.code` of the error refusing a subscribe past {@link GRAPHQL_WS_MAX_OPERATIONS}. */
export const TOO_MANY_SUBSCRIPTIONS = "too_many_subscriptions" satisfies ErrorCode;

/**
 * graphql-ws: the largest WebSocket message the router takes, in bytes (BODY_LIMIT_BYTES's
 * default; `ws` would otherwise take up to 100 MiB). For router/websocket.ts's
 * `new WebSocketServer({ ..., maxPayload: GRAPHQL_WS_MAX_PAYLOAD_BYTES })`; a larger message
 * closes the socket with 1009 (message too big).
 */
export const GRAPHQL_WS_MAX_PAYLOAD_BYTES = 1_048_576;

/** The registry code (src/errors.ts) of each limit's error. */
export const LIMIT_CODES = {
  depth: "query_too_deep",
  aliases: "too_many_aliases",
  directives: "too_many_directives",
  tokens: "too_many_tokens",
  cost: "query_too_costly",
  pageSize: "page_size_too_large",
  timeout: "request_timeout",
  bodySize: "payload_too_large",
} as const satisfies Record<string, ErrorCode>;

/**
 * What the router answers past a limit: a GraphQL error with its registry code and that code's
 * HTTP status (src/errors.ts).
 * @param details further `extensions` (the limit, the measured value)
 */
export function limitError(message: string, code: ErrorCode, details: Record<string, unknown> = {}, nodes?: ASTNode | readonly ASTNode[]): GraphQLError {
  return new GraphQLError(message, { nodes, extensions: graphqlExtensions(code, details) });
}

/** Armor prefixes every message with "Syntax Error: " even for a valid but too deep query. */
const armorMessage = (error: GraphQLError) => error.message.replace(/^Syntax Error: /, "");

/**
 * GraphQL Armor's options for one of its limits: report a coded error (its registry code, {@link limitError})
 * through the validation context, or throw it from the parser, instead of Armor's uncoded error.
 * For router/plugins/useTokenLimit.ts and useValidationLimits.ts.
 * @param code the registry code of the limit ({@link LIMIT_CODES})
 * @returns the part of Armor's options besides the limit `n`
 */
export function armorRejection(code: ErrorCode) {
  return {
    exposeLimits: true,
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) => {
        const coded = limitError(armorMessage(error), code);
        if (context) context.reportError(coded);
        else throw coded;
      },
    ],
  };
}

/**
 * The fragments an operation uses, transitively, so only the selected operation is checked.
 */
function selectionSetsOf(document: DocumentNode, operation: OperationDefinitionNode): SelectionSetNode[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  const sets: SelectionSetNode[] = [];
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    sets.push(set);
    for (const selection of set.selections) {
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (fragment && !seen.has(fragment.name.value)) {
          seen.add(fragment.name.value);
          walk(fragment.selectionSet);
        }
      } else if (selection.selectionSet) walk(selection.selectionSet);
    }
  };
  walk(operation.selectionSet);
  return sets;
}

/** Whether each parsed document (reused per query text) has a `first` or `last` argument anywhere. */
const pageArguments = new WeakMap<DocumentNode, boolean>();

/** Whether a document has any `first`/`last` argument: most requests (a task read) have none to check. */
function hasPageArguments(document: DocumentNode): boolean {
  let found = pageArguments.get(document);
  if (found === undefined) {
    found = false;
    visit(document, {
      Argument(node) {
        if (node.name.value === "first" || node.name.value === "last") {
          found = true;
          return BREAK;
        }
      },
    });
    pageArguments.set(document, found);
  }
  return found;
}

/**
 * Finds `first`/`last` field arguments above the page-size limit in the operation that will run.
 * @param variables the request's variables as sent (a variable left out takes its default value)
 * @returns one error per offending argument (empty when all are within the limit)
 */
function pageSizeErrors(
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): GraphQLError[] {
  if (!hasPageArguments(document)) return [];
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const operation = operationName ? operations.find((o) => o.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
  if (!operation) return [];
  const defaults = new Map<string, unknown>();
  for (const definition of operation.variableDefinitions ?? []) {
    const value = definition.defaultValue;
    if (value?.kind === Kind.INT) defaults.set(definition.variable.name.value, Number(value.value));
  }
  const errors: GraphQLError[] = [];
  for (const set of selectionSetsOf(document, operation)) {
    for (const selection of set.selections) {
      if (selection.kind !== Kind.FIELD) continue;
      for (const argument of selection.arguments ?? []) {
        const name = argument.name.value;
        if (name !== "first" && name !== "last") continue;
        let value: unknown;
        if (argument.value.kind === Kind.INT) value = Number(argument.value.value);
        else if (argument.value.kind === Kind.VARIABLE) {
          const variable = argument.value.name.value;
          value = variables && variables[variable] !== undefined ? variables[variable] : defaults.get(variable);
        }
        // The one rule of src/pagination.ts; absent or null is the default size, and a value
        // that is no number is variable coercion's to refuse.
        const refusal = typeof value === "number" ? pageSizeError(value, name) : null;
        if (refusal) errors.push(limitError(refusal.message, refusal.code, { ...refusal.details, field: selection.name.value, argument: name }, argument));
      }
    }
  }
  return errors;
}

/**
 * The cost limit's error for an operation, or null when it is within {@link LIMITS.cost}.
 * @param variables the request's variables as sent
 */
function costError(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): GraphQLError | null {
  let cost: number | null;
  try {
    cost = operationCost(schema, document, operationName, variables);
  } catch (error) {
    if (!(error instanceof GraphQLError)) throw error;
    return limitError(`Query cost cannot be estimated: more than ${MAX_COST_NODES} selections to walk`, LIMIT_CODES.cost);
  }
  if (cost === null || cost <= LIMITS.cost) return null;
  return limitError(`Query cost limit of ${LIMITS.cost} exceeded, found ${cost}.`, LIMIT_CODES.cost, { cost, limit: LIMITS.cost });
}

/**
 * The page-size and cost limits of one operation, with the request's own variables: first
 * `first`/`last` within src/pagination.ts's rule (1 to {@link LIMITS.pageSize}), so a subgraph
 * never sees a larger page; then, only when the pages are within it (a page over 100 is refused
 * for that, not also for its cost), the cost (router/cost.ts). The gateway's
 * router/plugins/useOperationLimits.ts and the owned operations the router runs without it
 * (router/graph/direct.ts) both check through this.
 * @param variables the request's variables as sent
 * @returns the errors refusing the operation (empty when it is within both)
 */
export function operationLimitErrors(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): GraphQLError[] {
  const pages = pageSizeErrors(document, operationName, variables);
  if (pages.length) return pages;
  const cost = costError(schema, document, operationName, variables);
  return cost ? [cost] : [];
}
