/**
 * Reading tasks (docs/api/generation.md §4: a task is visible only to the key that created it):
 * one task, many by id, and the key's list.
 */
import { AppError } from "../../errors.ts";
import type { Db } from "../../db/index.ts";
import { byCreation, keysetPage, type Page, type PageRequest } from "../../pagination.ts";
import type { Caller } from "../../auth/keys.ts";
import { placeholders, selectRows } from "../../db/rows.ts";
import { TASK_RECORD_COLUMNS, toTaskRecord, type TaskRecord, type TaskRow } from "./records.ts";

/**
 * Reads tasks by id in one query, each visible only to the key that created it (docs/api/generation.md
 * §4): the one visibility rule of every task read (the service's `getTasks`, and the cloud
 * subgraph's `node(id:)` for task ids, docs/adr/0019-global-object-ids.md).
 * @param caller the calling key (`keyId`)
 * @param ids task ids (any strings)
 * @returns one entry per id, null where not found or another key's
 */
export async function getTasksOfKey(db: Db, caller: Pick<Caller, "keyId">, ids: readonly string[]): Promise<(TaskRecord | null)[]> {
  if (ids.length === 0) return [];
  const unique = [...new Set(ids)];
  const rows = await selectRows<TaskRow>(db, `select ${TASK_RECORD_COLUMNS} from "tasks" where "id" in (${placeholders(unique.length)}) and "key_id" = ?`, [
    ...unique,
    caller.keyId,
  ]);
  const byId = new Map(rows.map((r) => [r.id, toTaskRecord(r)]));
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
  const [row] = typeof id === "string" && id.length <= 60 ? await selectRows<TaskRow>(db, TASK_BY_ID, [id, caller.keyId]) : [];
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
  const query = db("tasks").select(db.raw(TASK_RECORD_COLUMNS)).where("key_id", caller.keyId);
  if (page.status != null) {
    query.andWhere("status", page.status);
    // By status, counted up to COUNT_BOUND.
    return keysetPage(query, byCreation(), page, toTaskRecord);
  }
  // Unfiltered, the count is the key's stored task_count, and the first page a fixed statement.
  return keysetPage(
    query,
    byCreation(),
    page,
    toTaskRecord,
    {
      stored: async () => Number((await selectRows<{ task_count: number | string }>(db, TASK_COUNT, [caller.keyId]))[0]?.task_count ?? 0),
      firstPageColumn: "total_count",
    },
    (limit) => selectRows<TaskRow>(db, FIRST_TASKS, [caller.keyId, caller.keyId, limit]),
  );
}

/** A task of a key by id. */
const TASK_BY_ID = `select ${TASK_RECORD_COLUMNS} from "tasks" where "id" = ? and "key_id" = ? limit 1`;
/**
 * The key's newest tasks (the first page of {@link listTasks}; index tasks(key_id, created_at, id)),
 * each row with the key's stored task count: page and count in one statement, one snapshot (the
 * subquery is run once per statement on both databases).
 */
const FIRST_TASKS = `select ${TASK_RECORD_COLUMNS}, (select "task_count" from "api_keys" where "id" = ?) as "total_count" from "tasks" where "key_id" = ? order by "created_at" desc, "id" desc limit ?`;
/** The key's stored task count (src/ledger/totals.ts keeps it). */
const TASK_COUNT = 'select "task_count" from "api_keys" where "id" = ? limit 1';
