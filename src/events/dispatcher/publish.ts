/**
 * Step 1 of a dispatcher round: publishing outbox rows (docs/architecture.md §6 events, §8.4
 * callbacks). The batch is claimed with a lease ({@link OUTBOX_LEASE_MS}; `FOR UPDATE SKIP
 * LOCKED` on PostgreSQL, see `claimBatch`), so dispatchers of several instances take different
 * rows; the batch is then published in one transaction (see {@link publishRows}).
 */
import type { Knex } from "knex";
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
 * Publishes a claimed batch in one transaction (issue 25 §2: one commit per batch, not per row):
 * marks the rows published in one UPDATE (compare-and-swap on `published_at` and on this
 * dispatcher's lease, so two dispatchers never both publish a row), publishes them in id order
 * (all sent at once: one connection keeps their order), creates the callback deliveries of the
 * published ones (callbacks.ts `callbackEventsFor`; the body stored once, so every attempt signs
 * and sends the same bytes), then commits. A publish that fails ends the batch there: that row and
 * the ones after it go back unpublished and unleased, for the next round (at-least-once).
 * @param deps database, logger, pub/sub, clock
 * @param rows the claimed rows, in id order
 * @param lease the `lease_until` this dispatcher set when it claimed them
 * @returns how many rows this call published (a row whose lease ran out is another dispatcher's)
 * @throws what the database throws (the transaction is rolled back, nothing of it marked)
 */
export async function publishRows(deps: DispatcherDeps, rows: readonly OutboxRow[], lease: string): Promise<number> {
  return deps.db.transaction(async (trx) => {
    const at = iso(deps.now());
    const won: { id: number | string }[] = await trx("outbox")
      .whereIn(
        "id",
        rows.map((row) => row.id),
      )
      .andWhere("lease_until", lease)
      .whereNull("published_at")
      .update({ published_at: at, lease_until: null })
      .returning("id");
    const ours = new Set(won.map((row) => String(row.id)));
    const claimed = rows.filter((row) => ours.has(String(row.id)));
    const messages = claimed.map((row) => messageOf(deps, row));
    // A disabled key's row also goes to every router (src/events/key-topics.ts).
    const outcomes = await Promise.allSettled(
      claimed.map((row, i) => Promise.all(topicsOfRow(row.topic, accountTopic(row.account_id)).map((topic) => deps.pubsub.publish(topic, messages[i]!)))),
    );
    let published = outcomes.findIndex((outcome) => outcome.status === "rejected");
    if (published === -1) published = claimed.length;
    else {
      // Keep id order: this row and the rest are tried again next round.
      deps.logger.error({ err: (outcomes[published] as PromiseRejectedResult).reason, outbox_id: claimed[published]!.id }, "outbox publish failed");
      await trx("outbox")
        .whereIn(
          "id",
          claimed.slice(published).map((row) => row.id),
        )
        .update({ published_at: null, lease_until: null });
    }
    await insertDeliveries(trx, claimed.slice(0, published), messages, at);
    return published;
  });
}

/** The callback deliveries of published rows whose key has a callback URL: one read of the keys, one insert. */
async function insertDeliveries(trx: Knex.Transaction, rows: readonly OutboxRow[], messages: readonly OutboxMessage[], at: string): Promise<void> {
  const wanted = rows
    .map((row, i) => ({ row, events: row.key_id ? callbackEventsFor(row.topic, messages[i]!.payload) : [] }))
    .filter((w) => w.events.length > 0);
  if (wanted.length === 0) return;
  const keys: { id: string; callback_url: string | null }[] = await trx("api_keys")
    .whereIn("id", [...new Set(wanted.map((w) => w.row.key_id!))])
    .select("id", "callback_url");
  const urls = new Map(keys.map((key) => [key.id, key.callback_url]));
  const deliveries = wanted.flatMap(({ row, events }) => {
    const url = urls.get(row.key_id!);
    if (!url) return [];
    const requestId = row.request_id ?? `evt_${row.id}`;
    return events.map((event) => ({
      outbox_id: row.id,
      account_id: row.account_id,
      key_id: row.key_id,
      aggregate_id: row.aggregate_id,
      event: event.event,
      url,
      body: callbackBody(event, requestId, row.created_at),
      status: "pending",
      attempts: 0,
      next_attempt_at: at,
      created_at: at,
    }));
  });
  if (deliveries.length === 0) return;
  await trx("webhook_deliveries").insert(deliveries).onConflict(["outbox_id", "key_id", "event"]).ignore();
}

/**
 * Claims up to {@link OUTBOX_BATCH} unpublished rows and publishes them in id order, in one
 * transaction ({@link publishRows}). A publish that fails stops the batch (id order is kept): it
 * is logged, and the rest of the batch is released for the next round (at-least-once).
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
  if (rows.length === 0) return 0;
  try {
    return await publishRows(deps, rows, lease);
  } catch (error) {
    logger.error({ err: error }, "outbox publish failed");
    await db("outbox")
      .whereIn(
        "id",
        rows.map((r) => r.id),
      )
      .andWhere("lease_until", lease)
      .whereNull("published_at")
      .update({ lease_until: null })
      .catch((err: unknown) => logger.error({ err }, "outbox lease release failed"));
    return 0;
  }
}
