/**
 * A `/graphql` refusal the router writes itself, before the gateway sees the request (body too
 * large, wrong content type): the GraphQL-over-HTTP body with the registry's code and status.
 */
import type { ServerResponse } from "node:http";
import { ERROR_CODES, graphqlExtensions, type ErrorCode, type ErrorDetails } from "../../src/errors.ts";

/**
 * The GraphQL result of one registry error: `{errors:[{message, extensions:{code, http:{status}, ...details}}]}`.
 * @param message default: the registry's
 * @param details further public extensions (as {@link graphqlExtensions} takes them)
 */
export function graphqlErrorResult(code: ErrorCode, message: string = ERROR_CODES[code].message, details: ErrorDetails = {}) {
  return { errors: [{ message, extensions: graphqlExtensions(code, details) }] };
}

/**
 * Writes `{"errors":[{message, extensions:{code, http:{status}}}]}` with the code's status.
 * @param message default: the registry's
 * @param headers further response headers (`connection: close` after an unread body)
 */
export function sendGraphqlError(
  res: ServerResponse,
  code: ErrorCode,
  message: string = ERROR_CODES[code].message,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify(graphqlErrorResult(code, message));
  res.writeHead(ERROR_CODES[code].status, { ...headers, "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
