/**
 * The outbox (docs/architecture.md §6): every observable state change is written here in the same transaction
 * as the change, and published after the commit by the dispatcher.
 */
import { EventEmitter } from "node:events";
import type { Knex } from "knex";
import { fitText, nowIso } from "../db/index.ts";

/**
 * Emits `committed` after a transaction that wrote outbox rows commits, so the dispatcher of this
 * process publishes at once instead of on its next tick (other processes still poll).
 */
export const outboxSignal = new EventEmitter();
outboxSignal.setMaxListeners(0);

/** An event to publish once the transaction that wrote it commits. */
export interface OutboxEvent {
  /** For example `task.status_changed`, `order.paid`. */
  topic: string;
  /** The account whose subscribers may see the event. */
  accountId: string;
  /** The task or order the event is about. */
  aggregateId: string;
  payload: Record<string, unknown>;
  /** The key whose callback URL receives the event (none: not delivered as a callback). */
  keyId?: string | null;
  /** The request that caused the event, echoed as the callback's `request_id`. */
  requestId?: string | null;
}

/**
 * The outbox insert of a one-statement write on PostgreSQL (a data-modifying CTE): `insert … select
 * <values> from <source>`, so the event is written only for the row the statement's `source` returned.
 * Its parameters are {@link outboxValues}, in order.
 * @param source the CTE whose returned row the event belongs to
 */
export function outboxInsertSql(source: string): string {
  return `insert into outbox (topic, account_id, aggregate_id, payload, key_id, request_id, created_at)
  select ?::varchar, ?::varchar, ?::varchar, ?::text, ?::varchar, ?::varchar, ?::varchar from ${source}`;
}

/**
 * The parameters of {@link outboxInsertSql}, as {@link appendOutbox} stores them.
 * @param at the row's `created_at`, ISO 8601
 */
export function outboxValues(event: OutboxEvent, at: string): Knex.Value[] {
  return [event.topic, event.accountId, event.aggregateId, JSON.stringify(event.payload), event.keyId ?? null, fitText(event.requestId, 80), at];
}

/**
 * Appends an event to the outbox inside the caller's transaction.
 * @returns nothing; the row becomes visible only if the transaction commits
 */
export async function appendOutbox(trx: Knex.Transaction, event: OutboxEvent): Promise<void> {
  await trx("outbox").insert({
    topic: event.topic,
    account_id: event.accountId,
    aggregate_id: event.aggregateId,
    payload: JSON.stringify(event.payload),
    key_id: event.keyId ?? null,
    request_id: fitText(event.requestId, 80),
    created_at: nowIso(),
  });
  // After the commit only: a rolled-back change must never be announced.
  trx.executionPromise?.then(
    () => outboxSignal.emit("committed"),
    () => undefined,
  );
}
