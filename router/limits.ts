/**
 * Safety limits of the router's `/graphql` (issue 4 item 6; docs/architecture.md §1, §4): what a dashboard or a
 * REST shim sends stays far below every limit, and anything past one is refused at the router,
 * before a subgraph sees it, with a GraphQL error carrying `extensions.code` and
 * `extensions.http.status`: a code of the error registry (src/errors.ts) with its status.
 *
 * | limit | value | enforced by | code (HTTP status) |
 * |---|---|---|---|
 * | depth | 12 | GraphQL Armor max-depth (validation) | `query_too_deep` (400) |
 * | aliases | 30 | GraphQL Armor max-aliases (validation) | `too_many_aliases` (400) |
 * | directives | 20 | GraphQL Armor max-directives (validation) | `too_many_directives` (400) |
 * | tokens | 2000 | GraphQL Armor max-tokens (parser) | `too_many_tokens` (400) |
 * | cost | 5000 | {@link operationLimits}: graphql-query-complexity with the request's variables (router/cost.ts), before execution | `query_too_costly` (400) |
 * | `first`/`last` | 1-100 (src/pagination.ts, the one page-size rule) | {@link operationLimits} (before execution; literals and variables) | `page_size_too_large` above, `invalid_request` below 1 (400) |
 * | request time | REQUEST_TIMEOUT_MS (30000) | {@link requestDeadline} (a timer per request) | `request_timeout` (504) |
 * | body size | BODY_LIMIT_BYTES (1 MiB) | {@link limitGraphqlBody} | `payload_too_large` (413) |
 * | nesting the parser cannot recurse through | the stack (~2000 nested lists) | {@link deepDocumentIs400} | `query_too_deep` (400) |
 * | introspection | off in production | the gateway's `disableIntrospection` | graphql-js message (400) |
 * | field suggestions | off in production | GraphQL Armor block-field-suggestions, {@link hideSuggestions} | — |
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
 * of the depth limit, 14% of the cost limit. The issue's dashboard (viewer with `tasks(first:
 * 100)` and `orders(first: 100)`, product, vendor, resource, customer) measures 74 tokens, depth 6
 * and cost 1103 (22%); two nested pages of 100 (`products(first: 100) { nodes { vendor {
 * products(first: 100) { nodes { id } } } } }`, 10,000 rows) cost 20300, four times the limit, and
 * the issue's aliased products → vendor → products → vendor → products about 20 million.
 *
 * Longer than 400 lines on purpose: the table above is the truth about every limit, and each row's
 * enforcement sits below it in this file; split, the limits and their constants would import each
 * other.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { bodyReadError, readBodyBytes } from "./http/body.ts";
import { sendGraphqlError } from "./http/graphql-error.ts";
import { AppError, ERROR_CODES, graphqlExtensions, type ErrorCode } from "../src/errors.ts";
import { MAX_PAGE_SIZE, pageSizeError } from "../src/pagination.ts";
import {
  BREAK,
  GraphQLError,
  Kind,
  visit,
  type ASTNode,
  type DocumentNode,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from "graphql";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDirectivesRule } from "@escape.tech/graphql-armor-max-directives";
import { maxTokensPlugin } from "@escape.tech/graphql-armor-max-tokens";
import { blockFieldSuggestionsPlugin } from "@escape.tech/graphql-armor-block-field-suggestions";
import { MAX_COST_NODES, operationCost } from "./cost.ts";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

/** The limits (see the table above). */
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
 * router/websocket.ts's `useServer` options: `connectionInitWaitTimeout: GRAPHQL_WS_INIT_TIMEOUT_MS`.
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
 * Armor's options for one validation rule: report a coded error through the validation context
 * instead of Armor's uncoded throw.
 */
function reportAs(code: ErrorCode) {
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

/** The Armor validation rules with our limits and codes (the cost is checked by {@link operationLimits}). */
export function armorRules(): ValidationRule[] {
  return [
    maxDepthRule({ n: LIMITS.depth, ...reportAs(LIMIT_CODES.depth) }),
    maxAliasesRule({ n: LIMITS.aliases, ...reportAs(LIMIT_CODES.aliases) }),
    maxDirectivesRule({ n: LIMITS.directives, ...reportAs(LIMIT_CODES.directives) }),
  ] as ValidationRule[];
}

/** Armor's token limit: the parser throws the coded error at the first token past the limit. */
const tokenOptions = { n: LIMITS.tokens, ...reportAs(LIMIT_CODES.tokens) };

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
 * {@link operationLimits} and the owned operations the router runs without it
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

/** What {@link operationLimits} reads of an operation: the arguments of execute and subscribe alike. */
interface OperationArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null;
  variableValues?: Record<string, unknown> | null;
}

