/**
 * The recovery sweep of generation tasks (docs/architecture.md §5; issue 6 item 4): what a crash or a silent
 * upstream would otherwise leave open forever. Runs at start-up and then periodically in every
 * process of the generation role; every step is a compare-and-swap, so any number of processes
 * may sweep the same database without handling an item twice.
 *
 * Each sweep:
 * 1. **Interrupted submissions.** A task still `submit_state = 'pending'` longer than
 *    `upstreamTimeoutMs + marginMs` was debited but its process died before the upstream
 *    answered (a live submission resolves within the upstream timeout). The sweep claims it
 *    (`pending` → `resending`, `next_poll_at` holding the lease until which the claim is
 *    exclusive), then first asks the upstream whether the submission reached it
 *    (`findSubmission`, by our task id, the reference every submission carries): found → the
 *    provider's task is adopted (`sent`, polled as usual; nothing is sent again). Not found, or
 *    the upstream cannot be asked (an error, or an adapter without lookups), → it is handed to
 *    the upstream once more: accepted → `sent` (status 0, polled as usual); refused → status 2
 *    with the full refund, through the same code path as a live refusal. A `resending` task
 *    whose lease ran out (its sweeper died too) is claimed again. The lease covers both calls.
 * 2. **Deadlines.** An open task (status 0, 3 or 4) past its `deadline_at` (the model's
 *    `deadlineSeconds`, or TASK_DEADLINE_SECONDS, after submission) is failed with
 *    `Generation timed out` and fully refunded (compare-and-swap on an open status, so it never
 *    races the poller into a second settlement).
 * 3. **Late results.** A task failed by its deadline keeps being asked, with a growing delay, for
 *    up to {@link LATE_WATCH_MS}: a success arriving then is recorded in `late_result` /
 *    `late_images` — no charge, the status stays 2.
 *
 * The next sweep runs after `intervalMs` at the latest, and sooner when a pending task, a
 * deadline or a late check falls due before that.
 */
import pLimit, { type LimitFunction } from "p-limit";
import type { Logger } from "pino";
import { nowIso, type Db } from "../db/index.ts";
import { startPacedLoop } from "../loop.ts";
import { toTaskRecord, type GenerationService, type TaskRow } from "./tasks/index.ts";
import type { GenerationRequest } from "./validation.ts";
import { imagesOf, type GenerationUpstream, type UpstreamTaskState } from "./upstream/types.ts";

/** How long a task failed by its deadline is still asked for a late result: one day. */
export const LATE_WATCH_MS = 24 * 60 * 60 * 1000;

/** The shortest claim on an interrupted submission being resent. */
const MIN_LEASE_MS = 5_000;

/** The longest pause between two late checks of one task: ten minutes. */
const LATE_CHECK_MAX_DELAY_MS = 10 * 60 * 1000;

/** Settings of the recovery sweep. */
export interface RecoveryOptions {
  db: Db;
  service: GenerationService;
  upstream: GenerationUpstream;
  logger: Logger;
  /** UPSTREAM_TIMEOUT_MS: a live submission resolves within it. */
  upstreamTimeoutMs: number;
  /** RECOVERY_MARGIN_MS: added to the timeout before a pending task counts as interrupted. */
  marginMs: number;
  /** TASK_POLL_INTERVAL_MS: first delay of the late-result checks. */
  pollIntervalMs: number;
  /** Longest pause between sweeps (default 60 000). */
  intervalMs?: number;
  /** Tasks per step and sweep (default 100). */
  batchSize?: number;
  /** Upstream calls in flight at once (default 8). */
  concurrency?: number;
  /** False: no background sweeps, only {@link Recovery.sweepOnce} (tests). Default true. */
  background?: boolean;
}

/** What one sweep did. */
export interface SweepResult {
  /** Interrupted submissions the upstream already had: its task adopted, nothing sent again. */
  adopted: number;
  /** Interrupted submissions the upstream accepted on the second try. */
  resent: number;
  /** Interrupted submissions the upstream refused: failed and refunded. */
  refunded: number;
  /** Open tasks failed and refunded by their deadline. */
  expired: number;
  /** Late successes recorded. */
  late: number;
}

