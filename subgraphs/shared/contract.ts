/**
 * The in-process contract between the router and a subgraph of the same process
 * (docs/architecture.md §1.2, §1.3): what a subgraph hands the router (`LocalSubgraph`), what the
 * router hands it (`LocalOperation`), `mapStream`, which both use on subscription streams, and
 * the caller report a subgraph adds to each answer (`CallerReport`).
 * The signed internal context, the other half of the contract, is internal-context.ts. Both
 * sides import this file; it imports nothing of either.
 */
import type { DocumentNode, FormattedExecutionResult } from "graphql";

/** One operation handed to a subgraph in-process (router/transport/in-process.ts). */
export interface LocalOperation {
  /** The operation text: what the tracing path (Apollo Server) parses, and the second key of validation and compilation. */
  query: string;
  /** The parsed operation, which the subgraph runs (never re-parsed from `query`). */
  document: DocumentNode;
  variables?: Record<string, unknown>;
  operationName?: string;
  /** The headers the router forwards, lower-cased names (as over HTTP: auth, locale, x-switchyard-*). */
  headers: Record<string, string>;
  /**
   * An object the router made for the client request, the same for each of its subgraph
   * operations: work both subgraphs of this process would repeat is done once under it (auth.ts:
   * the key lookup). Never anything a client sent; absent over HTTP.
   */
  requestScope?: object;
  /**
   * The kind of this operation (`query`, `mutation`, `subscription`), as the router planned it:
   * under one request scope, a request whose operations are all queries writes nothing (auth.ts
   * reads the key's totals with the key then). Absent: treated as one that may write.
   */
  operationType?: string;
}

/**
 * A subgraph's in-process entry: the schema, context builder, plugins and error format of its
 * HTTP `/graphql` and graphql-ws, minus the socket and the JSON round trip. For a router in the
 * same process (docs/architecture.md §1).
 */
export interface LocalSubgraph {
  /**
   * Runs a query or mutation: validated and compiled once per document object (the Rust planner
   * reuses one per planned fetch) or text (the default planner's are new each request), executed
   * compiled (compiled.ts: graphql-jit, graphql-js for what it cannot run) with the subgraph's
   * context, errors formatted and the response hook run as over HTTP. With tracing on, through
   * Apollo Server (its spans).
   * @returns the formatted result (errors carry `extensions.code` and `extensions.http.status`)
   */
  execute(operation: LocalOperation): Promise<FormattedExecutionResult>;
  /**
   * Starts a subscription as graphql-ws would.
   * @returns one error result when it cannot start, else its stream of formatted results
   */
  subscribe(operation: LocalOperation): Promise<FormattedExecutionResult | AsyncIterableIterator<FormattedExecutionResult>>;
}

/**
 * Maps each value of a stream; `return()` reaches the source at once, so a subscription ended by
 * its client stops listening even while no event comes (an async generator would wait for one).
 */
export function mapStream<T, U>(source: AsyncIterator<T>, map: (value: T) => U): AsyncIterableIterator<U> {
  const done = { value: undefined, done: true } as const;
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      const step = await source.next();
      return step.done ? done : { value: map(step.value), done: false };
    },
    async return() {
      await source.return?.();
      return done;
    },
    async throw(error: unknown) {
      if (source.throw) await source.throw(error);
      return done;
    },
  };
}

/** The response extension in which a subgraph reports the caller of a request (caller-report.ts). */
export const CALLER_EXTENSION = "switchyardCaller";

/** A key's rate-limit quota after a request (the shape of src/auth/rate-limit.ts `RateLimitQuota`). */
export interface CallerQuota {
  /** Requests allowed per window. */
  limit: number;
  /** The window in seconds. */
  windowSeconds: number;
  /** Requests left in the current window after this one (0 when this one was refused). */
  remaining: number;
  /** Whole seconds until the window resets (≥ 1; on a 429 the same value as `Retry-After`). */
  resetSeconds: number;
}

/** The value of {@link CALLER_EXTENSION}: read and stripped by the router (router/request-report.ts). */
export interface CallerReport {
  /** The authenticated key (its id, never the key). */
  keyId?: string;
  /** The key's quota after this request; absent for an unlimited key. */
  rateLimit?: CallerQuota;
  /** Set when the rate limit refused this request (429): its `Retry-After` in seconds. */
  retryAfterSeconds?: number;
}
