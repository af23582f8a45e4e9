/**
 * The outbox dispatcher: publishes outbox rows and delivers webhook callbacks (docs/api/cloud.md §6;
 * docs/architecture.md §6 events, §8.4 callbacks).
 *
 * Each round of the dispatcher:
 * 1. **Publishes** unpublished outbox rows in id order (200 a round), each on its account's topic
 *    (a `key.disabled` row on the `keys` topic too, for the routers: src/auth/revocation.ts).
 *    The batch is claimed first with a lease (`outbox.lease_until`, {@link OUTBOX_LEASE_MS};
 *    `FOR UPDATE SKIP LOCKED` on PostgreSQL, see `claimBatch`), so dispatchers of several instances take different rows. For
 *    each row, in one transaction: marks it published (compare-and-swap on `published_at` and on
 *    this dispatcher's lease, so two dispatchers never both publish it), creates its callback
 *    deliveries, publishes it to `account:<accountId>` ({@link OutboxMessage}), then commits. A
 *    publish that fails rolls the row back and releases the rest of the batch for the next round
 *    (at-least-once).
 * 2. **Delivers** due callbacks: a batch of due deliveries is claimed the same way with a lease on
 *    `lease_until`; each attempt renews the lease with a compare-and-swap on it (and on the
 *    attempt count), so two dispatchers never send the same attempt; then POSTed to
 *    the key's callback URL with `X-Service-Signature`, `X-Service-Event` and `X-Service-Delivery`.
 *    A 2xx answer delivers it; anything else (status, transport error, timeout) schedules a retry
 *    after `retryBaseMs × 2^(attempts-1)` (at most {@link MAX_RETRY_DELAY_MS}) ±20% jitter,
 *    until `maxAttempts` attempts, then the delivery is `failed`. Every attempt is recorded in
 *    `webhook_attempts` (time, HTTP status, error, duration).
 *
 * Callbacks (which outbox rows become which events): callbacks.ts `callbackEventsFor`; reading and
 * re-sending deliveries: deliveries.ts.
 * Body: exactly `{"event","request_id","created_at","data"}` (docs/api/cloud.md §6), stored once so
 * every attempt signs and sends the same bytes.
 * Signature (docs/architecture.md §8): `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(webhook_secret, "<t>.<raw body>")>`,
 * computed at each attempt with the key's current `webhook_secret`; receivers verify it with
 * `verifyWebhookSignature` (webhook-signing.ts) and may drop duplicates by `X-Service-Delivery`.
 */
import pLimit from "p-limit";
import type { Logger } from "pino";
import { claimBatch, type Db } from "../db/index.ts";
import { accountTopic, type OutboxMessage, type PubSub } from "./pubsub.ts";
import { topicsOfRow } from "./key-topics.ts";
import { callbackBody, callbackEventsFor } from "./callbacks.ts";
import { signWebhook } from "./webhook-signing.ts";

/** The longest wait between two attempts, before jitter: one day (15 attempts ≈ three days at the default 30 s base). */
export const MAX_RETRY_DELAY_MS = 24 * 60 * 60 * 1000;

const OUTBOX_BATCH = 200;
/** How long a claimed outbox batch is leased to one dispatcher (publishing it takes far less). */
export const OUTBOX_LEASE_MS = 10_000;
const DELIVERY_BATCH = 100;
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

/** An `outbox` row (`payload` as JSON text; `id` bigint: a string on PostgreSQL). */
interface OutboxRow {
  id: number | string;
  topic: string;
  account_id: string;
  aggregate_id: string;
  payload: string;
  created_at: string;
  key_id: string | null;
  request_id: string | null;
}

interface DueDelivery {
  id: number;
  attempts: number;
  aggregate_id: string;
  /** The `lease_until` this dispatcher set when it claimed the delivery. */
  lease: string;
}

/**
 * Starts the outbox dispatcher (docs/architecture.md §6; see the module docstring for each step).
 * Rounds of the background loop never overlap; a round that found a full batch is followed at
 * once by the next. Errors are logged and retried next round, never thrown by the loop.
 * @param options database, logger, pub/sub, retry policy, interval, request timeout, clock
 * @returns `runOnce`, `wake` and `stop`
 */
