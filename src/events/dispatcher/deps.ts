/**
 * What the dispatcher's steps need (docs/architecture.md §6): the settings resolved by
 * `startDispatcher` (dispatcher/index.ts), shared by publish.ts and deliver.ts.
 */
import type { LimitFunction } from "p-limit";
import type { Logger } from "pino";
import type { Db } from "../../db/index.ts";
import type { PubSub } from "../pubsub.ts";

/** The dispatcher's resolved dependencies; times in milliseconds. */
export interface DispatcherDeps {
  db: Db;
  logger: Logger;
  pubsub: PubSub;
  /** The clock, in epoch milliseconds. */
  now: () => number;
  /** Delay before the first retry; doubles each attempt. */
  retryBaseMs: number;
  /** Attempts before a delivery is `failed`. */
  maxAttempts: number;
  /** Time limit of one callback request. */
  requestTimeoutMs: number;
  /** Cap of one retry delay before jitter. */
  maxRetryDelayMs: number;
  /** How long a claimed delivery is leased: it outlives the request it covers and the recording after it. */
  deliveryLeaseMs: number;
  /** Callback requests in flight at once, across rounds. */
  limit: LimitFunction;
  /** Records that the loop made progress (readiness). */
  beat: () => void;
}

/**
 * The ISO 8601 text of an epoch-milliseconds moment.
 * @param ms epoch milliseconds
 */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
