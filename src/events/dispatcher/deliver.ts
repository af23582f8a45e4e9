/**
 * Step 2 of a dispatcher round: delivering due callbacks (docs/api/cloud.md §6; docs/architecture.md
 * §8.4). A batch of due deliveries is claimed with a lease on `lease_until`; each attempt renews the
 * lease with a compare-and-swap on it (and on the attempt count), so two dispatchers never send
 * the same attempt; then it is POSTed to the key's callback URL with `X-Service-Signature`,
 * `X-Service-Event` and `X-Service-Delivery`. A 2xx answer delivers it; anything else (status,
 * transport error, timeout) schedules a retry ({@link retryDelay}) until `maxAttempts` attempts,
 * then the delivery is `failed`. Every attempt is recorded in `webhook_attempts`.
 */
import { claimBatch } from "../../db/index.ts";
import { signWebhook } from "../webhook-signing.ts";
import { iso, type DispatcherDeps } from "./deps.ts";

/** Deliveries claimed per round. */
export const DELIVERY_BATCH = 100;

/** A claimed delivery. */
export interface DueDelivery {
  id: number;
  attempts: number;
  aggregate_id: string;
  /** The `lease_until` this dispatcher set when it claimed the delivery. */
  lease: string;
}

/** What one attempt came to; null when another dispatcher holds the delivery. */
export type AttemptOutcome = "delivered" | "retry" | "failed" | null;

/**
 * The wait before the next attempt: `retryBaseMs × 2^(attempts-1)`, at most `maxRetryDelayMs`,
 * ±20% jitter.
 * @param deps the retry policy
 * @param attempts attempts made so far (1 after the first)
 * @returns milliseconds
 */
export function retryDelay(deps: Pick<DispatcherDeps, "retryBaseMs" | "maxRetryDelayMs">, attempts: number): number {
  const exponential = Math.min(deps.retryBaseMs * 2 ** (attempts - 1), deps.maxRetryDelayMs);
  return Math.round(exponential * (0.8 + Math.random() * 0.4));
}

/**
 * Sends one attempt of a delivery if this dispatcher wins its lease, records it in
 * `webhook_attempts` and moves the delivery (delivered, retry later, or failed), and logs it.
 * Signature: `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(webhook_secret, "<t>.<raw body>")>`
 * with the key's current `webhook_secret` (docs/architecture.md §8).
 * @param deps database, logger, clock, request timeout, retry policy, lease, heartbeat
 * @param due the claimed delivery
 * @returns the outcome; null when not leased (nothing sent)
 * @throws what the database throws while recording the attempt
 */
export async function attemptDelivery(deps: DispatcherDeps, due: DueDelivery): Promise<AttemptOutcome> {
  const { db, logger, now } = deps;
  const startedAt = now();
  const startedIso = iso(startedAt);
  const lease = iso(startedAt + deps.deliveryLeaseMs);
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
        signal: AbortSignal.timeout(deps.requestTimeoutMs),
      });
      status = response.status;
      await response.body?.cancel().catch(() => undefined);
      if (status < 200 || status > 299) error = `HTTP ${status}`;
    } catch (caught) {
      error = describeTransportError(caught, deps.requestTimeoutMs);
    }
  }
  const durationMs = Math.round(performance.now() - clock);
  deps.beat();
  const ok = error === null;
  const attempts = due.attempts + 1;
  const finishedAt = now();
  const outcome = ok ? "delivered" : attempts >= deps.maxAttempts ? "failed" : "retry";
  const update =
    outcome === "delivered"
      ? { status: "delivered", attempts, next_attempt_at: null, lease_until: null, delivered_at: iso(finishedAt) }
      : outcome === "failed"
        ? { status: "failed", attempts, next_attempt_at: null, lease_until: null }
        : { status: "pending", attempts, next_attempt_at: iso(finishedAt + retryDelay(deps, attempts)), lease_until: null };

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

/**
 * Claims up to {@link DELIVERY_BATCH} due deliveries and attempts them: one aggregate's
 * deliveries one after another, in order; different aggregates in parallel (at most `deps.limit`).
 * An attempt that cannot be recorded is logged and left to its lease.
 * @param deps see {@link attemptDelivery}
 * @returns deliveries answered with a 2xx, requests sent, and whether the batch was full
 */
export async function deliverBatch(deps: DispatcherDeps): Promise<{ delivered: number; attempted: number; full: boolean }> {
  const claimedAt = deps.now();
  const at = iso(claimedAt);
  const lease = iso(claimedAt + deps.deliveryLeaseMs);
  const due = await claimBatch<{ id: number | string; attempts: number | string; aggregate_id: string }>(
    deps.db,
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
      deps.limit(async () => {
        for (const item of group) {
          try {
            const outcome = await attemptDelivery(deps, item);
            if (outcome !== null) attempted += 1;
            if (outcome === "delivered") delivered += 1;
          } catch (error) {
            deps.logger.error({ err: error, delivery_id: item.id }, "webhook attempt could not be recorded");
          }
        }
      }),
    ),
  );
  return { delivered, attempted, full: due.length === DELIVERY_BATCH };
}

/**
 * The `webhook_attempts.error` text of a failed request.
 * @param error what `fetch` threw
 * @param timeoutMs the request's time limit, named in a timeout's text
 * @returns `Timed out after <n> ms`, or the message with its cause's code
 */
export function describeTransportError(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `Timed out after ${timeoutMs} ms`;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return cause ? `${e?.message ?? "fetch failed"}: ${cause}` : String(e?.message ?? error);
}