/**
 * {@link operationLimitErrors}, checked just before the gateway plans the operation: queries,
 * mutations and subscriptions alike, over every transport (POST and GET `/graphql`, SSE,
 * graphql-ws, the REST shims). Not a validation rule: the gateway caches validation per
 * document, and a variable's value is not part of the document.
 */
const operationLimits: GatewayPlugin = { onExecute: refuseOverLimits, onSubscribe: refuseOverLimits };

/** The hook of {@link operationLimits}: answers the limits' errors instead of running the operation. */
function refuseOverLimits({ args, setResultAndStopExecution }: { args: OperationArgs; setResultAndStopExecution(result: ExecutionResult): void }) {
  const errors = operationLimitErrors(args.schema, args.document, args.operationName, args.variableValues);
  if (errors.length) setResultAndStopExecution({ errors });
}

/**
 * The request deadline: the gateway's `requestDeadline` option is this same plugin of
 * @whatwg-node/server, answering a plain-text 503; ours answers a GraphQL error, 504.
 * The timer covers a request until the gateway has its response (for SSE: until the stream
 * starts), so a live subscription is not cut; graphql-ws operations do not pass here.
 */
export function requestDeadline(timeoutMs: number): GatewayPlugin {
  const timedOut = () => graphqlErrorResponse(LIMIT_CODES.timeout, `Request timed out after ${timeoutMs} ms`, { connection: "close" });
  // @whatwg-node/server's useRequestDeadline also builds an AbortController and an
  // AbortSignal.any over the request's signal for every request; nothing in this gateway listens
  // to that signal (no upstream or execution cancellation), so only the timer is kept.
  return {
    onRequest({ requestHandler, setRequestHandler }) {
      setRequestHandler(
        (request, context) =>
          new Promise<Response>((resolve, reject) => {
            const timer = setTimeout(() => resolve(timedOut()), timeoutMs);
            const fail = (error: unknown) => {
              clearTimeout(timer);
              reject(error);
            };
            try {
              Promise.resolve(requestHandler(request, context)).then((response) => {
                clearTimeout(timer);
                resolve(response);
              }, fail);
            } catch (error) {
              fail(error);
            }
          }),
      );
    },
  } as GatewayPlugin;
}

