/**
 * The task record (docs/api/generation.md §2, §4; docs/architecture.md §5): its row, its domain
 * shape, the terminal states and the `task.status_changed` event every transition writes.
 */
import type { MilliYuan } from "../../money.ts";
import type { ModelKind } from "../catalog.ts";
import type { ProviderUsage, TaskStatusCode } from "../upstream/types.ts";

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

/**
 * The columns {@link toTaskRecord} reads, quoted for fixed SQL text (src/db/rows.ts): a read of
 * tasks selects these, never the stored request nor the poller's columns.
 */
export const TASK_RECORD_COLUMNS =
  '"id", "account_id", "key_id", "kind", "model_id", "prompt", "status", "count", "seconds", "resolution", "size", "price", "refunded", "result", "images", "error", "provider_usage", "created_at", "updated_at"';

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
 * The outbox event of a task's new state (`task.status_changed`, docs/architecture.md §5),
 * written in the transaction of the change.
 * @param task the task as changed
 * @returns the event for `appendOutbox`
 */
export function statusEvent(task: TaskRecord) {
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
