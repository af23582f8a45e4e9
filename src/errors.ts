/**
 * The one error registry of the whole system (docs/architecture.md §4), in the style of fastify's
 * `lib/errors.js`: every code a client can see, with what each surface answers for it.
 *
 * | column | what it is |
 * |---|---|
 * | key | the stable code, lower snake case everywhere (the cloud spec's bodies use them verbatim) |
 * | `status` | the HTTP status: of the generation body `{code: <status>, message}`, of `/graphql` (`extensions.http.status`) and of graphql-ws errors |
 * | `message` | the default message; for the generation API's codes it is the spec's text (docs/api/generation.md §7) |
 * | `cloud` | the code of the cloud body (docs/api/cloud.md §7); the cloud answer's status is that code's own `status` (so `upstream_timeout` is 502 there) |
 * | `graphql` | `extensions.code` of a GraphQL error: the key, with one documented exception. The persisted-query protocol's two answers keep the protocol's upper-case spelling (`PERSISTED_QUERY_NOT_FOUND`, `PERSISTED_QUERY_NOT_SUPPORTED`), which Apollo Client and urql's persisted-query links and Apollo Server's other clients recognise (ADR 0020) |
 * | `details` | the detail keys an answer may carry for the code (`extensions.<key>` in GraphQL, `error.details.<key>` in the cloud body): an allow-list, everything else an error holds is dropped at every boundary ({@link publicDetails}) |
 *
 * Everything reads from it: {@link AppError} (domain code), the subgraphs' `formatError`, the router's
 * limits and its own refusals, both REST shims and both OpenAPI documents; the codes the libraries
 * below us spell in upper case (Apollo Server, GraphQL Yoga) are translated by {@link registryCodeOf}
 * before any answer leaves. test/integration/error-registry.test.ts walks the table over every surface.
 */
import { MODEL_IDS } from "./generation/catalog.ts";

/** One row of the registry. */
interface ErrorEntry<Code extends string, Cloud extends string> {
  status: number;
  message: string;
  cloud: Cloud;
  /** The key; upper case only for the persisted-query protocol's answers (see the table above). */
  graphql: Code | Uppercase<Code>;
  details: readonly string[];
}

/** Checks the table's shape: each `graphql` is its key, each `cloud` another key. */
function defineErrors<T extends { [Code in keyof T]: ErrorEntry<Code & string, keyof T & string> }>(table: T): Readonly<T> {
  return Object.freeze(table);
}

