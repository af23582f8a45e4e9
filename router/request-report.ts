/**
 * What the router learns about one client request while the gateway runs it: the GraphQL
 * operation, and from the subgraphs' `switchyardCaller` response extension
 * (subgraphs/shared/caller-report.ts; its shape is the contract's, subgraphs/shared/contract.ts) the key id and the key's rate-limit quota. The quota becomes
 * the `RateLimit-Policy` and `RateLimit` headers of draft-ietf-httpapi-ratelimit-headers on the
 * client's answer (REST shims and `/graphql` alike: both run through the gateway), the rest goes
 * into the request log line (router/server.ts).
 *
 * A request is found by its count id (`x-switchyard-count-id`), which the router's edge mints
 * for every client request and the gateway sees on every operation the request runs. This file
 * keeps the open reports; the gateway plugin that fills them is router/plugins/useRequestReport.ts,
 * and router/graph/direct.ts fills them for the operations it runs without the gateway.
 */
import type { ServerResponse } from "node:http";
import { CALLER_EXTENSION, type CallerQuota, type CallerReport } from "../subgraphs/shared/contract.ts";

/** The name of our single quota policy in the RateLimit headers. */
const RATE_LIMIT_POLICY = "default";

/** Longest operation name kept for the log (a client chooses it). */
const MAX_OPERATION_NAME = 200;

/** What is known of one request so far. */
export interface RequestReport {
  /** The (first) GraphQL operation the request ran, when it has a name. */
  operationName?: string;
  /** The key that authenticated the request. */
  keyId?: string;
  /** The key's quota after this request (lowest remaining when several subgraphs answered). */
  rateLimit?: CallerQuota;
  /** Set when the rate limit refused the request: its `Retry-After` in seconds. */
  retryAfterSeconds?: number;
}

/**
 * The RateLimit header fields for a quota (draft-ietf-httpapi-ratelimit-headers, Structured Field
 * items with a String policy name): `RateLimit-Policy: "default";q=<limit>;w=<window s>` and
 * `RateLimit: "default";r=<remaining>;t=<seconds to reset>`.
 */
function rateLimitHeaders(quota: CallerQuota): { "ratelimit-policy": string; ratelimit: string } {
  return {
    "ratelimit-policy": `"${RATE_LIMIT_POLICY}";q=${quota.limit};w=${quota.windowSeconds}`,
    ratelimit: `"${RATE_LIMIT_POLICY}";r=${quota.remaining};t=${quota.resetSeconds}`,
  };
}

/** Reads a caller report from untrusted-shaped JSON (a subgraph over HTTP): only well-formed fields. */
function parseReport(value: unknown): CallerReport | null {
  if (!value || typeof value !== "object") return null;
  const { keyId, rateLimit, retryAfterSeconds } = value as Record<string, unknown>;
  const report: CallerReport = {};
  if (typeof keyId === "string") report.keyId = keyId;
  if (typeof retryAfterSeconds === "number" && Number.isInteger(retryAfterSeconds) && retryAfterSeconds >= 1) report.retryAfterSeconds = retryAfterSeconds;
  const q = rateLimit as Record<string, unknown> | undefined;
  const whole = (n: unknown) => typeof n === "number" && Number.isInteger(n) && n >= 0;
  if (q && whole(q.limit) && whole(q.windowSeconds) && whole(q.remaining) && whole(q.resetSeconds)) {
    report.rateLimit = {
      limit: q.limit as number,
      windowSeconds: q.windowSeconds as number,
      remaining: q.remaining as number,
      resetSeconds: q.resetSeconds as number,
    };
  }
  return report;
}

/**
 * Splits a subgraph result into the result without its caller report (never passed on: it is the
 * subgraphs' note to the router) and the report (only its well-formed fields).
 * @returns null when it carries none
 */
function withoutCallerReport(result: { extensions?: Record<string, unknown> } | null): { result: object; caller: CallerReport | null } | null {
  const extensions = result?.extensions;
  if (!extensions || !(CALLER_EXTENSION in extensions)) return null;
  const { [CALLER_EXTENSION]: raw, ...rest } = extensions;
  return { result: { ...result, extensions: Object.keys(rest).length ? rest : undefined }, caller: parseReport(raw) };
}

/** The open reports of a router, filled by router/plugins/useRequestReport.ts and router/graph/direct.ts. */
export interface RequestReports {
  /**
   * Opens the report of one client request.
   * @param countId the request's `x-switchyard-count-id`
   * @param res its response: the RateLimit headers are set on it as soon as a subgraph reports a
   *   quota, before the answer is written
   */
  open(countId: string, res: ServerResponse): RequestReport;
  /** Forgets a request (its response closed). */
  close(countId: string): void;
  /**
   * Notes the (first) operation a request ran; a later one does not replace it.
   * @param operationName cut to 200 characters (a client chooses it)
   */
  noteOperation(countId: string | undefined, operationName: string): void;
  /** Notes a subgraph's caller report: key id, `Retry-After`, and the tighter quota, set at once as RateLimit headers. */
  noteCaller(countId: string | undefined, caller: CallerReport): void;
  /** The `Retry-After` (seconds) a rate-limit refusal reported for a request, if any. */
  retryAfterSeconds(countId: string | undefined): number | undefined;
  /** Takes the caller report out of a subgraph result run without the gateway, as the plugin does. @returns the result without it */
  takeCallerReport<T extends { extensions?: Record<string, unknown> }>(countId: string | undefined, result: T): T;
}

/** Creates the report registry of one router. */
export function createRequestReports(): RequestReports {
  const open = new Map<string, { report: RequestReport; res: ServerResponse }>();

  /** The open request of a count id. */
  const entryOf = (countId: string | undefined) => (countId ? open.get(countId) : undefined);

  const noteCaller = (countId: string | undefined, caller: CallerReport) => {
    const entry = entryOf(countId);
    if (!entry) return;
    if (caller.keyId) entry.report.keyId ??= caller.keyId;
    if (caller.retryAfterSeconds) entry.report.retryAfterSeconds = caller.retryAfterSeconds;
    const quota = caller.rateLimit;
    if (!quota) return;
    // One request may reach both subgraphs: it counts once, but report the tighter answer if they differ.
    const known = entry.report.rateLimit;
    if (known && known.remaining <= quota.remaining) return;
    entry.report.rateLimit = quota;
    if (!entry.res.headersSent) for (const [name, value] of Object.entries(rateLimitHeaders(quota))) entry.res.setHeader(name, value);
  };

  return {
    open(countId, res) {
      const report: RequestReport = {};
      open.set(countId, { report, res });
      return report;
    },
    close: (countId) => void open.delete(countId),
    noteOperation(countId, operationName) {
      const entry = entryOf(countId);
      if (entry && entry.report.operationName === undefined) entry.report.operationName = operationName.slice(0, MAX_OPERATION_NAME);
    },
    noteCaller,
    retryAfterSeconds: (countId) => entryOf(countId)?.report.retryAfterSeconds,
    takeCallerReport(countId, result) {
      const taken = withoutCallerReport(result);
      if (!taken) return result;
      if (taken.caller) noteCaller(countId, taken.caller);
      return taken.result as typeof result;
    },
  };
}
