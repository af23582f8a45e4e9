/**
 * Registry codes on every `/graphql` answer (docs/architecture.md §4.3): the libraries under the
 * router spell their codes in upper case (GraphQL Yoga's `GRAPHQL_PARSE_FAILED`,
 * `GRAPHQL_VALIDATION_FAILED`, `BAD_REQUEST`, `OPERATION_RESOLUTION_FAILURE`) or give none (a
 * variable that does not coerce, a parse error over graphql-ws). This gateway plugin gives each
 * error its registry code (src/errors.ts `registryCodeOf`) before it leaves, over POST and GET
 * `/graphql`, SSE and graphql-ws alike; an error that carries no `extensions.http.status` gets its
 * code's. Its `extensions` are rebuilt from the registry's allow-list (src/errors.ts
 * `publicDetails`): whatever else a library put there (the gateway's `serviceName`, the HTTP
 * transport's `request` with the internal body, headers and signature, its `response`) stays
 * inside. A gateway failure answered as `service_unavailable` is logged at warn with the request
 * id, never with the request it sent.
 *
 * The one exception to lower-case codes: the persisted-query protocol's answers keep its spelling,
 * `PERSISTED_QUERY_NOT_FOUND` (message `PersistedQueryNotFound`) and `PERSISTED_QUERY_NOT_SUPPORTED`,
 * the form Apollo Client's and urql's persisted-query links recognise (src/errors.ts `graphql`
 * column; router/plugins/usePersistedQueries.ts; ADR 0020).
 */
import { GraphQLError } from "graphql";
import type { Logger } from "pino";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { ERROR_CODES, publicDetails, registryCodeOf, type ErrorCode } from "../src/errors.ts";

type Extensions = { code?: unknown; http?: { status?: unknown } & Record<string, unknown> } & Record<string, unknown>;

/** Told of each error whose own words were hidden (a gateway or subgraph failure), before they are. */
type HiddenErrorReport = (error: { message?: unknown; path?: unknown; extensions: Extensions }) => void;

/**
 * Gives one error (a GraphQLError or its JSON form) its registry code and only the registry's
 * details, in place, as GraphQL Yoga marks its own errors.
 * @param absent the code for an error without one (what the hook that found it knows it to be)
 * @param hidden told of an error whose message is replaced by the registry's ({@link hidesOwnMessage})
 */
export function toRegistryCode<T>(error: T, absent?: ErrorCode, hidden?: HiddenErrorReport): T {
  if (!error || typeof error !== "object") return error;
  const extensions = ((error as { extensions?: Extensions }).extensions ?? {}) as Extensions;
  const status = typeof extensions.http?.status === "number" ? extensions.http.status : undefined;
  const code = extensions.code === undefined && absent ? absent : registryCodeOf(extensions.code, status);
  const http: Record<string, unknown> = { status: status ?? ERROR_CODES[code].status };
  // GraphQL Yoga's own marks, read (and set by its later hooks) when it builds the HTTP response:
  // `spec` (the status follows the Accept header), `headers` (`Allow` on a 405). Defined not
  // enumerable, so no answer shows them (graphql-ws writes `extensions` whole). A body that is not
  // JSON stays 400 whatever the Accept: Yoga tells it by `extensions.originalError` (which quotes
  // the body, so it does not leave), here by `spec: false`.
  const original = extensions.originalError as { name?: unknown } | undefined;
  const spec = original && original.name !== "GraphQLError" ? false : extensions.http?.spec;
  for (const [name, value] of [
    ["spec", spec],
    ["headers", extensions.http?.headers],
  ] as const) {
    Object.defineProperty(http, name, { value, writable: true, configurable: true, enumerable: false });
  }
  // The code's `graphql` spelling: the key, or the persisted-query protocol's upper case (ADR 0020).
  const value = { ...publicDetails(code, extensions), code: ERROR_CODES[code].graphql, http };
  if (hidesOwnMessage(code, extensions.code)) {
    hidden?.({ message: (error as { message?: unknown }).message, path: (error as { path?: unknown }).path, extensions });
    (error as { message?: string }).message = ERROR_CODES[code].message;
  }
  Object.defineProperty(error, "extensions", { value, enumerable: true, writable: true, configurable: true });
  return error;
}

