/**
 * Submitting a task (docs/api/generation.md §4; docs/architecture.md §5; ADR 0011, 0023): the
 * debit with the task row, the hand-over to the upstream, and the record of its answer, accepted
 * or refused. The recovery sweep (../recovery.ts) resends and adopts through the same records.
 */
import { AppError } from "../../errors.ts";
import { debit } from "../../ledger/index.ts";
import { taskUnits } from "../../ledger/totals.ts";
import { appendOutbox, outboxSignal } from "../../events/outbox.ts";
import { isSqlite, nowIso } from "../../db/index.ts";
import { newId } from "../../ids.ts";
import type { Caller } from "../../auth/keys.ts";
import { getModel, type ModelKind } from "../catalog.ts";
import { priceOf } from "../pricing.ts";
import { validateGenerationRequest, type GenerationInput, type GenerationRequest } from "../validation.ts";
import { UpstreamError, type SubmitAccepted } from "../upstream/types.ts";
import { settle, type TaskDeps } from "./deps.ts";
import { statusEvent, toTaskRecord, type TaskRecord } from "./records.ts";
import { debitNewTask, markSentBatched } from "./submit-pg.ts";

/** Where a submission stands: `pending` until the upstream answers, `resending` while the recovery sweep holds it. */
export type SubmitState = "pending" | "resending" | "sent" | "failed";

/**
 * Submits a generation task (docs/api/generation.md §4): validates, prices, debits the price atomically with
 * the task row (one savepoint of a group commit on SQLite: resolved only after its COMMIT),
 * hands the task to the upstream, and refunds in the same transaction that records an
 * upstream failure.
 * @param deps database, group commit, upstream, URL check, poll interval, deadline, counters
 * @param caller the authenticated key
 * @param kind `video` or `image` (the endpoint)
 * @param input the request in camelCase (the fields of docs/api/generation.md §2; errors name them as the spec does)
 * @returns the new task (status 0)
 * @throws AppError 400 (validation), 402 `insufficient_balance`, 502 `upstream_failed`, 504 `upstream_timeout`
 */
export async function submit(deps: TaskDeps, caller: Caller, kind: ModelKind, input: GenerationInput): Promise<TaskRecord> {
  const request = await validateGenerationRequest(kind, input, deps.checkUrl);
  // A combination no channel of the model can do is refused here, before any debit (ADR 0023).
  await deps.upstream.admits?.(request);
  const model = getModel(request.modelId)!;
  const price = priceOf(model, request);
  const id = newId("task");
  const createdMs = Date.now();
  const now = new Date(createdMs).toISOString();
  const deadlineSeconds = deps.deadlineSeconds ?? model.deadlineSeconds;
  const row = {
    id,
    account_id: caller.accountId,
    key_id: caller.keyId,
    kind: request.kind,
    model_id: request.modelId,
    prompt: request.prompt,
    request: JSON.stringify(request),
    status: 0,
    submit_state: "pending",
    count: request.count,
    seconds: request.seconds,
    resolution: request.resolution,
    size: request.size,
    price,
    refunded: 0,
    deadline_at: new Date(createdMs + deadlineSeconds * 1000).toISOString(),
    created_at: now,
    updated_at: now,
  };
  const task = toTaskRecord(row);
  const reason = `${kind} generation`;
  if (!isSqlite(deps.db)) {
    // PostgreSQL: one statement, one round trip and one commit (ADR 0027).
    await debitNewTask(deps.db, row, task, statusEvent(task), reason);
    outboxSignal.emit("committed");
  } else {
    await deps.commit(async (trx) => {
      const keyTotals = { tasks: 1, ...taskUnits(task) };
      await debit(trx, {
        accountId: caller.accountId,
        keyId: caller.keyId,
        amount: price,
        ref: `task:${id}:debit`,
        taskId: id,
        reason,
        keyTotals,
      });
      await trx("tasks").insert(row);
      await appendOutbox(trx, statusEvent(task));
    });
  }
  deps.counters?.submitted(request.modelId);
  return send(deps, task, request);
}

/**
 * Hands a debited task to the upstream and records its answer: accepted → `sent`; refused →
 * status 2 with the full refund ({@link failSubmission}).
 * @param from the submit state the caller holds (`pending` live, `resending` in the recovery sweep)
 * @returns the task as given
 * @throws AppError 502 `upstream_failed`, 504 `upstream_timeout` (the registry's message only)
 */
