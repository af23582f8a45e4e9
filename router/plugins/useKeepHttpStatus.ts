/**
 * docs/architecture.md §4: GraphQL errors carry `extensions.http.status` in the body. GraphQL Yoga
 * (under the gateway) turns that extension into the response status and strips it from the body
 * when it serializes; this plugin hands Yoga a serializer that writes it back.
 */
import type { ExecutionResult } from "graphql";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

/** The HTTP status a GraphQL error carries in `extensions.http.status`, if any. */
function httpStatusOf(error: unknown): number | undefined {
  const status = (error as { extensions?: { http?: { status?: unknown } } } | null)?.extensions?.http?.status;
  return typeof status === "number" ? status : undefined;
}

/** A result as GraphQL Yoga serializes it (its `ExecutionResultWithSerializer`, not exported). */
type SerializableResult = ExecutionResult & { stringify?: (result: ExecutionResult) => string };

/** Puts `extensions.http.status` back on the serialized errors of one result, matched by position. */
function withHttpStatuses<T extends SerializableResult | AsyncIterable<SerializableResult>>(result: T): T {
  if (!result || typeof result !== "object" || Symbol.asyncIterator in result) return result;
  const statuses: (number | undefined)[] = (result.errors ?? []).map(httpStatusOf);
  if (!statuses.some((status) => status !== undefined)) return result;
  const stringify = result.stringify ?? JSON.stringify;
  return {
    ...result,
    stringify: (sanitized: ExecutionResult) =>
      stringify({
        ...sanitized,
        errors: sanitized.errors?.map((error, i) => {
          const json = typeof error?.toJSON === "function" ? error.toJSON() : error;
          const status = statuses[i];
          return status === undefined ? json : { ...json, extensions: { ...json.extensions, http: { status } } };
        }),
      }),
  };
}

/** The gateway plugin: every result (a batch's too) gets a serializer keeping `extensions.http.status`. */
export const useKeepHttpStatus: GatewayPlugin = {
  onResultProcess({ result, setResult }) {
    setResult(Array.isArray(result) ? result.map(withHttpStatuses) : withHttpStatuses(result));
  },
};