/** The sweep's resolved dependencies (built by {@link startRecovery}); times in milliseconds. */
export interface RecoveryDeps {
  db: Db;
  service: GenerationService;
  upstream: GenerationUpstream;
  logger: Logger;
  /** Longest pause between sweeps. */
  intervalMs: number;
  /** Tasks per step and sweep. */
  batchSize: number;
  /** Upstream calls in flight at once. */
  limit: LimitFunction;
  /** Age after which a `pending` submission counts as interrupted: upstream timeout + margin. */
  staleMs: number;
  /** The claim on a resent task: it outlives the upstream calls it covers. */
  leaseMs: number;
  /** First delay of the late-result checks (TASK_POLL_INTERVAL_MS). */
  pollIntervalMs: number;
}

/** A running recovery sweep. */
export interface Recovery {
  /** Runs one sweep now (safe beside the background loop and other processes). */
  sweepOnce(): Promise<SweepResult>;
  /** Stops scheduling sweeps and waits for the current one. */
  stop(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Asks the upstream whether an interrupted submission reached it.
 * @param deps the upstream and the logger
 * @param taskId our task id, the reference every submission carries
 * @returns the provider's task id; null when it does not show the task or cannot be asked
 */
export async function lookUp(deps: Pick<RecoveryDeps, "upstream" | "logger">, taskId: string): Promise<string | null> {
  if (!deps.upstream.findSubmission) return null;
  try {
    return await deps.upstream.findSubmission(taskId);
  } catch (error) {
    // Cannot tell: resend, as without lookups (README "Running at scale" says when that duplicates).
    deps.logger.warn({ task_id: taskId, err: (error as Error).message }, "could not ask the upstream whether it has the interrupted submission; resending it");
    return null;
  }
}

/**
 * Recovers one interrupted submission: claims it (`pending` → `resending`, the lease in
 * `next_poll_at`), then adopts the provider's task when the upstream has it, else resends it
 * (accepted → `sent`; refused → failed and refunded). A failure is logged and the task left in
 * `resending`, claimed again once the lease runs out.
 * @param deps database, service, upstream, logger, lease
 * @param row the task as the sweep read it
 * @returns what became of it; null when another process has it or it moved on
 */
export async function recoverTask(deps: RecoveryDeps, row: TaskRow): Promise<"adopted" | "sent" | "refunded" | null> {
  const { db, logger } = deps;
  const claimedAt = nowIso();
  const claimed = await db("tasks")
    .where({ id: row.id, status: 0 })
    .andWhere((q) => q.where("submit_state", "pending").orWhere((r) => r.where("submit_state", "resending").andWhere("next_poll_at", "<=", claimedAt)))
    .update({ submit_state: "resending", next_poll_at: iso(Date.now() + deps.leaseMs), updated_at: claimedAt });
  if (claimed !== 1) return null; // another process has it, or it moved on
  try {
    const task = toTaskRecord(row);
    const found = await lookUp(deps, row.id);
    if (found !== null) {
      if (!(await deps.service.adoptSubmission(task, found))) return null;
      logger.warn({ task_id: row.id, upstream_task_id: found }, "interrupted submission found at the upstream; its task adopted, not resent");
      return "adopted";
    }
    const request = JSON.parse(row.request) as GenerationRequest;
    const outcome = await deps.service.resend(task, request);
    logger.warn(
      { task_id: row.id, outcome },
      outcome === "sent" ? "interrupted submission resent to the upstream" : "interrupted submission refused by the upstream; refunded",
    );
    return outcome === "sent" ? "sent" : "refunded";
  } catch (error) {
    // Left in `resending`: claimed again once the lease runs out.
    logger.error({ task_id: row.id, err: error }, "interrupted submission could not be recovered now");
    return null;
  }
}

/**
 * Step 1: adopt, resend or refund interrupted submissions ({@link recoverTask}), up to
 * `batchSize`, `limit` at once.
 * @param deps see {@link RecoveryDeps}
 * @returns the counts, and whether the batch was full
 */
export async function recoverInterrupted(deps: RecoveryDeps): Promise<{ adopted: number; resent: number; refunded: number; full: boolean }> {
  const now = Date.now();
  const nowText = iso(now);
  const rows = await deps
    .db("tasks")
    .where((q) =>
      q
        .where((p) => p.where("submit_state", "pending").andWhere("created_at", "<=", iso(now - deps.staleMs)))
        .orWhere((r) => r.where("submit_state", "resending").andWhere("next_poll_at", "<=", nowText)),
    )
    .orderBy("created_at")
    .limit(deps.batchSize);
  const outcomes = await Promise.all(rows.map((row: TaskRow) => deps.limit(() => recoverTask(deps, row))));
  const count = (outcome: string) => outcomes.filter((o) => o === outcome).length;
  return { adopted: count("adopted"), resent: count("sent"), refunded: count("refunded"), full: rows.length === deps.batchSize };
}

/**
 * Step 2: fail and refund open tasks past their deadline (the service's `expireTask`, a
 * compare-and-swap on an open status).
 * @param deps database, service, logger, batch size, poll interval
 * @returns how many expired, and whether the batch was full
 */
export async function expireOverdue(deps: RecoveryDeps): Promise<{ expired: number; full: boolean }> {
  const rows = await deps
    .db("tasks")
    .whereIn("status", [0, 3, 4])
    .andWhere("submit_state", "sent")
    .andWhere("deadline_at", "<=", nowIso())
    .orderBy("deadline_at")
    .limit(deps.batchSize);
  let expired = 0;
  for (const row of rows) {
    if (await deps.service.expireTask(toTaskRecord(row), deps.pollIntervalMs)) {
      expired += 1;
      deps.logger.warn({ task_id: row.id, deadline_at: row.deadline_at }, "task passed its deadline; failed and refunded");
    }
  }
  return { expired, full: rows.length === deps.batchSize };
}

/**
 * When to ask again about a task failed by its deadline: after as long as it has been expired,
 * between the poll interval and {@link LATE_CHECK_MAX_DELAY_MS}.
 * @param pollIntervalMs the shortest delay
 * @param row the task's `expired_at`
 * @param now epoch milliseconds
 * @returns the ISO 8601 time of the next check; null once {@link LATE_WATCH_MS} has passed
 */
export function nextLateCheck(pollIntervalMs: number, row: Pick<TaskRow, "expired_at">, now: number): string | null {
  const expiredAt = Date.parse(row.expired_at ?? "");
  if (!Number.isFinite(expiredAt) || now - expiredAt >= LATE_WATCH_MS) return null;
  const delay = Math.min(LATE_CHECK_MAX_DELAY_MS, Math.max(pollIntervalMs, now - expiredAt));
  return iso(now + delay);
}

/**
 * Asks the upstream about one task failed by its deadline: a success is recorded in
 * `late_result` / `late_images` (no charge, the status stays 2); still open or unreachable: asked
 * again later ({@link nextLateCheck}); failed upstream or no upstream id: no more checks.
 * @param deps database, upstream, logger, poll interval
 * @param row the task as the sweep read it
 * @returns true when a late success was recorded
 */
export async function checkLateResult(deps: RecoveryDeps, row: TaskRow): Promise<boolean> {
  const { db, logger } = deps;
  let state: UpstreamTaskState | null = null;
  if (row.upstream_task_id) {
    try {
      state = await deps.upstream.fetchStatus(row.upstream_task_id, row.channel_id);
    } catch (error) {
      logger.warn({ task_id: row.id, err: (error as Error).message }, "late result check failed");
    }
  }
  const guard = { id: row.id, status: 2, next_poll_at: row.next_poll_at };
  if (state?.status === 1) {
    const images = row.kind === "image" ? imagesOf(state, Number(row.count)) : null;
    const result = state.result ?? images?.[0] ?? null;
    const recorded = await db("tasks")
      .where(guard)
      .whereNull("late_result")
      .update({ late_result: result, late_images: images?.length ? JSON.stringify(images) : null, next_poll_at: null });
    if (recorded === 1 && result) {
      logger.warn({ task_id: row.id }, "late upstream success recorded after the deadline (not charged)");
      return true;
    }
    return false;
  }
  // Still open upstream (or not reachable): ask again later; failed upstream or no id: stop.
  const open = row.upstream_task_id && (state === null || state.status === 0 || state.status === 3 || state.status === 4);
  await db("tasks")
    .where(guard)
    .update({ next_poll_at: open ? nextLateCheck(deps.pollIntervalMs, row, Date.now()) : null });
  return false;
}

/**
 * Step 3: ask the upstream about tasks failed by their deadline ({@link checkLateResult}).
 * @param deps see {@link RecoveryDeps}
 * @returns late successes recorded, and whether the batch was full
 */
export async function checkLateResults(deps: RecoveryDeps): Promise<{ late: number; full: boolean }> {
  const rows = await deps
    .db("tasks")
    .where("status", 2)
    .andWhere("next_poll_at", "<=", nowIso())
    .whereNotNull("expired_at")
    .whereNull("late_result")
    .orderBy("next_poll_at")
    .limit(deps.batchSize);
  const recorded = await Promise.all(rows.map((row: TaskRow) => deps.limit(() => checkLateResult(deps, row))));
  return { late: recorded.filter(Boolean).length, full: rows.length === deps.batchSize };
}

/**
 * Milliseconds until the earliest pending task, lease, deadline or late check falls due.
 * @param deps database, stale age, interval
 * @returns between 0 and `intervalMs`
 */
export async function untilNextDue(deps: Pick<RecoveryDeps, "db" | "staleMs" | "intervalMs">): Promise<number> {
  const { db } = deps;
  const now = Date.now();
  const [pending, resending, deadline, lateCheck] = await Promise.all([
    db("tasks").where("submit_state", "pending").min({ at: "created_at" }).first(),
    db("tasks").where({ submit_state: "resending", status: 0 }).min({ at: "next_poll_at" }).first(),
    db("tasks").whereIn("status", [0, 3, 4]).andWhere("submit_state", "sent").min({ at: "deadline_at" }).first(),
    db("tasks").where("status", 2).whereNotNull("expired_at").whereNull("late_result").min({ at: "next_poll_at" }).first(),
  ]);
  const due = [
    pending?.at ? Date.parse(pending.at) + deps.staleMs : Infinity,
    resending?.at ? Date.parse(resending.at) : Infinity,
    deadline?.at ? Date.parse(deadline.at) : Infinity,
    lateCheck?.at ? Date.parse(lateCheck.at) : Infinity,
  ];
  const earliest = Math.min(...due.map((t) => (Number.isFinite(t) ? t : Infinity)));
  return Math.max(0, Math.min(deps.intervalMs, earliest - now));
}

/**
 * One sweep: the three steps in order (module docstring).
 * @param deps see {@link RecoveryDeps}
 * @returns what it did, and whether any step's batch was full
 */
export async function sweep(deps: RecoveryDeps): Promise<SweepResult & { full: boolean }> {
  const interrupted = await recoverInterrupted(deps);
  const overdue = await expireOverdue(deps);
  const lateResults = await checkLateResults(deps);
  return {
    adopted: interrupted.adopted,
    resent: interrupted.resent,
    refunded: interrupted.refunded,
    expired: overdue.expired,
    late: lateResults.late,
    full: interrupted.full || overdue.full || lateResults.full,
  };
}

/**
 * Starts the recovery sweep: the first sweep at once (start-up), then as described in the
 * module docstring. Sweeps never overlap; errors are logged and retried at the next sweep.
 * @param options database, generation service, upstream, logger, timeouts, interval, batch size, concurrency
 * @returns `sweepOnce` and `stop`
 */
export function startRecovery(options: RecoveryOptions): Recovery {
  const intervalMs = Math.max(1, options.intervalMs ?? 60_000);
  // The claim on a resent task outlives the upstream calls it covers, a lookup and a resend (and
  // is never so short that a second sweeper could take it over while the first is still at work).
  const calls = options.upstream.findSubmission ? 2 : 1;
  const deps: RecoveryDeps = {
    db: options.db,
    service: options.service,
    upstream: options.upstream,
    logger: options.logger,
    intervalMs,
    batchSize: options.batchSize ?? 100,
    limit: pLimit(options.concurrency ?? 8),
    staleMs: options.upstreamTimeoutMs + options.marginMs,
    leaseMs: Math.max(MIN_LEASE_MS, calls * options.upstreamTimeoutMs + options.marginMs),
    pollIntervalMs: options.pollIntervalMs,
  };

  const loop =
    options.background === false
      ? undefined
      : startPacedLoop(
          async () => {
            const { full } = await sweep(deps);
            // A little slack past the due time, so the item is due when the sweep looks.
            return full ? 0 : (await untilNextDue(deps)) + 10;
          },
          { firstDelayMs: 0, maxDelayMs: intervalMs, onError: (err) => deps.logger.error({ err }, "recovery sweep failed") },
        );

  return {
    async sweepOnce() {
      const { full: _full, ...result } = await sweep(deps);
      return result;
    },
    stop: async () => loop?.stop(),
  };
}
