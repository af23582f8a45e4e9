/**
 * Reading tasks (docs/api/generation.md §4: a task is visible only to the key that created it):
 * one task, many by id, and the key's list.
 */
import { AppError } from "../../errors.ts";
import type { Db } from "../../db/index.ts";
import { storedTotal } from "../../ledger/totals.ts";
import { byCreation, keysetPage, type Page, type PageRequest } from "../../pagination.ts";
import type { Caller } from "../../auth/keys.ts";
import { toTaskRecord, type TaskRecord, type TaskRow } from "./records.ts";

/**
 * Reads tasks by id in one query, each visible only to the key that created it (docs/api/generation.md
 * §4): the one visibility rule of every task read (the service's `getTasks`, and the cloud
 * subgraph's `node(id:)` for task ids, docs/adr/0019-global-object-ids.md).
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

/**
 * Reads a task of the caller (docs/api/generation.md §4: a task is visible only to the key that created it).
 * @param caller the calling key
 * @param id the task id as given
 * @returns the task
 * @throws AppError `task_not_found` (404) when it does not exist or belongs to another key
 */
export async function getTask(db: Db, caller: Caller, id: string): Promise<TaskRecord> {
  const row = typeof id === "string" && id.length <= 60 ? await db("tasks").where({ id, key_id: caller.keyId }).first() : undefined;
  if (!row) throw new AppError("task_not_found");
  return toTaskRecord(row);
}

/**
 * Lists the caller's tasks newest first; `totalCount` is exact without a status filter (the
 * key's stored count) and counted up to COUNT_BOUND with one.
 * @param caller the calling key
 * @param page `first` (1-100), `after` (opaque cursor) or `backward` and `before`
 *   (src/pagination.ts {@link PageRequest}), optional `status` code
 * @returns one page of the key's tasks
 * @throws AppError `invalid_request` for a bad cursor
 */
export async function listTasks(db: Db, caller: Caller, page: PageRequest & { status?: number | null }): Promise<Page<TaskRecord>> {
  const query = db("tasks").where("key_id", caller.keyId);
  if (page.status != null) query.andWhere("status", page.status);
  // Unfiltered, the count is the key's stored task_count; by status, counted up to COUNT_BOUND.
  const stored = page.status == null ? storedTotal(db, "api_keys", caller.keyId, "task_count") : undefined;
  return keysetPage(query, byCreation(), page, toTaskRecord, { stored });
}
