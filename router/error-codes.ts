/**
 * Registry codes on every `/graphql` answer (docs/architecture.md §4.3): the libraries under the
 * router spell their codes in upper case (GraphQL Yoga's `GRAPHQL_PARSE_FAILED`,
 * `GRAPHQL_VALIDATION_FAILED`, `BAD_REQUEST`, `OPERATION_RESOLUTION_FAILURE`) or give none (a
 * variable that does not coerce, a parse error over graphql-ws). This gateway plugin gives each
 * error its registry code (src/errors.ts `registryCodeOf`) before it leaves, over POST and GET
 * `/graphql`, SSE and graphql-ws alike; an error that carries no `extensions.http.status` gets its
 * code's.
 */
import { GraphQLError } from "graphql";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { ERROR_CODES, isErrorCode, registryCodeOf, type ErrorCode } from "../src/errors.ts";

type Extensions = { code?: unknown; http?: { status?: unknown } & Record<string, unknown> } & Record<string, unknown>;

/**
 * Gives one error (a GraphQLError or its JSON form) its registry code, in place, as GraphQL Yoga
 * marks its own errors.
 * @param absent the code for an error without one (what the hook that found it knows it to be)
 */
export function toRegistryCode<T>(error: T, absent?: ErrorCode): T {
  if (!error || typeof error !== "object") return error;
  const extensions = ((error as { extensions?: Extensions }).extensions ?? {}) as Extensions;
  if (isErrorCode(extensions.code) && typeof extensions.http?.status === "number") return error;
  const status = typeof extensions.http?.status === "number" ? extensions.http.status : undefined;
  const code = extensions.code === undefined && absent ? absent : registryCodeOf(extensions.code, status);
  const value = { ...extensions, code, http: { ...(extensions.http ?? {}), status: status ?? ERROR_CODES[code].status } };
  Object.defineProperty(error, "extensions", { value, enumerable: true, writable: true, configurable: true });
  if (hidesOwnMessage(code, extensions.code)) (error as { message?: string }).message = ERROR_CODES[code].message;
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
function resultWithRegistryCodes<T>(result: T): T {
  const errors = (result as { errors?: unknown } | null)?.errors;
  if (Array.isArray(errors)) for (const error of errors) toRegistryCode(error, (error as GraphQLError).path ? undefined : "bad_user_input");
  return result;
}

const isStream = (value: unknown) => !!value && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";

/** The plugin: parse, validation, execution and subscription results, then every HTTP result. */
export const registryCodes: GatewayPlugin = {
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
  onExecute: () => ({
    onExecuteDone: ({ result }) => {
      if (!isStream(result)) return void resultWithRegistryCodes(result);
      return { onNext: ({ result: next }) => void resultWithRegistryCodes(next) };
    },
  }),
  onSubscribe: () => ({
    onSubscribeResult: ({ result }) => {
      if (!isStream(result)) return void resultWithRegistryCodes(result);
      return { onNext: ({ result: next }) => void resultWithRegistryCodes(next) };
    },
  }),
  onResultProcess: ({ result }) => {
    for (const one of Array.isArray(result) ? result : [result]) if (!isStream(one)) resultWithRegistryCodes(one);
  },
} as GatewayPlugin;
