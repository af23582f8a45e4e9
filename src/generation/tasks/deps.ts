/**
 * What every task operation needs (docs/architecture.md §5): the resolved dependencies, and the
 * money side of a task change that the settling operations share.
 */
import type { Knex } from "knex";
import { credit } from "../../ledger/index.ts";
import { addKeyTotals, taskUnitsDelta } from "../../ledger/totals.ts";
import type { Db } from "../../db/index.ts";
import type { GroupCommit } from "../../db/group-commit.ts";
import type { MilliYuan } from "../../money.ts";
import type { UrlCheck } from "../validation.ts";
import type { GenerationUpstream } from "../upstream/types.ts";
import type { TaskCounters } from "../metrics.ts";
import type { TaskRecord } from "./records.ts";

/** The dependencies of the task operations, resolved by `createGenerationService` (tasks/index.ts). */
export interface TaskDeps {
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
  /** The submissions' group commit on `db` (src/db/group-commit.ts, ADR 0011): one per service. */
  commit: GroupCommit;
}

/**
 * The money side of one task change, inside the transaction that writes the change: the refund
 * (once: its ref is unique) and the key's billed units, moved together (docs/architecture.md §3.7).
 * @param before the task as the change found it; `after` its new status and refunded total
 * @param refund milli-yuan given back by this change (0: none)
 * @param reason the ledger entry's reason
 */
export async function settle(trx: Knex.Transaction, before: TaskRecord, after: TaskRecord, refund: MilliYuan, reason: string): Promise<void> {
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