/**
 * Whether an error's own message is replaced by the registry's: a 5xx without a registry code is
 * the gateway failing to use a subgraph, and its own words can hold a subgraph's address or a
 * proxy's HTML page. The one rule for `/graphql` ({@link toRegistryCode}) and the REST shims
 * (router/graph/client.ts `toShimError`).
 * @param code the registry code the error was given
 * @param found the `extensions.code` it arrived with
 */
export function hidesOwnMessage(code: ErrorCode, found: unknown): boolean {
  return code === "service_unavailable" && found !== code;
}

/** An execution result with registry codes: an error without a code or path is a variable's (coercion). */
function resultWithRegistryCodes<T>(result: T, hidden?: HiddenErrorReport): T {
  const errors = (result as { errors?: unknown } | null)?.errors;
  if (Array.isArray(errors)) for (const error of errors) toRegistryCode(error, (error as GraphQLError).path ? undefined : "bad_user_input", hidden);
  return result;
}

const isStream = (value: unknown) => !!value && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";

/** What the hooks read of an operation's context: the HTTP request (POST, GET, SSE, the REST shims) or graphql-ws's internal headers. */
type OperationContext =
  | { request?: { headers?: { get?(name: string): string | null } }; internalHeaders?: Record<string, string | undefined> }
  | null
  | undefined;

/** The router's request id of an operation (router/server.ts sets it; router/websocket.ts mints one per graphql-ws operation). */
function requestIdOf(context: OperationContext): string | undefined {
  return context?.request?.headers?.get?.("x-request-id") ?? context?.internalHeaders?.["x-request-id"] ?? undefined;
}

/** Longest piece of a hidden error's own message that is logged. */
const LOGGED_MESSAGE_CHARS = 300;

/**
 * The plugin: parse, validation, execution and subscription results, then every HTTP result.
 * @param logger where hidden failures are logged (warn): request id, subgraph, the library's code,
 *   the subgraph's HTTP status and the start of the message; never the request the gateway sent
 *   (its body holds the caller's key and the signature)
 */
export function registryCodes(logger: Pick<Logger, "warn">): GatewayPlugin {
  const reporter =
    (requestId: string | undefined): HiddenErrorReport =>
    ({ message, path, extensions }) => {
      const response = extensions.response as { status?: unknown } | undefined;
      logger.warn(
        {
          request_id: requestId,
          subgraph: typeof extensions.serviceName === "string" ? extensions.serviceName : undefined,
          code: typeof extensions.code === "string" ? extensions.code : undefined,
          upstream_status: typeof response?.status === "number" ? response.status : undefined,
          path: Array.isArray(path) ? path.join(".") : undefined,
          reason: String(message ?? "").slice(0, LOGGED_MESSAGE_CHARS),
        },
        "gateway error answered as service_unavailable",
      );
    };
  const results = (context: OperationContext) => {
    const hidden = reporter(requestIdOf(context));
    return ({ result }: { result: unknown }) => {
      if (!isStream(result)) return void resultWithRegistryCodes(result, hidden);
      return { onNext: ({ result: next }: { result: unknown }) => void resultWithRegistryCodes(next, hidden) };
    };
  };
  return {
    onParse:
      () =>
      ({ result }) => {
        if (result instanceof GraphQLError) toRegistryCode(result, "graphql_parse_failed");
      },
    onValidate:
      () =>
      ({ valid, result }) => {
        if (!valid) for (const error of result) toRegistryCode(error, "graphql_validation_failed");
      },
    onExecute: ({ args }) => ({ onExecuteDone: results(args.contextValue as OperationContext) }),
    onSubscribe: ({ args }) => ({ onSubscribeResult: results(args.contextValue as OperationContext) }),
    onResultProcess: ({ request, result }) => {
      const hidden = reporter(request.headers.get("x-request-id") ?? undefined);
      for (const one of Array.isArray(result) ? result : [result]) if (!isStream(one)) resultWithRegistryCodes(one, hidden);
    },
  } as GatewayPlugin;
}