/** A JSON GraphQL error response (fetch API) with the registry code's status. */
function graphqlErrorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}): Response {
  const status = ERROR_CODES[code].status;
  return new Response(JSON.stringify({ errors: [{ message, extensions: graphqlExtensions(code) }] }), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/** The text that replaces a suggestion (Armor's own mask). */
const SUGGESTION_MASK = "[Suggestion hidden]";

/** Masks every "Did you mean ...?" in the messages of a list of errors (mutating, as Armor does). */
function maskSuggestions<T>(errors: readonly T[]): T[] {
  return errors.map((error) => {
    const e = error as unknown as { message?: unknown } | null;
    if (e && typeof e.message === "string" && e.message.includes("Did you mean")) {
      e.message = e.message.replace(/Did you mean [^?]*\?/g, SUGGESTION_MASK).trim();
    }
    return error;
  });
}

/** An execution result with its errors' suggestions masked (streams are left alone). */
function withoutSuggestions<T extends ExecutionResult | AsyncIterable<ExecutionResult>>(result: T): T {
  if (!result || typeof result !== "object" || Symbol.asyncIterator in result || !result.errors?.length) return result;
  return { ...result, errors: maskSuggestions(result.errors) };
}

/**
 * Field suggestions off: Armor's block-field-suggestions masks "Did you mean "x"?" in validation
 * errors; this covers what its pattern misses — enum values ("Did you mean the enum value ...?")
 * in literals and in variables, whose coercion errors come from execution, not validation.
 */
export const hideSuggestions: GatewayPlugin = {
  onValidate:
    () =>
    ({ valid, result, setResult }) => {
      if (!valid) setResult(maskSuggestions(result));
    },
  onExecute: () => ({
    onExecuteDone: ({ result, setResult }) => setResult(withoutSuggestions(result)),
  }),
  onSubscribe: () => ({
    onSubscribeResult: ({ result, setResult }) => setResult(withoutSuggestions(result)),
  }),
};

/**
 * GraphQL over HTTP: `variables` or `extensions` that are not JSON, in a GET query string or a
 * form-encoded body, are the client's error. Yoga's parsers let JSON.parse's SyntaxError through
 * as a 500; this wraps whichever parser Yoga chose (user plugins run after its parsers) and
 * answers 400 `invalid_request`, as Yoga does (`BAD_REQUEST`, translated by {@link registryCodes})
 * for such a parameter that is JSON but not an object.
 */
export const paramsJsonErrorsAre400: GatewayPlugin = {
  onRequestParse({ requestParser, setRequestParser }) {
    if (!requestParser) return;
    setRequestParser(async (request) => {
      try {
        return await requestParser(request);
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        throw limitError(`variables and extensions must be valid JSON: ${error.message}`, "invalid_request");
      }
    });
  },
};

/**
 * A document nested so deeply (lists in lists in an argument) that graphql-js's recursive parser
 * overflows the stack before the token limit stops it: a 400 `query_too_deep`, not a 500. Wraps
 * the parser in place (after Armor's token-counting one).
 */
export const deepDocumentIs400: GatewayPlugin = {
  onParse({ parseFn, setParseFn }) {
    setParseFn((source, options) => {
      try {
        return parseFn(source, options);
      } catch (error) {
        if (error instanceof RangeError) throw limitError("Document is nested too deeply to parse", LIMIT_CODES.depth);
        throw error;
      }
    });
  },
};

/** Options of {@link limitPlugins}. */
export interface LimitOptions {
  production: boolean;
  /** Time limit of one `/graphql` HTTP request, in milliseconds; 0 or unset: none. */
  requestTimeoutMs?: number;
}

/**
 * The gateway plugins of every limit: Armor (tokens, depth, aliases, directives), the page size
 * cap, the cost limit, the request deadline and, in production, Armor's field-suggestion blocker.
 */
export function limitPlugins(options: LimitOptions): GatewayPlugin[] {
  const rules = armorRules();
  const plugins: GatewayPlugin[] = [
    paramsJsonErrorsAre400,
    maxTokensPlugin(tokenOptions) as GatewayPlugin,
    deepDocumentIs400,
    {
      onValidate: ({ addValidationRule }) => {
        for (const rule of rules) addValidationRule(rule);
      },
    },
    operationLimits,
  ];
  if (options.requestTimeoutMs) plugins.push(requestDeadline(options.requestTimeoutMs));
  if (options.production) plugins.push(blockFieldSuggestionsPlugin({ mask: SUGGESTION_MASK }) as GatewayPlugin, hideSuggestions);
  return plugins;
}

/**
 * Options for createGatewayRuntime: introspection off in production (the gateway's own
 * `disableIntrospection`), plus {@link limitPlugins}.
 */
export function gatewayLimitOptions(options: LimitOptions) {
  return {
    disableIntrospection: options.production ? {} : undefined,
    plugins: limitPlugins(options),
  };
}

/**
 * The body size limit of `POST /graphql`: 413 with a JSON GraphQL error as soon as the declared
 * `content-length` or the bytes received pass `limit`, before the body is read whole. Within the
 * limit the body is handed to the gateway already read (as `req.body`, which its Node adapter
 * takes as the request body).
 * Authentication comes first (router/http/body.ts `bodyReadError`): without an `Authorization` header an
 * oversized body is refused 401 `unauthorized`.
 * @returns true when the request may go on to the gateway; false when the 413 (or 401) was sent
 */
export function limitGraphqlBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<boolean> {
  if (req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS") return Promise.resolve(true);
  const tooLarge = (refusal: AppError) => {
    const message = refusal.code === LIMIT_CODES.bodySize ? `Request body is too large: the limit is ${limit} bytes` : refusal.message;
    sendGraphqlError(res, refusal.code, message, { connection: "close" });
    // Discard (not keep) what the client still sends, so it reads the answer; the socket closes after it.
    req.resume();
  };
  return readBodyBytes(req, limit).then(
    (body) => {
      (req as IncomingMessage & { body?: Buffer }).body = body;
      return true;
    },
    (error: unknown) => {
      if (!(error instanceof AppError && error.code === "payload_too_large")) throw error;
      tooLarge(bodyReadError(req, error));
      return false;
    },
  );
}
