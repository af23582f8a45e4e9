/**
 * With GRAPHQL_DEFER on (ADR 0021), an operation using `@defer` is answered incrementally, over
 * `multipart/mixed` or `text/event-stream`. A client accepting only JSON got GraphQL Yoga's bodiless
 * 406; it gets the registry's `400 invalid_request` saying what to accept instead.
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { ERROR_CODES } from "../../src/errors.ts";
import { graphqlErrorResult } from "../http/graphql-error.ts";

/** The message of the refusal. */
export const DEFER_NEEDS_STREAM = "An operation with @defer is answered incrementally: accept multipart/mixed or text/event-stream";

/** Requests whose operation text mentions `@defer` (noted when their parameters are read). */
const deferring = new WeakSet<object>();

/** The gateway plugin: a 406 of a request using `@defer` becomes 400 `invalid_request` with a JSON GraphQL error. */
export const useDeferAnswers: GatewayPlugin = {
  onParams({ params, request }) {
    // (graphql-ws operations have no request.)
    if (request && typeof params.query === "string" && params.query.includes("@defer")) deferring.add(request);
  },
  onResponse({ request, response, setResponse, fetchAPI }) {
    if (response.status !== 406 || !deferring.has(request)) return;
    const body = JSON.stringify(graphqlErrorResult("invalid_request", DEFER_NEEDS_STREAM));
    setResponse(new fetchAPI.Response(body, { status: ERROR_CODES.invalid_request.status, headers: { "content-type": "application/json; charset=utf-8" } }));
  },
};