/** The registry. */
export const ERROR_CODES = defineErrors({
  // 400: the request is wrong.
  invalid_json: { status: 400, message: "Request body must be valid JSON", cloud: "invalid_request", graphql: "invalid_json", details: [] },
  invalid_request: {
    status: 400,
    message: "Invalid request",
    cloud: "invalid_request",
    graphql: "invalid_request",
    details: ["field", "limit", "argument", "max_code_points"],
  },
  graphql_parse_failed: {
    status: 400,
    message: "The GraphQL document cannot be parsed",
    cloud: "invalid_request",
    graphql: "graphql_parse_failed",
    details: [],
  },
  graphql_validation_failed: {
    status: 400,
    message: "The GraphQL document is not valid against the schema",
    cloud: "invalid_request",
    graphql: "graphql_validation_failed",
    details: [],
  },
  bad_user_input: { status: 400, message: "A variable or argument has an invalid value", cloud: "invalid_request", graphql: "bad_user_input", details: [] },
  operation_resolution_failure: {
    status: 400,
    message: "Could not determine what operation to execute",
    cloud: "invalid_request",
    graphql: "operation_resolution_failure",
    details: [],
  },
  // The persisted-query protocol's answers (router/plugins/usePersistedQueries.ts): clients
  // recognise them by Apollo's message or code, so both stay the protocol's (ADR 0020).
  persisted_query_not_found: { status: 400, message: "PersistedQueryNotFound", cloud: "invalid_request", graphql: "PERSISTED_QUERY_NOT_FOUND", details: [] },
  persisted_query_not_supported: {
    status: 400,
    message: "PersistedQueryNotSupported",
    cloud: "invalid_request",
    graphql: "PERSISTED_QUERY_NOT_SUPPORTED",
    details: [],
  },
  persisted_query_hash_mismatch: {
    status: 400,
    message: "The persisted query hash is not the SHA-256 of the document sent with it",
    cloud: "invalid_request",
    graphql: "persisted_query_hash_mismatch",
    details: [],
  },
  persisted_query_required: {
    status: 400,
    message: "Only trusted documents are accepted: send the id of a document in the router's manifest",
    cloud: "invalid_request",
    graphql: "persisted_query_required",
    details: [],
  },
  query_too_deep: { status: 400, message: "Query is too deep", cloud: "invalid_request", graphql: "query_too_deep", details: [] },
  too_many_aliases: { status: 400, message: "Too many aliases", cloud: "invalid_request", graphql: "too_many_aliases", details: [] },
  too_many_directives: { status: 400, message: "Too many directives", cloud: "invalid_request", graphql: "too_many_directives", details: [] },
  too_many_tokens: { status: 400, message: "Too many tokens", cloud: "invalid_request", graphql: "too_many_tokens", details: [] },
  query_too_costly: { status: 400, message: "Query is too costly", cloud: "invalid_request", graphql: "query_too_costly", details: ["cost", "limit"] },
  page_size_too_large: {
    status: 400,
    message: "Page size is too large",
    cloud: "invalid_request",
    graphql: "page_size_too_large",
    details: ["field", "limit", "argument"],
  },
  unauthorized: { status: 401, message: "Invalid or missing API key", cloud: "unauthorized", graphql: "unauthorized", details: [] },
  insufficient_balance: { status: 402, message: "Insufficient balance", cloud: "insufficient_balance", graphql: "insufficient_balance", details: [] },
  key_disabled: { status: 403, message: "API key is disabled", cloud: "forbidden", graphql: "key_disabled", details: [] },
  forbidden: { status: 403, message: "Forbidden", cloud: "forbidden", graphql: "forbidden", details: ["scope"] },
  not_found: { status: 404, message: "Not found", cloud: "not_found", graphql: "not_found", details: ["field", "path"] },
  task_not_found: { status: 404, message: "Task not found", cloud: "not_found", graphql: "task_not_found", details: [] },
  method_not_allowed: { status: 405, message: "Method not allowed", cloud: "method_not_allowed", graphql: "method_not_allowed", details: ["method"] },
  conflict: { status: 409, message: "Conflict", cloud: "conflict", graphql: "conflict", details: ["field", "order_id", "stock", "status", "export_status"] },
  payload_too_large: { status: 413, message: "Request body is too large", cloud: "payload_too_large", graphql: "payload_too_large", details: [] },
  unsupported_media_type: {
    status: 415,
    message: "Content-Type must be application/json",
    cloud: "unsupported_media_type",
    graphql: "unsupported_media_type",
    details: [],
  },
  validation_failed: { status: 422, message: "Validation failed", cloud: "validation_failed", graphql: "validation_failed", details: ["field"] },
  rate_limited: { status: 429, message: "Too many requests", cloud: "rate_limited", graphql: "rate_limited", details: ["retry_after_seconds"] },
  too_many_subscriptions: {
    status: 429,
    message: "Too many subscriptions on one connection",
    cloud: "rate_limited",
    graphql: "too_many_subscriptions",
    details: [],
  },
  internal: { status: 500, message: "Internal server error", cloud: "internal", graphql: "internal", details: [] },
  upstream_failed: { status: 502, message: "Upstream request failed", cloud: "upstream_error", graphql: "upstream_failed", details: [] },
  upstream_error: { status: 502, message: "Upstream vendor error", cloud: "upstream_error", graphql: "upstream_error", details: [] },
  service_unavailable: { status: 503, message: "Service unavailable", cloud: "service_unavailable", graphql: "service_unavailable", details: [] },
  upstream_timeout: { status: 504, message: "Upstream request timed out", cloud: "upstream_error", graphql: "upstream_timeout", details: [] },
  request_timeout: { status: 504, message: "Request timed out", cloud: "request_timeout", graphql: "request_timeout", details: ["limit"] },
});

/** A stable error code of {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** A code the cloud API answers (docs/api/cloud.md §7): the `cloud` column. */
export type CloudCode = (typeof ERROR_CODES)[ErrorCode]["cloud"];

/** Every cloud code, in registry order, once (the cloud OpenAPI document's enum). */
export const CLOUD_CODES: readonly CloudCode[] = Object.freeze([...new Set(Object.values(ERROR_CODES).map((entry) => entry.cloud))]);

/** True when `code` is a registry code. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERROR_CODES, code);
}

/**
 * The cloud API's code and status for a registry code (docs/api/cloud.md §7).
 * @returns `{code, status}`: the `cloud` column and that code's own status
 */
export function cloudErrorOf(code: ErrorCode): { code: CloudCode; status: number } {
  const cloud = ERROR_CODES[code].cloud;
  return { code: cloud, status: ERROR_CODES[cloud].status };
}

/**
 * The details of an error that may leave a boundary: only the keys the code's registry row lists
 * (its `details` column), whatever else the error carries (a library's `request`, `response`,
 * `serviceName`, a provider's `reason`). An allow-list, so a new fact stays inside until it is
 * documented there.
 * @param details the facts the error holds (an AppError's details, a GraphQL error's extensions)
 * @returns a new object with the allowed keys that are present
 */
export function publicDetails(code: ErrorCode, details: ErrorDetails | undefined): ErrorDetails {
  const allowed: ErrorDetails = {};
  if (!details) return allowed;
  for (const key of ERROR_CODES[code].details) if (details[key] !== undefined) allowed[key] = details[key];
  return allowed;
}

