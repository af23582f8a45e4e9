/**
 * The request deadline (router/limits.ts, the table's `request time` row; REQUEST_TIMEOUT_MS): the
 * gateway's `requestDeadline` option is this same plugin of @whatwg-node/server, answering a
 * plain-text 503; ours answers a GraphQL error, 504 `request_timeout`. The timer covers a request
 * until the gateway has its response (for SSE: until the stream starts), so a live subscription
 * is not cut; graphql-ws operations do not pass here.
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { ERROR_CODES, type ErrorCode } from "../../src/errors.ts";
import { graphqlErrorResult } from "../http/graphql-error.ts";
import { LIMIT_CODES } from "../limits.ts";

/** A JSON GraphQL error response (fetch API) with the registry code's status. */
function graphqlErrorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}): Response {
  const status = ERROR_CODES[code].status;
  return new Response(JSON.stringify(graphqlErrorResult(code, message)), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/**
 * The gateway plugin.
 * @param timeoutMs how long one `/graphql` HTTP request may take, in milliseconds (> 0)
 * @returns a plugin answering 504 `request_timeout` (with `connection: close`) once the time is up
 */
export function useRequestDeadline(timeoutMs: number): GatewayPlugin {
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
