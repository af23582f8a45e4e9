/**
 * Generation tasks (docs/api/generation.md §2-4; docs/architecture.md §5): submission with the debit, reads,
 * lists, and settlement of upstream results with refunds.
 *
 * Longer than 400 lines on purpose: every transition of a task (submit, send, settle, expire,
 * upstream states) moves money, and the rule that the ledger entry and the state change share a
 * transaction is easiest to check when all of them sit side by side.
 */
import type { Knex } from "knex";
import { AppError } from "../errors.ts";
import { credit, debit } from "../ledger/index.ts";
import { addKeyTotals, storedTotal, taskUnits, taskUnitsDelta } from "../ledger/totals.ts";
import { appendOutbox } from "../events/outbox.ts";
import { nowIso, type Db } from "../db/index.ts";
import { groupCommit } from "../db/group-commit.ts";
import { newId } from "../ids.ts";
import { byCreation, keysetPage, type Page, type PageRequest } from "../pagination.ts";
import type { Caller } from "../auth/keys.ts";
import type { MilliYuan } from "../money.ts";
import { getModel, type ModelKind } from "./catalog.ts";
import { priceOf } from "./pricing.ts";
import { validateGenerationRequest, type GenerationInput, type GenerationRequest, type UrlCheck } from "./validation.ts";
import {
  UpstreamError,
  type GenerationUpstream,
  type ProviderUsage,
  type SubmitAccepted,
  type TaskStatusCode,
  type UpstreamTaskState,
} from "./upstream/types.ts";
import type { TaskCounters } from "./metrics.ts";
import { addProviderUsage } from "./channels/store.ts";

/** A task as the domain sees it; money in milli-yuan, times ISO 8601. */
export interface TaskRecord {
  id: string;
  accountId: string;
  keyId: string;
  kind: ModelKind;
  modelId: number;
  prompt: string;
  status: TaskStatusCode;
  count: number;
  seconds: number | null;
  resolution: string | null;
  size: string | null;
  /** Milli-yuan debited at submission. */
  price: MilliYuan;
  /** Milli-yuan refunded (0 until a failure or a partial image result). */
  refunded: MilliYuan;
  result: string | null;
  images: string[] | null;
  error: string | null;
  /** What the provider reported the task used (migration 016); null: nothing reported. */
  providerUsage: ProviderUsage | null;
  createdAt: string;
  updatedAt: string;
}

/** Terminal status codes: 1 succeeded, 2 failed. */
export function isTerminal(status: number): boolean {
  return status === 1 || status === 2;
}

/** A `tasks` row (numbers may come back as strings on PostgreSQL; `images` and `request` as JSON text; optional: columns not set at insert). */
export interface TaskRow {
  id: string;
  account_id: string;
  key_id: string;
  kind: ModelKind;
  model_id: number | string;
  prompt: string;
  status: number | string;
  count: number | string;
  seconds: number | string | null;
  resolution: string | null;
  size: string | null;
  price: number | string;
  refunded: number | string;
  result?: string | null;
  images?: string | null;
  error?: string | null;
  /** JSON of {@link ProviderUsage} (migration 016). */
  provider_usage?: string | null;
  created_at: string;
  updated_at: string;
  request: string;
  upstream_task_id?: string | null;
  /** The channel that accepted the task (migration 010); null: the implicit `chn_default`. */
  channel_id?: string | null;
  next_poll_at?: string | null;
  deadline_at?: string | null;
  expired_at?: string | null;
}

