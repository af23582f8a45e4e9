/**
 * Generation tasks (docs/api/generation.md §2-4; docs/architecture.md §5, §7.9): submission with
 * the debit, reads, lists, and settlement of upstream results with refunds. Each operation is a
 * function of its own file that takes its dependencies: submit.ts (submit, send, and the recovery
 * sweep's resend and adopt), apply-state.ts (the poller's settlement), expire.ts (the deadline),
 * reads.ts; the record and its event are records.ts, the shared money step deps.ts.
 * {@link createGenerationService} binds them to one database, upstream and group commit.
 *
 * Every transition of a task moves money with a compare-and-swap on its state, and the ledger
 * entry, the state change and the `task.status_changed` outbox event share one transaction.
 */
import { groupCommit } from "../../db/group-commit.ts";
import type { Caller } from "../../auth/keys.ts";
import type { Page, PageRequest } from "../../pagination.ts";
import type { ModelKind } from "../catalog.ts";
import type { GenerationInput, GenerationRequest } from "../validation.ts";
import type { UpstreamTaskState } from "../upstream/types.ts";
import { applyUpstreamState } from "./apply-state.ts";
import type { TaskDeps } from "./deps.ts";
import { expireTask } from "./expire.ts";
import { getTask, getTasksOfKey, listTasks } from "./reads.ts";
import type { TaskRecord } from "./records.ts";
import { adoptSubmission, resend, submit } from "./submit.ts";

export type { TaskDeps } from "./deps.ts";
export { isTerminal, toTaskRecord, type TaskRecord, type TaskRow } from "./records.ts";
export { getTask, getTasksOfKey, listTasks } from "./reads.ts";
export { adoptSubmission, failSubmission, resend, send, submit, type SubmitState } from "./submit.ts";
export { applyUpstreamState } from "./apply-state.ts";
export { DEADLINE_ERROR, expireTask } from "./expire.ts";

/** What the generation service needs from the outside: the task operations' dependencies but the group commit, which it makes. */
export type GenerationServiceDeps = Omit<TaskDeps, "commit">;

/** The task operations bound to one database and upstream; each names the function it calls. */
export interface GenerationService {
  /** {@link submit} */
  submit(caller: Caller, kind: ModelKind, input: GenerationInput): Promise<TaskRecord>;
  /** {@link getTask} */
  getTask(caller: Caller, id: string): Promise<TaskRecord>;
  /** {@link getTasksOfKey}, for DataLoader */
  getTasks(caller: Caller, ids: readonly string[]): Promise<(TaskRecord | null)[]>;
  /** {@link listTasks} */
  listTasks(caller: Caller, page: PageRequest & { status?: number | null }): Promise<Page<TaskRecord>>;
  /** {@link applyUpstreamState} */
  applyUpstreamState(task: TaskRecord, state: UpstreamTaskState, pollIntervalMs: number): Promise<boolean>;
  /** {@link resend} */
  resend(task: TaskRecord, request: GenerationRequest): Promise<"sent" | "failed">;
  /** {@link adoptSubmission} */
  adoptSubmission(task: TaskRecord, upstreamTaskId: string): Promise<boolean>;
  /** {@link expireTask} */
  expireTask(task: TaskRecord, lateCheckDelayMs: number): Promise<boolean>;
}

/**
 * Binds the task operations to one database and upstream, with one group commit for the
 * submissions' debits (src/db/group-commit.ts, ADR 0011).
 * @param deps database, upstream, URL check, poll interval (milliseconds), deadline (seconds), counters
 * @returns the {@link GenerationService}
 */
export function createGenerationService(deps: GenerationServiceDeps): GenerationService {
  const { db } = deps;
  const bound: TaskDeps = { ...deps, commit: groupCommit(db) };
  return {
    submit: (caller, kind, input) => submit(bound, caller, kind, input),
    getTask: (caller, id) => getTask(db, caller, id),
    getTasks: (caller, ids) => getTasksOfKey(db, caller, ids),
    listTasks: (caller, page) => listTasks(db, caller, page),
    applyUpstreamState: (task, state, pollIntervalMs) => applyUpstreamState(bound, task, state, pollIntervalMs),
    resend: (task, request) => resend(bound, task, request),
    adoptSubmission: (task, upstreamTaskId) => adoptSubmission(bound, task, upstreamTaskId),
    expireTask: (task, lateCheckDelayMs) => expireTask(bound, task, lateCheckDelayMs),
  };
}
