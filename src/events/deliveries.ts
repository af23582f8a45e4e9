/**
 * Reading and re-sending webhook deliveries (docs/api/cloud.md §6; docs/architecture.md §6.5):
 * every attempt of a delivery is visible, and a delivery can be sent again.
 */
import { AppError } from "../errors.ts";
import type { Db } from "../db/index.ts";
import { bySerial, firstRowsByParent } from "../pagination.ts";
import { parseInteger } from "../integers.ts";

/** One recorded attempt of a delivery. */
export interface WebhookAttemptRecord {
  /** When the attempt started, ISO 8601. */
  at: string;
  /** The HTTP status answered; null on a transport error or timeout. */
  status: number | null;
  /** Why it failed (`HTTP 500`, `Timed out after 10000 ms`, ...); null on success. */
  error: string | null;
  durationMs: number | null;
}

/** A callback delivery with its attempts (oldest first). Times are ISO 8601. */
export interface WebhookDeliveryRecord {
  /** Also the `X-Service-Delivery` header value. */
  id: number;
  outboxId: number;
  accountId: string;
  keyId: string;
  /** The task or order the event is about. */
  aggregateId: string;
  event: string;
  url: string;
  /** The exact JSON body sent. */
  body: string;
  status: "pending" | "delivered" | "failed";
  /** Attempts since the delivery was created or last re-sent. */
  attemptCount: number;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
  /** Every attempt ever made, re-sends included, oldest first. */
  attempts: WebhookAttemptRecord[];
}

/** A `webhook_deliveries` row (`id`, `outbox_id` bigint: strings on PostgreSQL). */
export interface DeliveryRow {
  id: number | string;
  outbox_id: number | string;
  account_id: string;
  key_id: string;
  aggregate_id: string;
  event: string;
  url: string;
  body: string;
  status: WebhookDeliveryRecord["status"];
  attempts: number | string;
  next_attempt_at: string | null;
  created_at: string;
  delivered_at: string | null;
}

function toDeliveryRecord(row: DeliveryRow, attempts: WebhookAttemptRecord[]): WebhookDeliveryRecord {
  return {
    id: Number(row.id),
    outboxId: Number(row.outbox_id),
    accountId: row.account_id,
    keyId: row.key_id,
    aggregateId: row.aggregate_id,
    event: row.event,
    url: row.url,
    body: row.body,
    status: row.status,
    attemptCount: Number(row.attempts),
    nextAttemptAt: row.next_attempt_at ?? null,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at ?? null,
    attempts,
  };
}

/**
 * Deliveries with every attempt, in one statement over `webhook_attempts` whatever their number.
 * @param rows `webhook_deliveries` rows as read
 * @returns one record per row, in the order of `rows`
 */
export async function withAttempts(db: Db, rows: DeliveryRow[]): Promise<WebhookDeliveryRecord[]> {
  if (rows.length === 0) return [];
  const attemptRows = await db("webhook_attempts")
    .whereIn(
      "delivery_id",
      rows.map((r) => r.id),
    )
    .orderBy("id");
  const byDelivery = new Map<number, WebhookAttemptRecord[]>();
  for (const a of attemptRows) {
    const list = byDelivery.get(Number(a.delivery_id)) ?? [];
    list.push({
      at: a.at,
      status: a.status == null ? null : Number(a.status),
      error: a.error ?? null,
      durationMs: a.duration_ms == null ? null : Number(a.duration_ms),
    });
    byDelivery.set(Number(a.delivery_id), list);
  }
  return rows.map((r) => toDeliveryRecord(r, byDelivery.get(Number(r.id)) ?? []));
}

/** A delivery id (a serial: PostgreSQL `integer`) as given, or null: decimal digits only, 1 to 2^31 - 1. */
function parseDeliveryId(value: number | string): number | null {
  return parseInteger(String(value), { min: 1, max: 2 ** 31 - 1 });
}

/**
 * Lists an account's callback deliveries, newest first, each with every attempt (issue 3 item 9:
 * every attempt visible in GraphQL).
 * @param filter `accountId`; `aggregateId` (a task or order id) narrows it; `first` 1-100
 *   (clamped; fetch `first + 1` to learn whether more follow); `after` the id of the last delivery
 *   of the previous page
 * @returns at most `first` deliveries, newest first
 * @throws AppError `invalid_request` for an `after` that is not a delivery id
 */