export function startDispatcher(options: DispatcherOptions): Dispatcher {
  const { db, logger, pubsub } = options;
  const now = options.now ?? Date.now;
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  const maxDelay = options.maxRetryDelayMs ?? MAX_RETRY_DELAY_MS;
  // A lease outlives the request it covers (and the recording after it); a dispatcher that died
  // mid-request frees it after this.
  const leaseMs = 2 * requestTimeoutMs + 5_000;
  const limit = pLimit(DELIVERY_CONCURRENCY);
  const iso = (ms: number) => new Date(ms).toISOString();
  // The loop's heartbeat: a round that starts, ends or finishes a callback attempt. A round may
  // take as long as its slowest attempt (requestTimeoutMs), so silence longer than that is a stuck loop.
  let lastBeat = now();
  const beat = () => (lastBeat = now());
  const staleAfterMs = Math.max(10 * options.intervalMs, 2 * requestTimeoutMs + 5_000);

  async function publishBatch(): Promise<number> {
    const claimedAt = now();
    const claimIso = iso(claimedAt);
    const lease = iso(claimedAt + OUTBOX_LEASE_MS);
    const rows = await claimBatch<OutboxRow>(
      db,
      "outbox",
      (q) => q.whereNull("published_at").andWhere((l) => l.whereNull("lease_until").orWhere("lease_until", "<=", claimIso)),
      [{ column: "id" }],
      OUTBOX_BATCH,
      { lease_until: lease },
    );
    let published = 0;
    for (const [index, row] of rows.entries()) {
      let payload: Record<string, unknown>;
      try {
        payload = JSON.parse(row.payload);
      } catch {
        logger.error({ outbox_id: row.id }, "outbox payload is not JSON; published with an empty payload");
        payload = {};
      }
      const message: OutboxMessage = {
        id: Number(row.id),
        topic: row.topic,
        accountId: row.account_id,
        aggregateId: row.aggregate_id,
        payload,
        createdAt: row.created_at,
        keyId: row.key_id ?? null,
        requestId: row.request_id ?? null,
      };
      try {
        const done = await db.transaction(async (trx) => {
          const at = iso(now());
          const claimed = await trx("outbox")
            .where({ id: row.id, lease_until: lease })
            .whereNull("published_at")
            .update({ published_at: at, lease_until: null });
          if (claimed !== 1) return false; // our lease ran out and another dispatcher has it
          const events = row.key_id ? callbackEventsFor(row.topic, payload) : [];
          if (events.length > 0) {
            const key = await trx("api_keys").where("id", row.key_id).first("callback_url");
            if (key?.callback_url) {
              const requestId = row.request_id ?? `evt_${row.id}`;
              await trx("webhook_deliveries")
                .insert(
                  events.map((event) => ({
                    outbox_id: row.id,
                    account_id: row.account_id,
                    key_id: row.key_id,
                    aggregate_id: row.aggregate_id,
                    event: event.event,
                    url: key.callback_url,
                    body: callbackBody(event, requestId, row.created_at),
                    status: "pending",
                    attempts: 0,
                    next_attempt_at: at,
                    created_at: at,
                  })),
                )
                .onConflict(["outbox_id", "key_id", "event"])
                .ignore();
            }
          }
          // A disabled key's row also goes to every router (src/auth/revocation.ts).
          for (const topic of topicsOfRow(row.topic, accountTopic(row.account_id))) await pubsub.publish(topic, message);
          return true;
        });
        if (done) published += 1;
      } catch (error) {
        // Keep id order: stop here, this row is tried again next round.
        logger.error({ err: error, outbox_id: row.id }, "outbox publish failed");
        await db("outbox")
          .whereIn(
            "id",
            rows.slice(index).map((r) => r.id),
          )
          .andWhere("lease_until", lease)
          .whereNull("published_at")
          .update({ lease_until: null })
          .catch((err: unknown) => logger.error({ err }, "outbox lease release failed"));
        break;
      }
    }
    return published;
  }

  function retryDelay(attempts: number): number {
    const exponential = Math.min(options.retryBaseMs * 2 ** (attempts - 1), maxDelay);
    return Math.round(exponential * (0.8 + Math.random() * 0.4));
  }

  /** Sends one attempt of a delivery if this dispatcher wins its lease. @returns null when not leased */
  async function attempt(due: DueDelivery): Promise<"delivered" | "retry" | "failed" | null> {
    const startedAt = now();
    const startedIso = iso(startedAt);
    const lease = iso(startedAt + leaseMs);
    // Renew the claim's lease for this attempt (compare-and-swap on the claim's lease and attempt
    // count): it fails when the claim ran out and another dispatcher took the delivery meanwhile.
    const leased = await db("webhook_deliveries")
      .where({ id: due.id, status: "pending", attempts: due.attempts, lease_until: due.lease })
      .update({ lease_until: lease });
    if (leased !== 1) return null;

    const delivery = await db("webhook_deliveries as d")
      .leftJoin("api_keys as k", "k.id", "d.key_id")
      .where("d.id", due.id)
      .first("d.id", "d.url", "d.body", "d.event", "k.webhook_secret");

    let status: number | null = null;
    let error: string | null = null;
    const clock = performance.now();
    if (!delivery?.webhook_secret) {
      error = "API key has no webhook secret";
    } else {
      try {
        const response = await fetch(delivery.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "user-agent": "Switchyard-Webhooks/1",
            "x-service-signature": signWebhook(delivery.webhook_secret, delivery.body, Math.floor(now() / 1000)),
            "x-service-event": delivery.event,
            "x-service-delivery": String(delivery.id),
          },
          body: delivery.body,
          redirect: "manual",
          signal: AbortSignal.timeout(requestTimeoutMs),
        });
        status = response.status;
        await response.body?.cancel().catch(() => undefined);
        if (status < 200 || status > 299) error = `HTTP ${status}`;
      } catch (caught) {
        error = describeTransportError(caught, requestTimeoutMs);
      }
    }
    const durationMs = Math.round(performance.now() - clock);
    beat();
    const ok = error === null;
    const attempts = due.attempts + 1;
    const finishedAt = now();
    const outcome = ok ? "delivered" : attempts >= options.maxAttempts ? "failed" : "retry";
    const update =
      outcome === "delivered"
        ? { status: "delivered", attempts, next_attempt_at: null, lease_until: null, delivered_at: iso(finishedAt) }
        : outcome === "failed"
          ? { status: "failed", attempts, next_attempt_at: null, lease_until: null }
          : { status: "pending", attempts, next_attempt_at: iso(finishedAt + retryDelay(attempts)), lease_until: null };

    await db.transaction(async (trx) => {
      await trx("webhook_attempts").insert({ delivery_id: due.id, at: startedIso, status, error: error?.slice(0, 300) ?? null, duration_ms: durationMs });
      const updated = await trx("webhook_deliveries").where({ id: due.id, lease_until: lease, attempts: due.attempts }).update(update);
      if (updated !== 1) logger.warn({ delivery_id: due.id }, "webhook lease expired before the attempt was recorded");
    });
    // `event` in our log lines names a lifecycle event (`ready`); the callback's event type is `webhook_event`.
    const log = { delivery_id: due.id, webhook_event: delivery?.event, attempt: attempts, status, error, duration_ms: durationMs };
    if (outcome === "delivered") logger.info(log, "webhook delivered");
    else if (outcome === "failed") logger.warn(log, "webhook failed; no more retries");
    else logger.warn({ ...log, next_attempt_at: (update as { next_attempt_at: string }).next_attempt_at }, "webhook attempt failed; will retry");
    return outcome;
  }

  async function deliverBatch(): Promise<{ delivered: number; attempted: number; full: boolean }> {
    const claimedAt = now();
    const at = iso(claimedAt);
    const lease = iso(claimedAt + leaseMs);
    const due = await claimBatch<{ id: number | string; attempts: number | string; aggregate_id: string }>(
      db,
      "webhook_deliveries",
      (q) =>
        q
          .where("status", "pending")
          .andWhere("next_attempt_at", "<=", at)
          .andWhere((l) => l.whereNull("lease_until").orWhere("lease_until", "<=", at)),
      [{ column: "next_attempt_at" }, { column: "id" }],
      DELIVERY_BATCH,
      { lease_until: lease },
    );
    // One aggregate's deliveries go one after another, in order; different aggregates in parallel.
    const groups = new Map<string, DueDelivery[]>();
    for (const row of due) {
      const item: DueDelivery = { id: Number(row.id), attempts: Number(row.attempts), aggregate_id: row.aggregate_id, lease };
      const group = groups.get(item.aggregate_id);
      if (group) group.push(item);
      else groups.set(item.aggregate_id, [item]);
    }
    let delivered = 0;
    let attempted = 0;
    await Promise.all(
      [...groups.values()].map((group) =>
        limit(async () => {
          for (const item of group) {
            try {
              const outcome = await attempt(item);
              if (outcome !== null) attempted += 1;
              if (outcome === "delivered") delivered += 1;
            } catch (error) {
              logger.error({ err: error, delivery_id: item.id }, "webhook attempt could not be recorded");
            }
          }
        }),
      ),
    );
    return { delivered, attempted, full: due.length === DELIVERY_BATCH };
  }

  const inFlight = new Set<Promise<unknown>>();
  function track<T>(promise: Promise<T>): Promise<T> {
    inFlight.add(promise);
    promise.then(
      () => inFlight.delete(promise),
      () => inFlight.delete(promise),
    );
    return promise;
  }

  let lastFull = false;
  async function round(): Promise<RoundResult> {
    const published = await publishBatch();
    const { delivered, attempted, full } = await deliverBatch();
    lastFull = published === OUTBOX_BATCH || full;
    return { published, delivered, attempted };
  }

  let stopped = false;
  let looping = false;
  let wakeRequested = false;
  let timer: NodeJS.Timeout | undefined;

  function schedule(delay: number): void {
    if (stopped || options.intervalMs <= 0 || looping) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(tick, delay);
    timer.unref?.();
  }

  async function tick(): Promise<void> {
    timer = undefined;
    if (stopped) return;
    looping = true;
    wakeRequested = false;
    beat();
    try {
      await track(round());
    } catch (error) {
      logger.error({ err: error }, "dispatcher round failed");
      lastFull = false;
    } finally {
      looping = false;
      beat();
    }
    schedule(lastFull || wakeRequested ? 0 : options.intervalMs);
  }

  schedule(Math.min(Math.max(options.intervalMs, 0), 50));

  return {
    runOnce: () => track(round()),
    wake() {
      if (looping) wakeRequested = true;
      else schedule(0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    alive: () => !stopped && options.intervalMs > 0 && now() - lastBeat <= staleAfterMs,
  };
}

function describeTransportError(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `Timed out after ${timeoutMs} ms`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return cause ? `${e?.message ?? "fetch failed"}: ${cause}` : String(e?.message ?? error);
}
