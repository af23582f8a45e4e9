/**
 * Error formatting shared by every subgraph (docs/architecture.md §4): an {@link AppError} becomes a GraphQL
 * error with `extensions.code` and `extensions.http.status` (and its documented details); anything
 * unexpected is logged and masked as `internal` so no stack trace leaves the process.
 */
import type { GraphQLFormattedError } from "graphql";
import { unwrapResolverError } from "@apollo/server/errors";
import type { Logger } from "pino";
import { AppError, ERROR_CODES, graphqlExtensions, publicDetails, registryCodeOf } from "../../src/errors.ts";

/**
 * Builds Apollo Server's `formatError`.
 * `http.status` is added here rather than on the thrown error: Apollo Server would otherwise use
 * it as the HTTP status of the whole response and strip it from the body.
 */
export function formatError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (original instanceof AppError) {
      return {
        message: original.message,
        locations: formatted.locations,
        path: formatted.path,
        extensions: graphqlExtensions(original.code, original.details),
      };
    }
    const code = formatted.extensions?.code;
    if (code === "INTERNAL_SERVER_ERROR" || code === undefined) {
      logger.error({ err: original }, "unexpected error in resolver");
      return { message: ERROR_CODES.internal.message, locations: formatted.locations, path: formatted.path, extensions: graphqlExtensions("internal") };
    }
    // GraphQL's own errors (parse, validation, variable coercion, persisted queries) are the
    // client's: 400, with Apollo's code in the registry's spelling (src/errors.ts registryCodeOf).
    const registry = registryCodeOf(code, 400);
    return { ...formatted, extensions: { ...publicDetails(registry, formatted.extensions), code: ERROR_CODES[registry].graphql, http: { status: 400 } } };
  };
}

/** The HTTP status a GraphQL error stands for (200 when it carries none). */
export function statusOfErrors(errors: readonly GraphQLFormattedError[] | undefined): number {
  const status = (errors?.[0]?.extensions?.http as { status?: number } | undefined)?.status;
  return typeof status === "number" ? status : errors?.length ? 400 : 200;
}
