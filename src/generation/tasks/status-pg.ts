/**
 * A task's status change that moves no money, on PostgreSQL in one statement (issue 25 §2, ADR
 * 0032): the compare-and-swap UPDATE of the task and its outbox row as a data-modifying CTE of one
 * autocommit statement (one round trip and one commit instead of BEGIN, UPDATE, INSERT, COMMIT).
 * The outbox row is written only from the row the UPDATE returned, so a lost compare-and-swap
 * writes nothing at all, as the transaction it replaces. Changes that refund, move a key's billed
 * units or a channel's usage keep the transaction (apply-state.ts).
 */
import type { Knex } from "knex";
import { outboxInsertSql, outboxValues, type OutboxEvent } from "../../events/outbox.ts";
import type { TaskStatusCode } from "../upstream/types.ts";

/** The `tasks` columns a money-free status change sets. */
export interface StatusChange {
  status: TaskStatusCode;
  result: string | null;
  images: string | null;
  error: string | null;
  generated_images: number | null;
  refunded: number;
  next_poll_at: string | null;
  updated_at: string;
}

// Every parameter is cast: in INSERT … SELECT an untyped parameter would be text.
const CHANGE_SQL = `with changed as (
  update tasks set status = ?::integer, result = ?::text, images = ?::text, error = ?::text, generated_images = ?::integer,
    refunded = ?::bigint, next_poll_at = ?::varchar, updated_at = ?::varchar
  where id = ? and status = ?::integer
  returning id
), event as (
  ${outboxInsertSql("changed")}
  returning id
)
select count(*)::integer as changed from event`;

/**
 * Moves a task from `fromStatus` to the change's status and writes its outbox event, in one
 * autocommit statement on PostgreSQL (see the file comment).
 * @param db the PostgreSQL database (not a transaction: the statement commits by itself)
 * @param taskId the task; `fromStatus` the status the caller read (compare-and-swap)
 * @param change the columns set; `event` the status event announced with it
 * @returns true when this call changed the task (false: another poller did first; nothing written)
 * @throws the database's error, with nothing written
 */
export async function changeStatusOneStatement(db: Knex, taskId: string, fromStatus: number, change: StatusChange, event: OutboxEvent): Promise<boolean> {
  const result = (await db.raw(CHANGE_SQL, [
    change.status,
    change.result,
    change.images,
    change.error,
    change.generated_images,
    change.refunded,
    change.next_poll_at,
    change.updated_at,
    taskId,
    fromStatus,
    ...outboxValues(event, change.updated_at),
  ])) as { rows: { changed: number }[] };
  return result.rows[0]?.changed === 1;
}