/** Converts a `tasks` row to a {@link TaskRecord}. */
export function toTaskRecord(row: TaskRow): TaskRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    keyId: row.key_id,
    kind: row.kind,
    modelId: Number(row.model_id),
    prompt: row.prompt,
    status: Number(row.status) as TaskStatusCode,
    count: Number(row.count),
    seconds: row.seconds == null ? null : Number(row.seconds),
    resolution: row.resolution ?? null,
    size: row.size ?? null,
    price: Number(row.price),
    refunded: Number(row.refunded),
    result: row.result ?? null,
    images: row.images ? JSON.parse(row.images) : null,
    error: row.error ?? null,
    providerUsage: row.provider_usage ? JSON.parse(row.provider_usage) : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Reads tasks by id in one query, each visible only to the key that created it (docs/api/generation.md
 * §4): the one visibility rule of every task read ({@link createGenerationService} `getTasks`, and
 * the cloud subgraph's `node(id:)` for task ids, docs/adr/0019-global-object-ids.md).
 * @param caller the calling key (`keyId`)
 * @param ids task ids (any strings)
 * @returns one entry per id, null where not found or another key's
 */
export async function getTasksOfKey(db: Db, caller: Pick<Caller, "keyId">, ids: readonly string[]): Promise<(TaskRecord | null)[]> {
  const rows = await db("tasks")
    .whereIn("id", [...ids])
    .andWhere("key_id", caller.keyId);
  const byId = new Map(rows.map((r: TaskRow) => [r.id, toTaskRecord(r)]));
  return ids.map((id) => byId.get(id) ?? null);
}

/** What the generation service needs from the outside. */
export interface GenerationServiceDeps {
  db: Db;
  upstream: GenerationUpstream;
  /** True when a URL is a public HTTPS URL (docs/api/generation.md §4 rule 3). */
  checkUrl: UrlCheck;
  /** Milliseconds until the poller first looks at a newly sent task. */
  pollIntervalMs: number;
  /** Deadline of every task in seconds (TASK_DEADLINE_SECONDS); unset: each model's `deadlineSeconds`. */
  deadlineSeconds?: number;
  /** Where created and finished tasks are counted (src/generation/metrics.ts); unset: nowhere. */
  counters?: TaskCounters;
}

/** The error of a task failed by its deadline (docs/architecture.md §5; src/generation/recovery.ts). */
export const DEADLINE_ERROR = "Generation timed out";

/** Where a submission stands: `pending` until the upstream answers, `resending` while the recovery sweep holds it. */
export type SubmitState = "pending" | "resending" | "sent" | "failed";

/**
 * Creates the generation service.
 * @returns submission, reads and settlement bound to the given database and upstream
 */
export function createGenerationService(deps: GenerationServiceDeps) {
  const { db, upstream } = deps;
  // Submissions' debits commit in groups on SQLite (src/db/group-commit.ts, ADR 0011).
  const commit = groupCommit(db);

  /**
   * Submits a generation task (docs/api/generation.md §4): validates, prices, debits the price atomically with
   * the task row (one savepoint of a group commit on SQLite: resolved only after its COMMIT),
   * hands the task to the upstream, and refunds in the same transaction that records an
   * upstream failure.
   * @param caller the authenticated key
   * @param kind `video` or `image` (the endpoint)
   * @param input the request in camelCase (the fields of docs/api/generation.md §2; errors name them as the spec does)
   * @returns the new task (status 0)
   * @throws AppError 400 (validation), 402 `insufficient_balance`, 502 `upstream_failed`, 504 `upstream_timeout`
   */
  async function submit(caller: Caller, kind: ModelKind, input: GenerationInput): Promise<TaskRecord> {
    const request = await validateGenerationRequest(kind, input, deps.checkUrl);
    // A combination no channel of the model can do is refused here, before any debit (ADR 0023).
    await upstream.admits?.(request);
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
    await commit(async (trx) => {
      const keyTotals = { tasks: 1, ...taskUnits(toTaskRecord(row)) };
      await debit(trx, {
        accountId: caller.accountId,
        keyId: caller.keyId,
        amount: price,
        ref: `task:${id}:debit`,
        taskId: id,
        reason: `${kind} generation`,
        keyTotals,
      });
      await trx("tasks").insert(row);
      await appendOutbox(trx, statusEvent(toTaskRecord(row)));
    });
    deps.counters?.submitted(request.modelId);
    return send(toTaskRecord(row), request);
  }

  async function send(task: TaskRecord, request: GenerationRequest, from: "pending" | "resending" = "pending"): Promise<TaskRecord> {
    let accepted: SubmitAccepted;
    try {
      accepted = await upstream.submit(request, task.id);
    } catch (error) {
      const failure = error instanceof UpstreamError ? error : new UpstreamError("failed", String(error));
      const message = failure.kind === "timeout" ? "Upstream request timed out" : "Upstream request failed";
      await failSubmission(task, message, from);
      // The registry's message only: what the provider said is the operator's (the task's
      // channel_attempts, the logs), never the caller's.
      throw new AppError(failure.kind === "timeout" ? "upstream_timeout" : "upstream_failed");
    }
    await markSent(task, accepted, from);
    return task;
  }

  /**
   * Records the provider's task id, and the channel that accepted it when the router names one:
   * `sent`, polled as usual (compare-and-swap on `from`).
   * @returns true when this call recorded it
   */
  async function markSent(task: TaskRecord, { upstreamTaskId, channel }: SubmitAccepted, from: "pending" | "resending"): Promise<boolean> {
    const nextPoll = new Date(Date.now() + deps.pollIntervalMs).toISOString();
    // With the submissions' group (ADR 0011): one commit for many such records instead of one each;
    // one UPDATE, so no savepoint.
    const updated = await commit(
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
   * @returns true when this call failed and refunded the task
   */
  async function failSubmission(task: TaskRecord, message: string, from: "pending" | "resending" = "pending"): Promise<boolean> {
    const failed = await db.transaction(async (trx) => {
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
  async function resend(task: TaskRecord, request: GenerationRequest): Promise<"sent" | "failed"> {
    try {
      await send(task, request, "resending");
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
  async function adoptSubmission(task: TaskRecord, upstreamTaskId: string): Promise<boolean> {
    return markSent(task, { upstreamTaskId }, "resending");
  }

  /**
   * Fails a task still open after its deadline: status 2, `Generation timed out`, the full refund
   * and the status event, in one transaction, by compare-and-swap on an open status (so it never
   * races the poller into two settlements). The task is then watched for a late result.
   * @returns true when this call failed the task
   */
  async function expireTask(task: TaskRecord, lateCheckDelayMs: number): Promise<boolean> {
    const expired = await db.transaction(async (trx: Knex.Transaction) => {
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

  /**
   * Reads a task of the caller (docs/api/generation.md §4: a task is visible only to the key that created it).
   * @throws AppError `task_not_found` (404) when it does not exist or belongs to another key
   */
  async function getTask(caller: Caller, id: string): Promise<TaskRecord> {
    const row = typeof id === "string" && id.length <= 60 ? await db("tasks").where({ id, key_id: caller.keyId }).first() : undefined;
    if (!row) throw new AppError("task_not_found");
    return toTaskRecord(row);
  }

  /**
   * Reads many tasks by id in one query (for DataLoader), each visible only to its key.
   * @returns one entry per id, null where not found or not the caller's
   */
  async function getTasks(caller: Caller, ids: readonly string[]): Promise<(TaskRecord | null)[]> {
    return getTasksOfKey(db, caller, ids);
  }

  /**
   * Lists the caller's tasks newest first; `totalCount` is exact without a status filter (the
   * key's stored count) and counted up to COUNT_BOUND with one.
   * @param page `first` (1-100), `after` (opaque cursor) or `backward` and `before`
   *   (src/pagination.ts {@link PageRequest}), optional `status` code
   * @throws AppError `invalid_request` for a bad cursor
   */
  async function listTasks(caller: Caller, page: PageRequest & { status?: number | null }): Promise<Page<TaskRecord>> {
    const query = db("tasks").where("key_id", caller.keyId);
    if (page.status != null) query.andWhere("status", page.status);
    // Unfiltered, the count is the key's stored task_count; by status, counted up to COUNT_BOUND.
    const stored = page.status == null ? storedTotal(db, "api_keys", caller.keyId, "task_count") : undefined;
    return keysetPage(query, byCreation(), page, toTaskRecord, { stored });
  }

  /**
   * Applies what the upstream reports to a task (the poller's step). Moves the status with a
   * compare-and-swap on the old status, so two pollers can never both settle a task; a terminal
   * state settles the money in the same transaction: full refund on status 2 (or a success
   * without results), image tasks charged only for the images generated.
   * @returns true when this call changed the task
   */
  async function applyUpstreamState(task: TaskRecord, state: UpstreamTaskState, pollIntervalMs: number): Promise<boolean> {
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
        const images = (state.images ?? (state.result ? [state.result] : [])).slice(0, task.count);
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
    const changed = await db.transaction(async (trx: Knex.Transaction) => {
      const updated = await trx("tasks")
        .where({ id: task.id, status: task.status })
        .update({
          status: next.status,
          result: next.result ?? null,
          images: next.images ? JSON.stringify(next.images) : null,
          error: next.error ?? null,
          generated_images: next.images ? next.images.length : null,
          refunded: refund,
          ...(state.usage ? { provider_usage: JSON.stringify(state.usage) } : {}),
          next_poll_at: isTerminal(next.status) ? null : nextPoll,
          updated_at: now,
        });
      if (updated !== 1) return false;
      // The channel's running usage totals move with the task's report, once (ADR 0023).
      if (state.usage) await addProviderUsage(trx, task.id, state.usage);
      await settle(trx, task, { ...task, status: next.status, refunded: refund }, refund, next.error ?? "images not generated");
      await appendOutbox(trx, statusEvent({ ...task, ...next, refunded: refund, updatedAt: now } as TaskRecord));
      return true;
    });
    if (changed && isTerminal(next.status)) deps.counters?.finished(task.modelId, next.status === 1 ? "succeeded" : "failed");
    return changed;
  }

  return { submit, getTask, getTasks, listTasks, applyUpstreamState, resend, adoptSubmission, expireTask };
}

/**
 * The money side of one task change, inside the transaction that writes the change: the refund
 * (once: its ref is unique) and the key's billed units, moved together (docs/architecture.md §3.7).
 * @param before the task as the change found it; `after` its new status and refunded total
 * @param refund milli-yuan given back by this change (0: none)
 */
async function settle(trx: Knex.Transaction, before: TaskRecord, after: TaskRecord, refund: MilliYuan, reason: string): Promise<void> {
  const keyTotals = taskUnitsDelta(before, after);
  if (refund > 0) {
    await credit(trx, "refund", {
      accountId: before.accountId,
      keyId: before.keyId,
      amount: refund,
      ref: `task:${before.id}:refund`,
      taskId: before.id,
      reason,
      keyTotals,
    });
  } else {
    await addKeyTotals(trx, before.keyId, keyTotals);
  }
}

/** The service type returned by {@link createGenerationService}. */
export type GenerationService = ReturnType<typeof createGenerationService>;

function statusEvent(task: TaskRecord) {
  return {
    topic: "task.status_changed",
    accountId: task.accountId,
    aggregateId: task.id,
    keyId: task.keyId,
    payload: {
      task_id: task.id,
      key_id: task.keyId,
      status: task.status,
      result: task.result,
      images: task.images,
      error: task.error,
      refunded: task.refunded,
      updated_at: task.updatedAt,
    },
  };
}
