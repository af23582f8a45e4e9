/**
 * The submission's debit on PostgreSQL in one statement (issue 25 §2; ADR 0027; docs/architecture.md
 * §5): the balance update, its ledger entry, the key's running totals, the task row and its outbox
 * row as data-modifying CTEs of one autocommit statement: one round trip and one commit, atomic as
 * the transaction it replaces. SQLite keeps the group commit (submit.ts, ADR 0011).
 *
 * Each write takes its rows from the one before it, so when the balance does not cover the price
 * nothing at all is written. The rules are the ledger's own (src/ledger/index.ts `debit`, totals.ts).
 */
import type { Knex } from "knex";
import { AppError } from "../../errors.ts";
import { fitText } from "../../db/index.ts";
import { statementBatcherPerDb } from "../../db/batch.ts";
import { assertPositive } from "../../ledger/index.ts";
import { spentDelta, taskUnits } from "../../ledger/totals.ts";
import { outboxInsertSql, outboxValues, type OutboxEvent } from "../../events/outbox.ts";
import type { TaskRecord } from "./records.ts";

/** The `tasks` row submit.ts builds (the columns a new task sets). */
export interface NewTaskRow {
  id: string;
  account_id: string;
  key_id: string;
  kind: string;
  model_id: number;
  prompt: string;
  request: string;
  count: number;
  seconds: number | null;
  resolution: string | null;
  size: string | null;
  price: number;
  deadline_at: string;
  created_at: string;
}

// Every parameter is cast: in INSERT … SELECT an untyped parameter would be text.
// The task's key_id comes from the key's totals update: were the key's row missing, the insert
// would break NOT NULL and the whole statement (debit and ledger entry too) roll back, as the
// transaction's "running total: no api_keys row" error did.
const SUBMIT_SQL = `with debited as (
  update accounts set balance = balance - ?::bigint
  where id = ? and balance - ?::bigint >= -credit_line
  returning balance
), entry as (
  insert into ledger_entries (account_id, customer_id, key_id, kind, amount, balance_after, ref, task_id, order_id, reason, created_at)
  select ?::varchar, null, ?::varchar, 'debit', ?::bigint, balance, ?::varchar, ?::varchar, null, ?::varchar, ?::varchar from debited
  returning id
), totals as (
  update api_keys set spent = spent + ?::bigint, billed_seconds = billed_seconds + ?::bigint,
    billed_images = billed_images + ?::bigint, task_count = task_count + 1
  where id = ? and exists (select 1 from entry)
  returning id
), task as (
  insert into tasks (id, account_id, key_id, kind, model_id, prompt, request, status, submit_state, count, seconds,
    resolution, size, price, refunded, deadline_at, created_at, updated_at)
  select ?::varchar, ?::varchar, totals.id, ?::varchar, ?::integer, ?::text, ?::text, 0, 'pending', ?::integer, ?::integer,
    ?::varchar, ?::varchar, ?::bigint, 0, ?::varchar, ?::varchar, ?::varchar
  from debited left join totals on true
  returning id
), event as (
  ${outboxInsertSql("task")}
  returning id
)
select balance from debited`;

/**
 * Debits a new task's price and writes its ledger entry, key totals, task row and outbox event in
 * one autocommit statement on PostgreSQL (see the file comment).
 * @param db the PostgreSQL database (not a transaction: the statement commits by itself)
 * @param row the new task row; `task` the same as a record; `event` its outbox event
 * @param reason the ledger entry's reason
 * @returns the balance after the debit, in milli-yuan, once committed
 * @throws AppError `insufficient_balance` (402) when the balance and credit line do not cover the price
 *   (nothing written); RangeError when the price is not a positive whole number of milli-yuan;
 *   the database's error (unique ref, missing key) with nothing written
 */