/**
 * `extensions` of a GraphQL error for a registry code: its public details ({@link publicDetails}),
 * `code` and `http.status`.
 * @param details extra facts (`field`, `limit`, ...); keys the code does not document are dropped
 */
export function graphqlExtensions(code: ErrorCode, details: ErrorDetails = {}): { code: string; http: { status: number } } & ErrorDetails {
  return { ...publicDetails(code, details), code: ERROR_CODES[code].graphql, http: { status: ERROR_CODES[code].status } };
}

/**
 * The upper-case codes of the libraries under us (Apollo Server's `ApolloServerErrorCode`, GraphQL
 * Yoga's, graphql-ws's) in the registry's spelling.
 */
const FOREIGN_CODES: Readonly<Record<string, ErrorCode>> = {
  GRAPHQL_PARSE_FAILED: "graphql_parse_failed",
  GRAPHQL_VALIDATION_FAILED: "graphql_validation_failed",
  BAD_USER_INPUT: "bad_user_input",
  BAD_REQUEST: "invalid_request",
  OPERATION_RESOLUTION_FAILURE: "operation_resolution_failure",
  PERSISTED_QUERY_NOT_FOUND: "persisted_query_not_found",
  PERSISTED_QUERY_NOT_SUPPORTED: "persisted_query_not_supported",
  INTROSPECTION_DISABLED: "graphql_validation_failed",
  MAX_RECURSIVE_SELECTIONS_EXCEEDED: "graphql_validation_failed",
  INTERNAL_SERVER_ERROR: "internal",
  UNAUTHENTICATED: "unauthorized",
  FORBIDDEN: "forbidden",
};

/**
 * The registry code for a code found on an error (ours, or a library's), given the HTTP status the
 * error carries.
 * @param code `extensions.code` as found (any value)
 * @param status `extensions.http.status`, if any: decides for a code the registry does not know
 *   (below 500: `invalid_request`, else `service_unavailable`, the gateway's word for a subgraph
 *   it could not use) and turns a library's `BAD_REQUEST` 405 into `method_not_allowed`
 * @returns always a registry code
 */
export function registryCodeOf(code: unknown, status?: number): ErrorCode {
  if (isErrorCode(code)) return code;
  if (status === 405) return "method_not_allowed";
  const foreign = typeof code === "string" ? FOREIGN_CODES[code] : undefined;
  if (foreign) return foreign;
  return status !== undefined && status < 500 ? "invalid_request" : "service_unavailable";
}

/** Extra machine-readable facts about an error, such as `{ field: "seconds" }`. */
export type ErrorDetails = Record<string, unknown>;

/**
 * The one error type users see. `status` is the HTTP status of the code in the registry.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetails;

  /**
   * @param code a registry code; decides the HTTP status
   * @param message overrides the registry's default message
   * @param details extra facts, carried in GraphQL `extensions` and the cloud error body
   */
  constructor(code: ErrorCode, message?: string, details?: ErrorDetails) {
    super(message ?? ERROR_CODES[code].message);
    this.name = "AppError";
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.details = details;
  }
}

/** True when `value` is an {@link AppError}. */
export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

/**
 * A setting that stops the process from starting (src/config.ts, a persisted-documents manifest):
 * the CLI prints its message as one line, with no stack. Not an API error: it never reaches a caller.
 */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/**
 * The error of a value outside its enumeration (a list filter, a state), in the one wording both
 * the services and the REST shims use: `<field> must be one of: a, b`.
 * @param code `invalid_request` (400) for a query filter, `validation_failed` (422) for an input
 * @param field the name as the caller wrote it; also `details.field`
 * @param allowed the values, in the order the message lists them
 */
export function notOneOfError(code: "invalid_request" | "validation_failed", field: string, allowed: readonly string[]): AppError {
  return new AppError(code, `${field} must be one of: ${allowed.join(", ")}`, { field });
}

/**
 * docs/api/generation.md §7: the generation service's exact validation messages.
 * Kept here so the validator and the REST shim (which maps GraphQL type errors of a field to the
 * same message) share one wording. The model ids come from the catalog, in its order.
 */
export const validationMessages = {
  prompt: "prompt must be a non-empty string",
  modelId: `model_id must be one of: ${MODEL_IDS.join(", ")}`,
  unsupported: (field: string) => `${field} has an unsupported value`,
  publicUrl: (field: string) => `${field} must be a public HTTPS URL`,
} as const;

/**
 * The 400 error of a generation request field, with the spec's message for that field:
 * `prompt` and `model_id` have their own messages, every other field "{field} has an unsupported
 * value".
 * @param field the REST (snake case) field name
 * @param extra further details (for example the limit that was passed)
 */
export function invalidFieldError(field: string, extra: ErrorDetails = {}): AppError {
  const message = field === "prompt" ? validationMessages.prompt : field === "model_id" ? validationMessages.modelId : validationMessages.unsupported(field);
  return new AppError("invalid_request", message, { field, ...extra });
}
