/**
 * Failing a task by its deadline (docs/architecture.md §5): the recovery sweep's step
 * (../recovery.ts), which then watches the task for a late result.
 */
import type { Knex } from "knex";
import { appendOutbox } from "../../events/outbox.ts";
import { nowIso } from "../../db/index.ts";
import { settle, type TaskDeps } from "./deps.ts";
import { statusEvent, type TaskRecord } from "./records.ts";

/** The error of a task failed by its deadline (docs/architecture.md §5; src/generation/recovery.ts). */
export const DEADLINE_ERROR = "Generation timed out";

/**
 * Fails a task still open after its deadline: status 2, `Generation timed out`, the full refund
 * and the status event, in one transaction, by compare-and-swap on an open status (so it never
 * races the poller into two settlements). The task is then watched for a late result.
 * @param deps database and counters
 * @param task the open task past its deadline
 * @param lateCheckDelayMs milliseconds until the task is asked for a late result
 * @returns true when this call failed the task
 */
export async function expireTask(deps: Pick<TaskDeps, "db" | "counters">, task: TaskRecord, lateCheckDelayMs: number): Promise<boolean> {
  const expired = await deps.db.transaction(async (trx: Knex.Transaction) => {
    const now = nowIso();
    const refund = task.price - task.refunded;
    const updated = await trx("tasks")
      .where({ id: task.id, submit_state: "sent" })
      .whereIn("status", [0, 3, 4])
      .update({
        status: 2,
        error: DEADLINE_ERROR,
        refunded: task.price,
        expired_at: now,
        next_poll_at: new Date(Date.now() + lateCheckDelayMs).toISOString(),
        updated_at: now,
      });
    if (updated !== 1) return false;
    await settle(trx, task, { ...task, status: 2, refunded: task.price }, refund, DEADLINE_ERROR);
    await appendOutbox(trx, statusEvent({ ...task, status: 2, error: DEADLINE_ERROR, refunded: task.price, updatedAt: now }));
    return true;
  });
  if (expired) deps.counters?.finished(task.modelId, "expired");
  return expired;
}
