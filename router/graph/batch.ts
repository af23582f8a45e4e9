/**
 * HTTP batching on `POST /graphql` (README "Transports"; docs/adr/0021-transports.md): a JSON array
 * of operations in one body, each run through the gateway as if it had been sent alone, one after
 * another in order, and answered as a JSON array in the same order.
 *
 * "As if sent alone": each element is its own gateway request with its own count id
 * (`x-switchyard-count-id`), so the subgraphs' key policy (rate limit, scopes, allow-list) counts
 * and checks every element, and every gateway plugin (cost, depth, page size, persisted documents,
 * request deadline, GET/mutation rules) sees each one by itself. GraphQL Yoga's own `batching`
 * option was not used: its elements share one request, hence one count id, and the rate limiter
 * would count a batch of ten as one request.
 */
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { Gateway } from "./gateway.ts";
import { postParsed } from "./client.ts";
import type { RequestReport, RequestReports } from "../request-report.ts";
import { graphqlErrorResult, sendGraphqlError } from "../http/graphql-error.ts";

/** GRAPHQL_BATCH_MAX's default: operations one batch may hold. */
export const DEFAULT_BATCH_MAX = 10;

/** Longest list of operation names kept for the request log of a batch. */
const MAX_LOGGED_NAMES = 200;

/** What {@link answerBatch} needs of the router. */
export interface BatchContext {
  gateway: Gateway;
  /** The router's report registry: each element gets a report of its own (its count id). */
  reports: RequestReports;
  /** The batch request's own report (the request log line): it gets the elements' names and key. */
  report: RequestReport;
  /** GRAPHQL_BATCH_MAX: most operations in one batch. */
  max: number;
}

/**
 * Whether a batch may run at all: a refusal (one registry error, 400, nothing executed) is
 * written on `res`. @returns true when the batch may run
 */
function batchAccepted(res: ServerResponse, headers: Record<string, string>, elements: readonly unknown[], max: number): boolean {
  if (elements.length === 0) {
    sendGraphqlError(res, "invalid_request", "A batch must hold at least one operation");
    return false;
  }
  if (elements.length > max) {
    sendGraphqlError(res, "invalid_request", `A batch holds at most ${max} operations (GRAPHQL_BATCH_MAX); this one holds ${elements.length}`);
    return false;
  }
  // A request signature is accepted once per request (src/auth/rate-limit.ts claimSignature): the
  // second element would be refused as a replay, so a signed batch is refused whole.
  if (headers["x-service-signature"]) {
    sendGraphqlError(res, "invalid_request", "A signed request cannot be a batch: send and sign each operation on its own");
    return false;
  }
  return true;
}

/**
 * Runs one element through the gateway as a request of its own.
 * @returns its GraphQL result (a registry error for an element that is not an object)
 */
async function runElement(context: BatchContext, res: ServerResponse, target: string, headers: Record<string, string>, element: unknown) {
  if (element === null || typeof element !== "object" || Array.isArray(element)) {
    return graphqlErrorResult("invalid_request", "Each operation of a batch must be a JSON object with `query`");
  }
  const countId = randomUUID();
  const report = context.reports.open(countId, res);
  try {
    // JSON answers only: a batch is one JSON array (no stream, no incremental delivery in it).
    const response = await postParsed(
      context.gateway,
      target,
      { ...headers, accept: "application/json", "x-switchyard-count-id": countId },
      element as Record<string, unknown>,
    );
    const text = await response.text();
    noteElement(context.report, report);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Not a GraphQL result: the gateway refused what the element asked for (a subscription wants a stream).
      return graphqlErrorResult("invalid_request", "A batch runs queries and mutations only: use graphql-ws or SSE for subscriptions");
    }
  } finally {
    context.reports.close(countId);
  }
}

/** Carries an element's key and operation name into the batch's own report (its log line). */
function noteElement(batch: RequestReport, element: RequestReport): void {
  if (element.keyId) batch.keyId ??= element.keyId;
  if (element.retryAfterSeconds) batch.retryAfterSeconds = element.retryAfterSeconds;
  if (element.operationName) {
    const names = batch.operationName ? `${batch.operationName},${element.operationName}` : element.operationName;
    batch.operationName = names.slice(0, MAX_LOGGED_NAMES);
  }
}

/**
 * Answers a batch: refuses an empty one, one over `max` and a signed one (400 `invalid_request`,
 * nothing run); else runs the elements one after another in order, each as its own request, and
 * writes 200 with the JSON array of their results in the same order. An element that fails
 * (validation, cost, scope, rate limit) answers its own errors (with `extensions.http.status`)
 * and the others run. `RateLimit` headers follow the tightest quota seen (the last element's);
 * `Retry-After` is set when the rate limit refused an element.
 * @param target the gateway URL of the request (path and query string)
 * @param headers the request's headers, as the gateway takes them
 * @param elements the parsed JSON array
 */
export async function answerBatch(
  context: BatchContext,
  res: ServerResponse,
  target: string,
  headers: Record<string, string>,
  elements: readonly unknown[],
): Promise<void> {
  if (!batchAccepted(res, headers, elements, context.max)) return;
  const results: unknown[] = [];
  for (const element of elements) {
    if (res.destroyed) return; // the client left: run nothing more
    results.push(await runElement(context, res, target, headers, element));
  }
  const body = JSON.stringify(results);
  res.statusCode = 200;
  res.setHeader("content-type", "application/json; charset=utf-8");
  if (context.report.retryAfterSeconds) res.setHeader("retry-after", String(context.report.retryAfterSeconds));
  res.setHeader("content-length", Buffer.byteLength(body));
  res.end(body);
}
