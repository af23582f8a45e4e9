/**
 * What a subgraph tells the router about the caller of one request, in the response extension
 * `switchyardCaller`: the key id (for the router's request log) and the key's rate-limit quota
 * after this request (for the `RateLimit-Policy` / `RateLimit` headers; router/request-report.ts).
 * The rate limit is counted here, in the subgraphs (src/auth/authenticate.ts), so only they know it.
 * The router reads the extension and strips it: clients never see it. Its name and shape are
 * the contract's (contract.ts), which the router imports.
 */
import type { ApolloServerPlugin, BaseContext } from "@apollo/server";
import type { AuthenticationObserver } from "../../src/auth/authenticate.ts";
import { CALLER_EXTENSION, type CallerReport } from "./contract.ts";

/** Reports by request (the object a subgraph's context was built from). */
const reports = new WeakMap<object, CallerReport>();

function reportFor(req: object): CallerReport {
  let report = reports.get(req);
  if (!report) {
    report = {};
    reports.set(req, report);
  }
  return report;
}

/**
 * What authentication tells the report of a request: the key as soon as it is known (a request
 * its policy refuses still names it), and the quota the rate limit left, a refusal (429) included.
 */
export function callerObserver(req: object): AuthenticationObserver {
  return {
    authenticated(caller) {
      reportFor(req).keyId = caller.keyId;
    },
    quota(quota, retryAfterSeconds) {
      const report = reportFor(req);
      report.rateLimit = quota;
      if (retryAfterSeconds !== undefined) report.retryAfterSeconds = retryAfterSeconds;
    },
  };
}

/** Notes that a throttle other than the key's rate limit refused the request (429): the router answers `Retry-After`. */
export function noteRetryAfter(req: object, seconds: number): void {
  reportFor(req).retryAfterSeconds = seconds;
}

/**
 * Where a context keeps the request it was built from (see {@link reportingContext}): a symbol
 * property, not a WeakMap by context, because Apollo Server runs each operation on a shallow
 * copy of the context, which copies it.
 */
const REQUEST_OF = Symbol("switchyard.request");

/**
 * Wraps a subgraph's context builder so that the report of the request a context was built
 * from can be found from the context ({@link withCallerReport}, {@link callerReportPlugin}).
 */
export function reportingContext<TReq extends object, TContext extends object>(build: (req: TReq) => Promise<TContext>): (req: TReq) => Promise<TContext> {
  return async (req) => {
    const context = await build(req);
    (context as { [REQUEST_OF]?: object })[REQUEST_OF] = req;
    return context;
  };
}

/** The report noted while a context's request ran, if any. */
function reportOfContext(context: unknown): CallerReport | undefined {
  const req = context && typeof context === "object" ? (context as { [REQUEST_OF]?: object })[REQUEST_OF] : undefined;
  return req && reports.get(req);
}

/**
 * Adds the caller report of the request to a query or mutation result (in-process execution).
 * @returns the result, with `extensions.switchyardCaller` when something was noted
 */
export function withCallerReport<T extends { extensions?: Record<string, unknown> }>(result: T, context: unknown): T {
  const report = reportOfContext(context);
  return report ? { ...result, extensions: { ...result.extensions, [CALLER_EXTENSION]: report } } : result;
}

/** The same for Apollo Server (HTTP `/graphql`, and in-process with tracing on). */
export const callerReportPlugin: ApolloServerPlugin<BaseContext> = {
  async requestDidStart() {
    return {
      async willSendResponse({ contextValue, response }) {
        const report = reportOfContext(contextValue);
        if (!report || response.body.kind !== "single") return;
        const result = response.body.singleResult;
        result.extensions = { ...result.extensions, [CALLER_EXTENSION]: report };
      },
    };
  },
};
