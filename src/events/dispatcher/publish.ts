/**
 * Step 1 of a dispatcher round: publishing outbox rows (docs/architecture.md §6 events, §8.4
 * callbacks). The batch is claimed with a lease ({@link OUTBOX_LEASE_MS}; `FOR UPDATE SKIP
 * LOCKED` on PostgreSQL, see `claimBatch`), so dispatchers of several instances take different
 * rows; each row is then published in its own transaction (see {@link publishRow}).
 */
import { claimBatch } from "../../db/index.ts";
import { topicsOfRow } from "../key-topics.ts";
import { accountTopic, type OutboxMessage } from "../pubsub.ts";
import { callbackBody, callbackEventsFor } from "../callbacks.ts";
import { iso, type DispatcherDeps } from "./deps.ts";

/** Outbox rows claimed per round. */
export const OUTBOX_BATCH = 200;
/** How long a claimed outbox batch is leased to one dispatcher (publishing it takes far less). */
export const OUTBOX_LEASE_MS = 10_000;

/** An `outbox` row (`payload` as JSON text; `id` bigint: a string on PostgreSQL). */
export interface OutboxRow {
  id: number | string;
  topic: string;
  account_id: string;
  aggregate_id: string;
  payload: string;
  created_at: string;
  key_id: string | null;
  request_id: string | null;
}

/**
 * The message an outbox row is published as ({@link OutboxMessage}); a payload that is not JSON
 * is logged and published empty.
 * @param deps the logger
 * @param row the claimed row
 * @returns the message for `account:<accountId>` (and `keys` for a `key.disabled` row)
 */
export function messageOf(deps: Pick<DispatcherDeps, "logger">, row: OutboxRow): OutboxMessage {
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(row.payload);
  } catch {
    deps.logger.error({ outbox_id: row.id }, "outbox payload is not JSON; published with an empty payload");
    payload = {};
  }
  return {
    id: Number(row.id),
    topic: row.topic,
    accountId: row.account_id,
    aggregateId: row.aggregate_id,
    payload,
    createdAt: row.created_at,
    keyId: row.key_id ?? null,
    requestId: row.request_id ?? null,
  };
}

/**
 * Publishes one claimed row in one transaction: marks it published (compare-and-swap on
 * `published_at` and on this dispatcher's lease, so two dispatchers never both publish it),
 * creates its callback deliveries (callbacks.ts `callbackEventsFor`; the body stored once, so
 * every attempt signs and sends the same bytes), publishes it, then commits.
 * @param deps database, pub/sub, clock
 * @param row the claimed row
 * @param message its message ({@link messageOf})
 * @param lease the `lease_until` this dispatcher set when it claimed the batch
 * @returns false when the lease ran out and another dispatcher has the row
 * @throws what the publish or the database throws (the transaction is rolled back)
 */
export async function publishRow(deps: DispatcherDeps, row: OutboxRow, message: OutboxMessage, lease: string): Promise<boolean> {
  return deps.db.transaction(async (trx) => {
    const at = iso(deps.now());
    const claimed = await trx("outbox").where({ id: row.id, lease_until: lease }).whereNull("published_at").update({ published_at: at, lease_until: null });
    if (claimed !== 1) return false; // our lease ran out and another dispatcher has it
    const events = row.key_id ? callbackEventsFor(row.topic, message.payload) : [];
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
    // A disabled key's row also goes to every router (src/events/key-topics.ts).
    for (const topic of topicsOfRow(row.topic, accountTopic(row.account_id))) await deps.pubsub.publish(topic, message);
    return true;
  });
}

/**
 * Claims up to {@link OUTBOX_BATCH} unpublished rows and publishes them in id order. A publish
 * that fails stops the batch (id order is kept): it is logged, and the rest of the batch is
 * released for the next round (at-least-once).
 * @param deps database, logger, pub/sub, clock
 * @returns how many rows this call published
 */
export async function publishBatch(deps: DispatcherDeps): Promise<number> {
  const { db, logger } = deps;
  const claimedAt = deps.now();
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
    const message = messageOf(deps, row);
    try {
      if (await publishRow(deps, row, message, lease)) published += 1;
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
