/**
 * The router's client of its own gateway: how `/graphql`, the REST shims, `/health` and the key
 * check run GraphQL operations, in-process through the gateway's fetch handler, so a REST call
 * takes exactly the path a GraphQL call takes, minus a socket (docs/architecture.md §1.2).
 */
import type { IncomingMessage } from "node:http";
import type { GraphQLFormattedError } from "graphql";
import { ERROR_CODES, publicDetails, registryCodeOf, type ErrorCode } from "../../src/errors.ts";
import type { Gateway } from "./gateway.ts";
import { PARSED_BODY } from "../plugins/usePreparsedParams.ts";
import { hidesOwnMessage } from "../error-codes.ts";

/** The result of one operation. */
export interface GraphResult<T = unknown> {
  data?: T | null;
  errors?: GraphQLFormattedError[];
}

/** A GraphQL error translated to the registry: code, its HTTP status (src/errors.ts), message, details. */
export interface ShimError {
  code: ErrorCode;
  status: number;
  message: string;
  details: Record<string, unknown>;
}

/** Per-call facts forwarded to the subgraphs. */
export interface CallContext {
  authorization?: string | null;
  acceptLanguage?: string | null;
  /** Further headers for the subgraphs (signature facts, client IP). */
  headers?: Record<string, string>;
  requestId: string;
  /** `METHOD /path` for the request log. */
  route: string;
  /** Status to record instead of the operation's own (for rejections made by the shim). */
  routeStatus?: number;
}

/**
 * POSTs GraphQL parameters the caller already holds to the gateway, in-process and without a
 * body (router/plugins/usePreparsedParams.ts): the router's `/graphql` after reading a JSON body, and every
 * operation of the REST shims.
 * @param target an absolute URL whose path is the gateway's `/graphql`
 * @returns the gateway's response
 */
export function postParsed(gateway: Gateway, target: string, headers: Record<string, string>, params: Record<string, unknown>): Promise<Response> {
  return Promise.resolve(gateway.fetch(target, { method: "POST", headers }, { [PARSED_BODY]: params }));
}

/**
 * Runs a GraphQL operation through the gateway, in-process, its parameters handed over already
 * parsed ({@link postParsed}): no URL or body to encode and parse again. Queries used
 * to go as GET to avoid GraphQL Yoga's body stream; with no body at all, POST is at least as
 * cheap (paired runs: REST read 1.45-1.5 vs 1.55-1.6 CPU ms) and one path is simpler.
 * @returns the GraphQL result (errors included, never thrown for GraphQL errors)
 */
export async function runOperation<T = unknown>(
  gateway: Gateway,
  query: string,
  variables: Record<string, unknown>,
  call: CallContext,
): Promise<GraphResult<T>> {
  const response = await postParsed(gateway, "http://router.internal/graphql", operationHeaders(call), { query, variables });
  return (await response.json()) as GraphResult<T>;
}

/** The headers of one operation of a call, lower-case names: what the gateway's request carries. */
export function operationHeaders(call: CallContext): Record<string, string> {
  const headers: Record<string, string> = {
    ...(call.headers ?? {}),
    accept: "application/json",
    "content-type": "application/json",
    "x-request-id": call.requestId,
    "x-switchyard-route": call.route,
  };
  if (call.authorization) headers.authorization = call.authorization;
  if (call.acceptLanguage) headers["accept-language"] = call.acceptLanguage;
  if (call.routeStatus) headers["x-switchyard-route-status"] = String(call.routeStatus);
  return headers;
}

/**
 * The facts about a REST request the subgraphs need for key policy: client IP and count id (set by the router),
 * and, when the client signed the request, the signature with method, path and body digest.
 * @param bodySha256 hex SHA-256 of the raw body (of "" for bodiless requests)
 */
export function policyHeaders(req: IncomingMessage, bodySha256: string): Record<string, string> {
  const headers: Record<string, string> = {};
  // Both set by the router's edge (router/server.ts), never taken from the client.
  for (const name of ["x-switchyard-client-ip", "x-switchyard-count-id"]) {
    const value = req.headers[name];
    if (typeof value === "string") headers[name] = value;
  }
  const signature = req.headers["x-service-signature"];
  if (typeof signature === "string") {
    headers["x-service-signature"] = signature;
    headers["x-switchyard-method"] = req.method ?? "";
    headers["x-switchyard-path"] = req.url ?? "";
    headers["x-switchyard-body-sha256"] = bodySha256;
  }
  return headers;
}

export { sha256Hex } from "../../src/digest.ts";

/**
 * Translates the first GraphQL error to a registry error (src/errors.ts `registryCodeOf`): a
 * registry code keeps its message; a 5xx without one (the gateway could not use a subgraph) is
 * `service_unavailable` with the registry's message (router/error-codes.ts `hidesOwnMessage`).
 * The details are the code's documented ones only (src/errors.ts `publicDetails`).
 */
export function toShimError(error: GraphQLFormattedError): ShimError {
  const extensions: { code?: unknown; http?: { status?: unknown }; [name: string]: unknown } = error.extensions ?? {};
  const found = extensions.code;
  const code = registryCodeOf(found, typeof extensions.http?.status === "number" ? extensions.http.status : undefined);
  const { status, message } = ERROR_CODES[code];
  const details = publicDetails(code, extensions);
  return hidesOwnMessage(code, found) ? { code, status, message, details } : { code, status, message: error.message, details };
}
