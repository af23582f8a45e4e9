/**
 * The outbox dispatcher: publishes outbox rows and delivers webhook callbacks (docs/api/cloud.md §6;
 * docs/architecture.md §6 events, §8.4 callbacks).
 *
 * Each round of the dispatcher:
 * 1. **Publishes** unpublished outbox rows in id order (200 a round), each on its account's topic
 *    (a `key.disabled` row on the `keys` topic too, for the routers: src/events/key-topics.ts).
 *    The batch is claimed first with a lease (`outbox.lease_until`, {@link OUTBOX_LEASE_MS};
 *    `FOR UPDATE SKIP LOCKED` on PostgreSQL, see `claimBatch`), so dispatchers of several instances take different rows.
 *    Then the whole batch in one transaction: marks its rows published in one UPDATE (compare-and-swap on
 *    `published_at` and on this dispatcher's lease, so two dispatchers never both publish a row), publishes
 *    each to `account:<accountId>` (`OutboxMessage`, ../pubsub.ts), creates the published rows' callback
 *    deliveries, then commits. A publish that fails puts that row and the rest of the batch back,
 *    unpublished and unleased, for the next round (at-least-once).
 * 2. **Delivers** due callbacks: a batch of due deliveries is claimed the same way with a lease on
 *    `lease_until`; each attempt renews the lease with a compare-and-swap on it (and on the
 *    attempt count), so two dispatchers never send the same attempt; then POSTed to
 *    the key's callback URL with `X-Service-Signature`, `X-Service-Event` and `X-Service-Delivery`.
 *    A 2xx answer delivers it; anything else (status, transport error, timeout) schedules a retry
 *    after `retryBaseMs × 2^(attempts-1)` (at most {@link MAX_RETRY_DELAY_MS}) ±20% jitter,
 *    until `maxAttempts` attempts, then the delivery is `failed`. Every attempt is recorded in
 *    `webhook_attempts` (time, HTTP status, error, duration).
 *
 * Each step is a function of its own file that takes its dependencies (deps.ts): publish.ts,
 * deliver.ts; the background loop is src/loop.ts `startPacedLoop`, and {@link startDispatcher}
 * binds them. Callbacks (which outbox rows become which events): ../callbacks.ts
 * `callbackEventsFor`; reading and re-sending deliveries: ../deliveries.ts.
 * Body: exactly `{"event","request_id","created_at","data"}` (docs/api/cloud.md §6), stored once so
 * every attempt signs and sends the same bytes.
 * Signature (docs/architecture.md §8): `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(webhook_secret, "<t>.<raw body>")>`,
 * computed at each attempt with the key's current `webhook_secret`; receivers verify it with
 * `verifyWebhookSignature` (../webhook-signing.ts) and may drop duplicates by `X-Service-Delivery`.
 */
import pLimit from "p-limit";
import type { Logger } from "pino";
import type { Db } from "../../db/index.ts";
import type { PubSub } from "../pubsub.ts";
import { startPacedLoop } from "../../loop.ts";
import type { DispatcherDeps } from "./deps.ts";
import { deliverBatch } from "./deliver.ts";
import { OUTBOX_BATCH, publishBatch } from "./publish.ts";

export { OUTBOX_LEASE_MS } from "./publish.ts";

/** The longest wait between two attempts, before jitter: one day (15 attempts ≈ three days at the default 30 s base). */
export const MAX_RETRY_DELAY_MS = 24 * 60 * 60 * 1000;

/** Callback requests in flight at once. */
const DELIVERY_CONCURRENCY = 8;

/** Settings of {@link startDispatcher}; times in milliseconds. */
export interface DispatcherOptions {
  db: Db;
  logger: Logger;
  pubsub: PubSub;
  /** Delay before the first retry (`WEBHOOK_RETRY_BASE_MS`); doubles each attempt. */
  retryBaseMs: number;
  /** Attempts before a delivery is `failed` (`WEBHOOK_MAX_ATTEMPTS`). */
  maxAttempts: number;
  /** Pause between background rounds; 0 or less runs no background loop (call `runOnce`). */
  intervalMs: number;
  /** Time limit of one callback request (default 10000). */
  requestTimeoutMs?: number;
  /** Cap of one retry delay before jitter (default {@link MAX_RETRY_DELAY_MS}). */
  maxRetryDelayMs?: number;
  /** The clock, in epoch milliseconds (default `Date.now`); tests drive retries with it. */
  now?: () => number;
}

