/**
 * Registry codes on every `/graphql` answer (docs/architecture.md §4.3; router/error-codes.ts
 * `toRegistryCode`): each error that leaves, over POST and GET `/graphql`, SSE and graphql-ws alike,
 * gets its registry code and only the registry's detail keys. A gateway failure answered as
 * `service_unavailable` is logged at warn with the request id, never with the request it sent.
 */
import { GraphQLError } from "graphql";
import type { Logger } from "pino";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { toRegistryCode, type HiddenErrorReport } from "../error-codes.ts";

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
 * The gateway plugin: parse, validation, execution and subscription results, then every HTTP result.
 * @param logger where hidden failures are logged (warn): request id, subgraph, the library's code,
 *   the subgraph's HTTP status and the start of the message; never the request the gateway sent
 *   (its body holds the caller's key and the signature)
 */
export function useRegistryCodes(logger: Pick<Logger, "warn">): GatewayPlugin {
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