export async function send(deps: TaskDeps, task: TaskRecord, request: GenerationRequest, from: "pending" | "resending" = "pending"): Promise<TaskRecord> {
  let accepted: SubmitAccepted;
  try {
    accepted = await deps.upstream.submit(request, task.id);
  } catch (error) {
    const failure = error instanceof UpstreamError ? error : new UpstreamError("failed", String(error));
    const message = failure.kind === "timeout" ? "Upstream request timed out" : "Upstream request failed";
    await failSubmission(deps, task, message, from);
    // The registry's message only: what the provider said is the operator's (the task's
    // channel_attempts, the logs), never the caller's.
    throw new AppError(failure.kind === "timeout" ? "upstream_timeout" : "upstream_failed");
  }
  await markSent(deps, task, accepted, from);
  return task;
}

/**
 * Records the provider's task id, and the channel that accepted it when the router names one:
 * `sent`, polled as usual (compare-and-swap on `from`).
 * @returns true when this call recorded it
 */
export async function markSent(deps: TaskDeps, task: TaskRecord, { upstreamTaskId, channel }: SubmitAccepted, from: "pending" | "resending"): Promise<boolean> {
  const nextPoll = new Date(Date.now() + deps.pollIntervalMs).toISOString();
  if (!isSqlite(deps.db)) {
    // PostgreSQL: the concurrent submissions' records share one statement (ADR 0032).
    return markSentBatched(deps.db, {
      id: task.id,
      from,
      upstreamTaskId,
      channelId: channel?.id ?? null,
      channelAttempts: channel ? JSON.stringify(channel.attempts) : null,
      nextPollAt: nextPoll,
      updatedAt: nowIso(),
    });
  }
  // With the submissions' group (ADR 0011): one commit for many such records instead of one each;
  // one UPDATE, so no savepoint.
  const updated = await deps.commit(
    (trx) =>
      trx("tasks")
        .where({ id: task.id, submit_state: from })
        .update({
          upstream_task_id: upstreamTaskId,
          ...(channel ? { channel_id: channel.id, channel_attempts: JSON.stringify(channel.attempts) } : {}),
          submit_state: "sent",
          next_poll_at: nextPoll,
          updated_at: nowIso(),
        }),
    { oneStatement: true },
  );
  return updated === 1;
}

/**
 * Records a refused submission: status 2 and the full refund, once (compare-and-swap on the
 * submit state the caller holds: `pending` for a live submission, `resending` for the recovery sweep).
 * @param message the task's error text
 * @returns true when this call failed and refunded the task
 */
export async function failSubmission(deps: TaskDeps, task: TaskRecord, message: string, from: "pending" | "resending" = "pending"): Promise<boolean> {
  const failed = await deps.db.transaction(async (trx) => {
    const now = nowIso();
    const updated = await trx("tasks")
      .where({ id: task.id, submit_state: from })
      .update({ submit_state: "failed", status: 2, error: message, refunded: task.price, next_poll_at: null, updated_at: now });
    if (updated !== 1) return false;
    await settle(trx, task, { ...task, status: 2, refunded: task.price }, task.price, message);
    await appendOutbox(trx, statusEvent({ ...task, status: 2, error: message, refunded: task.price, updatedAt: now }));
    return true;
  });
  if (failed) deps.counters?.finished(task.modelId, "rejected");
  return failed;
}

/**
 * Hands an interrupted submission to the upstream again (the recovery sweep, which holds it in
 * `resending`): accepted → `sent` (status 0, polled as usual); refused → status 2 with the full
 * refund, through the same path as a live refusal.
 * @returns `sent` or `failed`
 */
export async function resend(deps: TaskDeps, task: TaskRecord, request: GenerationRequest): Promise<"sent" | "failed"> {
  try {
    await send(deps, task, request, "resending");
    return "sent";
  } catch (error) {
    if (error instanceof AppError && (error.code === "upstream_failed" || error.code === "upstream_timeout")) return "failed";
    throw error;
  }
}

/**
 * Adopts the provider's task for an interrupted submission the provider already has (the
 * recovery sweep found it by its reference, instead of resending it): `resending` → `sent`
 * with the provider's task id, polled as usual. No money moves: the debit stands, as for any
 * accepted submission.
 * @param task the task the sweep holds in `resending`
 * @param upstreamTaskId the provider's task id
 * @returns true when this call adopted it (false: another sweeper already settled the task)
 */
export async function adoptSubmission(deps: TaskDeps, task: TaskRecord, upstreamTaskId: string): Promise<boolean> {
  return markSent(deps, task, { upstreamTaskId }, "resending");
}