/** What one round did. */
export interface RoundResult {
  /** Outbox rows published. */
  published: number;
  /** Deliveries answered with a 2xx. */
  delivered: number;
  /** Callback requests sent (successful or not). */
  attempted: number;
}

/** A running dispatcher. */
export interface Dispatcher {
  /** Runs one round now (safe beside the background loop and other dispatchers). */
  runOnce(): Promise<RoundResult>;
  /** Asks the background loop for a round as soon as possible (e.g. after writing an outbox row). */
  wake(): void;
  /** Stops the background loop and waits for every round in progress. */
  stop(): Promise<void>;
  /**
   * Whether the background loop made progress recently (readiness, src/observability/readiness.ts):
   * a round started, ended, or sent an attempt within max(10 intervals, 2 × request timeout + 5 s).
   * False once stopped, and always without a background loop (`intervalMs` 0).
   */
  alive(): boolean;
}

/**
 * One round: publishes a batch of outbox rows, then delivers a batch of due callbacks.
 * @param deps see {@link DispatcherDeps}
 * @returns what the round did, and whether either batch was full (more work waits)
 */
export async function dispatchRound(deps: DispatcherDeps): Promise<{ result: RoundResult; full: boolean }> {
  const published = await publishBatch(deps);
  const { delivered, attempted, full } = await deliverBatch(deps);
  return { result: { published, delivered, attempted }, full: published === OUTBOX_BATCH || full };
}

/**
 * Resolves the settings into the steps' dependencies.
 * @param options the dispatcher's settings (defaults: request timeout 10 000 ms, retry cap
 *   {@link MAX_RETRY_DELAY_MS}, clock `Date.now`)
 * @param beat the readiness heartbeat
 * @returns the {@link DispatcherDeps}
 */
export function dispatcherDeps(options: DispatcherOptions, beat: () => void): DispatcherDeps {
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  return {
    db: options.db,
    logger: options.logger,
    pubsub: options.pubsub,
    now: options.now ?? Date.now,
    retryBaseMs: options.retryBaseMs,
    maxAttempts: options.maxAttempts,
    requestTimeoutMs,
    maxRetryDelayMs: options.maxRetryDelayMs ?? MAX_RETRY_DELAY_MS,
    // A lease outlives the request it covers (and the recording after it); a dispatcher that died
    // mid-request frees it after this.
    deliveryLeaseMs: 2 * requestTimeoutMs + 5_000,
    limit: pLimit(DELIVERY_CONCURRENCY),
    beat,
  };
}

/**
 * Starts the outbox dispatcher (docs/architecture.md §6; see the module docstring for each step).
 * Rounds of the background loop never overlap; a round that found a full batch, or was asked for
 * during a round (`wake`), is followed at once by the next. Errors are logged and retried next
 * round, never thrown by the loop.
 * @param options database, logger, pub/sub, retry policy, interval, request timeout, clock
 * @returns `runOnce`, `wake`, `stop` and `alive`
 */
export function startDispatcher(options: DispatcherOptions): Dispatcher {
  const { intervalMs } = options;
  const now = options.now ?? Date.now;
  let lastBeat = now();
  const beat = () => {
    lastBeat = now();
  };
  const deps = dispatcherDeps(options, beat);
  // A round may take as long as its slowest attempt (the request timeout): silence longer than this is a stuck loop.
  const staleAfterMs = Math.max(10 * intervalMs, deps.deliveryLeaseMs);
  const rounds = new Set<Promise<unknown>>(); // background and `runOnce`: `stop` waits for all
  const round = () => {
    const promise = dispatchRound(deps);
    rounds.add(promise);
    const forget = () => rounds.delete(promise);
    promise.then(forget, forget);
    return promise;
  };
  const background = async () => {
    beat();
    try {
      return (await round()).full ? 0 : intervalMs;
    } finally {
      beat();
    }
  };
  const onError = (err: unknown) => deps.logger.error({ err }, "dispatcher round failed");
  const loop = intervalMs > 0 ? startPacedLoop(background, { firstDelayMs: Math.min(intervalMs, 50), maxDelayMs: intervalMs, onError }) : undefined;
  let stopped = false;
  return {
    runOnce: async () => (await round()).result,
    wake: () => loop?.wake(),
    async stop() {
      stopped = true;
      await loop?.stop();
      while (rounds.size > 0) await Promise.allSettled([...rounds]);
    },
    alive: () => !stopped && intervalMs > 0 && now() - lastBeat <= staleAfterMs,
  };
}
