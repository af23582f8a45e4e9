/**
 * Settling a task from what the upstream reports (docs/architecture.md §5, §3.7; ADR 0023): the
 * poller's step (../poller.ts).
 */
import type { Knex } from "knex";
import { appendOutbox, outboxSignal, type OutboxEvent } from "../../events/outbox.ts";
import { isSqlite, nowIso } from "../../db/index.ts";
import { taskUnitsDelta } from "../../ledger/totals.ts";
import { getModel } from "../catalog.ts";
import { priceOf } from "../pricing.ts";
import { imagesOf, type TaskStatusCode, type UpstreamTaskState } from "../upstream/types.ts";
import { addProviderUsage } from "../channels/store.ts";
import { settle, type TaskDeps } from "./deps.ts";
import { isTerminal, statusEvent, type TaskRecord } from "./records.ts";
import { changeStatusOneStatement, type StatusChange } from "./status-pg.ts";

/**
 * Applies what the upstream reports to a task (the poller's step). Moves the status with a
 * compare-and-swap on the old status, so two pollers can never both settle a task; a terminal
 * state settles the money in the same transaction: full refund on status 2 (or a success
 * without results), image tasks charged only for the images generated.
 * @param deps database and counters
 * @param task the task as the poller claimed it
 * @param state the upstream's report
 * @param pollIntervalMs milliseconds until an open task is asked again
 * @returns true when this call changed the task
 */
export async function applyUpstreamState(
  deps: Pick<TaskDeps, "db" | "counters">,
  task: TaskRecord,
  state: UpstreamTaskState,
  pollIntervalMs: number,
): Promise<boolean> {
  const { db } = deps;
  const now = nowIso();
  const nextPoll = new Date(Date.now() + pollIntervalMs).toISOString();
  if (state.status === task.status) {
    await db("tasks").where({ id: task.id, status: task.status }).update({ next_poll_at: nextPoll });
    return false;
  }
  let next: Partial<TaskRecord> & { status: TaskStatusCode } = { status: state.status };
  let refund = 0;
  if (state.status === 1) {
    const model = getModel(task.modelId)!;
    if (task.kind === "image") {
      const images = imagesOf(state, task.count);
      if (images.length === 0) {
        next = { status: 2, error: "Upstream returned no images" };
      } else {
        next = { status: 1, images, result: state.result ?? images[0]! };
        refund = task.price - priceOf(model, { seconds: task.seconds, resolution: task.resolution ?? "", count: images.length });
      }
    } else if (!state.result) {
      next = { status: 2, error: "Upstream returned no result" };
    } else {
      next = { status: 1, result: state.result };
      // Priced by upstream points (model 69): the charge follows the points the provider
      // reported, never above what was debited (ADR 0023); the rest is refunded.
      const points = state.usage?.points;
      if (model.pricing.kind === "points" && typeof points === "number" && Number.isFinite(points) && points >= 0) {
        const charge = Math.ceil(points * model.pricing.milliPerPoint);
        if (charge < task.price) refund = task.price - charge;
      }
    }
  }
  if (next.status === 2) {
    next.error = next.error ?? state.error ?? "Generation failed";
    refund = task.price;
  }
  const change = {
    status: next.status,
    result: next.result ?? null,
    images: next.images ? JSON.stringify(next.images) : null,
    error: next.error ?? null,
    generated_images: next.images ? next.images.length : null,
    refunded: refund,
    next_poll_at: isTerminal(next.status) ? null : nextPoll,
    updated_at: now,
  };
  const event = statusEvent({ ...task, ...next, refunded: refund, updatedAt: now } as TaskRecord);
  const units = taskUnitsDelta(task, { ...task, status: next.status, refunded: refund });
  const changed =
    // PostgreSQL, no money and no usage to move: the change and its event in one statement (ADR 0032).
    !isSqlite(db) && refund === 0 && !state.usage && units.billedSeconds === 0 && units.billedImages === 0
      ? await changeStatusOneStatement(db, task.id, task.status, change, event).then((done) => {
          if (done) outboxSignal.emit("committed");
          return done;
        })
      : await changeInTransaction(db, task, state, change, refund, event);
  if (changed && isTerminal(next.status)) deps.counters?.finished(task.modelId, next.status === 1 ? "succeeded" : "failed");
  return changed;
}

/** The status change as one transaction: the task, the channel's usage, the money (settle) and the event. */
async function changeInTransaction(
  db: TaskDeps["db"],
  task: TaskRecord,
  state: UpstreamTaskState,
  change: StatusChange,
  refund: number,
  event: OutboxEvent,
): Promise<boolean> {
  return db.transaction(async (trx: Knex.Transaction) => {
    const updated = await trx("tasks")
      .where({ id: task.id, status: task.status })
      .update({ ...change, ...(state.usage ? { provider_usage: JSON.stringify(state.usage) } : {}) });
    if (updated !== 1) return false;
    // The channel's running usage totals move with the task's report, once (ADR 0023).
    if (state.usage) await addProviderUsage(trx, task.id, state.usage);
    await settle(trx, task, { ...task, status: change.status, refunded: refund }, refund, change.error ?? "images not generated");
    await appendOutbox(trx, event);
    return true;
  });
}