export async function listDeliveries(
  db: Db,
  filter: { accountId: string; aggregateId?: string | null; first: number; after?: number | string | null },
): Promise<WebhookDeliveryRecord[]> {
  const first = Math.min(Math.max(Math.trunc(filter.first) || 20, 1), 100);
  const query = db("webhook_deliveries").where("account_id", filter.accountId);
  if (filter.aggregateId) query.andWhere("aggregate_id", filter.aggregateId);
  if (filter.after !== undefined && filter.after !== null && filter.after !== "") {
    const after = parseDeliveryId(filter.after);
    if (after === null) throw new AppError("invalid_request", "after is not a valid cursor", { field: "after" });
    query.andWhere("id", "<", after);
  }
  return withAttempts(db, await query.orderBy("id", "desc").limit(first));
}

/**
 * The newest deliveries of many tasks or orders of one account, each with every attempt, in two
 * SQL statements whatever their number (GraphQL `Order.deliveries`, batched per request): what
 * {@link listDeliveries} with `aggregateId` returns for each.
 * @param aggregateIds task or order ids (duplicates allowed)
 * @param first deliveries per aggregate, 1-100 (clamped, as {@link listDeliveries})
 * @returns each aggregate's deliveries, newest first (an empty list for one without deliveries)
 */
export async function listDeliveriesOfAggregates(
  db: Db,
  accountId: string,
  aggregateIds: readonly string[],
  first: number,
): Promise<Map<string, WebhookDeliveryRecord[]>> {
  const size = Math.min(Math.max(Math.trunc(first) || 20, 1), 100);
  const rowsById = await firstRowsByParent<DeliveryRow>(
    db,
    db("webhook_deliveries").select("*").where("account_id", accountId),
    "aggregate_id",
    aggregateIds,
    bySerial(),
    size,
  );
  const rows = [...rowsById.values()].flat();
  const records = await withAttempts(db, rows);
  const byRow = new Map(rows.map((row, i) => [row, records[i]!]));
  return new Map([...rowsById].map(([id, list]) => [id, list.map((row) => byRow.get(row)!)]));
}

/**
 * Reads one delivery with its attempts.
 * @param accountId when given, a delivery of another account is not found
 * @throws AppError `not_found` (404) when there is no such delivery (for that account)
 */
export async function getDelivery(db: Db, deliveryId: number | string, accountId?: string): Promise<WebhookDeliveryRecord> {
  const id = parseDeliveryId(deliveryId);
  const query = db("webhook_deliveries").where("id", id ?? -1);
  if (accountId) query.andWhere("account_id", accountId);
  const row = id === null ? undefined : await query.first();
  if (!row) throw new AppError("not_found", "Webhook delivery not found");
  return (await withAttempts(db, [row]))[0]!;
}

/**
 * Re-sends a delivery (issue 3 item 9: a CLI verb re-sends a delivery). A `delivered` or
 * `failed` delivery goes back to `pending`, due now, with its attempt count reset so the full
 * retry policy applies again (its earlier attempts stay in the log); a `pending` one is just
 * made due now. The dispatcher sends it at its next round.
 * @param deliveryId the delivery id (`X-Service-Delivery`)
 * @param accountId when given, a delivery of another account is not found
 * @param nowMs the clock, epoch milliseconds (default `Date.now()`)
 * @returns the delivery after the change
 * @throws AppError `not_found` (404) when there is no such delivery (for that account)
 */
export async function resendDelivery(db: Db, deliveryId: number | string, accountId?: string, nowMs: number = Date.now()): Promise<WebhookDeliveryRecord> {
  const current = await getDelivery(db, deliveryId, accountId);
  const at = new Date(nowMs).toISOString();
  if (current.status === "pending") {
    await db("webhook_deliveries").where({ id: current.id, status: "pending" }).update({ next_attempt_at: at });
  } else {
    await db("webhook_deliveries")
      .where({ id: current.id, status: current.status })
      .update({ status: "pending", attempts: 0, next_attempt_at: at, lease_until: null, delivered_at: null });
  }
  return getDelivery(db, current.id, accountId);
}