export async function debitNewTask(db: Knex, row: NewTaskRow, task: TaskRecord, event: OutboxEvent, reason: string): Promise<number> {
  // As the ledger's debit: a positive whole number of milli-yuan, or nothing is sent.
  const amount = assertPositive(row.price);
  const units = taskUnits(task);
  const now = row.created_at;
  const result = await db.raw(SUBMIT_SQL, [
    // debited
    amount,
    row.account_id,
    amount,
    // entry
    row.account_id,
    row.key_id,
    -amount,
    `task:${row.id}:debit`,
    row.id,
    fitText(reason, 200),
    now,
    // totals
    spentDelta("debit", -amount, null),
    units.billedSeconds,
    units.billedImages,
    row.key_id,
    // task
    row.id,
    row.account_id,
    row.kind,
    row.model_id,
    row.prompt,
    row.request,
    row.count,
    row.seconds,
    row.resolution,
    row.size,
    amount,
    row.deadline_at,
    now,
    now,
    // event
    ...outboxValues(event, now),
  ]);
  const answer = (result as { rows: { balance: number }[] }).rows[0];
  if (!answer) throw new AppError("insufficient_balance");
  return Number(answer.balance);
}

/** One recorded upstream acceptance: the `tasks` columns markSent sets, and the state it swaps from. */
export interface SentRecord {
  id: string;
  from: "pending" | "resending";
  upstreamTaskId: string;
  /** Null: the channel columns stay as they are. */
  channelId: string | null;
  channelAttempts: string | null;
  nextPollAt: string;
  updatedAt: string;
}

// One fixed text for any number of rows (arrays, not a VALUES list per batch size). Each row is a
// compare-and-swap on its own submit state, as the one-row UPDATE it replaces.
const MARK_SENT_SQL = `update tasks as t set upstream_task_id = v.upstream_task_id,
  channel_id = case when v.channel_id is null then t.channel_id else v.channel_id end,
  channel_attempts = case when v.channel_id is null then t.channel_attempts else v.channel_attempts end,
  submit_state = 'sent', next_poll_at = v.next_poll_at, updated_at = v.updated_at
from unnest(?::varchar[], ?::varchar[], ?::varchar[], ?::varchar[], ?::text[], ?::varchar[], ?::varchar[])
  as v(id, from_state, upstream_task_id, channel_id, channel_attempts, next_poll_at, updated_at)
where t.id = v.id and t.submit_state = v.from_state
returning t.id`;

const sentBatcher = statementBatcherPerDb(markSentRows, (record: SentRecord) => record.id);

/**
 * Records upstream acceptances on PostgreSQL, many per statement (issue 25 §2, ADR 0032; the
 * queue is src/db/batch.ts): under no load a call is its own statement, under load one autocommit
 * statement and one connection checkout serve every call queued meanwhile. Each call resolves
 * once the statement that holds it has committed.
 * @param db the PostgreSQL database
 * @param record the task, the submit state swapped from and the columns set
 * @returns true when this call moved the task from `record.from` to `sent`
 * @throws the database's error, for every call of the failed statement (none of them written)
 */
export function markSentBatched(db: Knex, record: SentRecord): Promise<boolean> {
  return sentBatcher(db, record);
}

/** One MARK_SENT_SQL statement for `records` (distinct tasks). @returns whether each moved to `sent` */
async function markSentRows(db: Knex, records: SentRecord[]): Promise<boolean[]> {
  // node-postgres sends a JS array as a PostgreSQL array, nulls included (knex's type knows no nulls in arrays).
  const column = <K extends keyof SentRecord>(k: K) => records.map((r) => r[k]) as string[];
  const result = (await db.raw(MARK_SENT_SQL, [
    column("id"),
    column("from"),
    column("upstreamTaskId"),
    column("channelId"),
    column("channelAttempts"),
    column("nextPollAt"),
    column("updatedAt"),
  ])) as { rows: { id: string }[] };
  const updated = new Set(result.rows.map((r) => r.id));
  return records.map((r) => updated.has(r.id));
}
