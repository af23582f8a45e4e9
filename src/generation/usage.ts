/**
 * Usage of a key (docs/api/generation.md §4 `GET /api/v1/usage`; docs/architecture.md §8): balance, spent,
 * billed seconds and images, and the recent requests of the calling key.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { fitText, type Db } from "../db/index.ts";
import { selectRows } from "../db/rows.ts";
import { AppError } from "../errors.ts";
import type { Caller } from "../auth/keys.ts";
import type { MilliYuan } from "../money.ts";
import { KEY_SPENT_ENTRIES, TASK_BILLED_IMAGES, TASK_BILLED_SECONDS } from "../ledger/totals.ts";

/** Money totals of a key, in milli-yuan, and billed units. */
export interface UsageTotals {
  /** The account's balance, milli-yuan. */
  balance: MilliYuan;
  /** What this key's generation tasks took from the account's balance minus what was refunded, milli-yuan (cloud order payments not included). */
  spent: MilliYuan;
  /** Seconds × count over this key's video tasks that were not refunded. */
  billedSeconds: number;
  /** Images charged after settlement over this key's image tasks. */
  billedImages: number;
}

/** One entry of the request log. */
export interface RequestRecord {
  method: string;
  path: string;
  status: number;
  at: string;
}

/** The totals of a key, read once when the first of them is asked for. */
export type UsageReader = { [K in keyof UsageTotals]: () => Promise<UsageTotals[K]> };

/** A key's running totals and its account's balance (one row by primary keys). */
const TOTALS_OF_KEY =
  'select "a"."balance", "k"."spent", "k"."billed_seconds", "k"."billed_images" from "api_keys" as "k" inner join "accounts" as "a" on "a"."id" = "k"."account_id" where "k"."id" = ? limit 1';

/**
 * Reads the running totals of a key and its account's balance: one row of each, whatever the
 * key's history (docs/architecture.md §3.7).
 * @returns balance and spent in milli-yuan, billed seconds and images
 * @throws AppError `not_found` when the key does not exist
 */
async function readTotals(db: Db, caller: Caller): Promise<UsageTotals> {
  const [row] = await selectRows<Record<"balance" | "spent" | "billed_seconds" | "billed_images", number | string>>(db, TOTALS_OF_KEY, [caller.keyId]);
  if (!row) throw new AppError("not_found", "API key not found");
  return { balance: Number(row.balance), spent: Number(row.spent), billedSeconds: Number(row.billed_seconds), billedImages: Number(row.billed_images) };
}

/**
 * Reads the totals of the calling key on first use and once: a dashboard asking for the balance,
 * spent and billed units runs one query, or none when they came with the key.
 * @param caller the authenticated caller (asked for on the first read)
 * @param withKey the totals as read with the key when they are as fresh as a read now
 *   (subgraphs/shared/auth.ts `CallerAccess.totals`: read-only requests only), else null
 * @returns one memoised reader per total (balance and spent in milli-yuan)
 */
export function usageReader(db: Db, caller: () => Promise<Caller>, withKey?: () => Promise<UsageTotals | null>): UsageReader {
  let totals: Promise<UsageTotals> | undefined;
  const readNow = () => caller().then((c) => readTotals(db, c));
  const read = () =>
    (totals ??= withKey
      ? caller()
          .then(() => withKey())
          .then((t) => t ?? readNow())
      : readNow());
  return {
    balance: () => read().then((t) => t.balance),
    spent: () => read().then((t) => t.spent),
    billedSeconds: () => read().then((t) => t.billedSeconds),
    billedImages: () => read().then((t) => t.billedImages),
  };
}

/**
 * Reads every total of the calling key (one query).
 * @returns balance and spent in milli-yuan, billed seconds and images
 */
export function usageTotals(db: Db, caller: Caller): Promise<UsageTotals> {
  return readTotals(db, caller);
}

/** One UTC day of a key's usage (`viewer.usageByDay`). */
export interface DailyUsage {
  /** The day, ISO 8601 `YYYY-MM-DD`, in UTC. */
  date: string;
  /** Generation debits minus refunds of the key recorded that day, milli-yuan (negative when refunds outweigh debits; cloud order payments not included). */
  spent: MilliYuan;
  /** Seconds × count over the key's video tasks created that day that were not refunded. */
  billedSeconds: number;
  /** Images charged after settlement over the key's image tasks created that day. */
  billedImages: number;
}

/** Days `usageByDay` covers by default, and at most. */
export const USAGE_DAYS_DEFAULT = 30;
export const USAGE_DAYS_MAX = 90;

/**
 * Reads a `days` argument of the per-day usage.
 * @returns 1-90; {@link USAGE_DAYS_DEFAULT} when absent
 * @throws AppError `invalid_request` (400, field `days`) outside 1-90 or not an integer
 */
export function usageDays(days: number | null | undefined): number {
  if (days == null) return USAGE_DAYS_DEFAULT;
  if (!Number.isInteger(days) || days < 1 || days > USAGE_DAYS_MAX) {
    throw new AppError("invalid_request", `days must be an integer from 1 to ${USAGE_DAYS_MAX}`, { field: "days" });
  }
  return days;
}

const DAY_MS = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * The one statement behind {@link usageByDay}: the key's generation debits and refunds
 * ({@link KEY_SPENT_ENTRIES}: never a cloud customer wallet's) and its tasks
 * created in [`from`, `to`), summed per UTC day (`created_at` is ISO 8601 UTC text, so its first
 * ten characters are the day). Both halves are range reads of a (`key_id`, `created_at`) index,
 * never a scan of the key's whole history. Exported for the test that EXPLAINs it.
 * @param from first instant, ISO 8601 UTC (inclusive)
 * @param to last instant, ISO 8601 UTC (exclusive)
 * @returns rows `{ day, spent, seconds, images }` (spent in milli-yuan)
 */
export function usageByDayQuery(db: Db, keyId: string, from: string, to: string) {
  const day = db.raw("substr(created_at, 1, 10) as day");
  const ledger = db("ledger_entries")
    .select(day, db.raw("0 - amount as spent"), db.raw("0 as seconds"), db.raw("0 as images"))
    .where("key_id", keyId)
    .where("created_at", ">=", from)
    .where("created_at", "<", to)
    .whereRaw(KEY_SPENT_ENTRIES);
  // The rules of the key's running totals billed_seconds and billed_images, per task.
  const tasks = db("tasks")
    .select(day, db.raw("0 as spent"), db.raw(`${TASK_BILLED_SECONDS} as seconds`), db.raw(`${TASK_BILLED_IMAGES} as images`))
    .where("key_id", keyId)
    .where("created_at", ">=", from)
    .where("created_at", "<", to);
  return db.from(ledger.unionAll(tasks).as("usage")).select("day").sum({ spent: "spent", seconds: "seconds", images: "images" }).groupBy("day").orderBy("day");
}

/**
 * The calling key's usage per UTC day over the last `days` days, today included: one entry per
 * day, oldest first, days without usage as zeros. Spending is counted on the day of the ledger
 * entry (a refund on the day it was made), billed units on the day the task was created.
 * @param days 1-90 (see {@link usageDays})
 * @param now the current time (tests pass their own)
 */
export async function usageByDay(db: Db, caller: Caller, days: number, now: Date = new Date()): Promise<DailyUsage[]> {
  const firstDayMs = Date.parse(isoDay(now.getTime())) - (days - 1) * DAY_MS;
  const from = new Date(firstDayMs).toISOString();
  const to = new Date(firstDayMs + days * DAY_MS).toISOString();
  const rows: { day: string; spent: unknown; seconds: unknown; images: unknown }[] = await usageByDayQuery(db, caller.keyId, from, to);
  const byDay = new Map(rows.map((row) => [row.day, row]));
  return Array.from({ length: days }, (_, i) => {
    const date = isoDay(firstDayMs + i * DAY_MS);
    const row = byDay.get(date);
    return {
      date,
      spent: Number(row?.spent ?? 0),
      billedSeconds: Number(row?.seconds ?? 0),
      billedImages: Number(row?.images ?? 0),
    };
  });
}

/**
 * The most recent requests of the calling key, newest first. Rows still waiting in this
 * process's request-log batch are written first, so a key sees its own requests at once.
 * @param limit 1-100
 */
export async function recentRequests(db: Db, caller: Caller, limit: number): Promise<RequestRecord[]> {
  await flushRequestLog(db);
  const rows = await db("request_log").where("key_id", caller.keyId).orderBy("id", "desc").limit(limit);
  return rows.map((r: { method: string; path: string; status: number | string; at: string }) => ({
    method: r.method,
    path: r.path,
    status: Number(r.status),
    at: r.at,
  }));
}

/** One request of a key, as {@link recordRequest} takes it. */
export type RequestEntry = RequestRecord & { keyId: string; requestId?: string | null };

/**
 * Runs a function in the async context this module was loaded in, outside every request: a
 * batch belongs to no request, so its INSERT must not be counted against (or traced inside)
 * whichever request happened to start the batch's timer.
 */
const outsideRequests = AsyncLocalStorage.snapshot();

/** How long a request-log row may wait for others to share its INSERT, in milliseconds. */
const REQUEST_LOG_BATCH_MS = 10;
/**
 * The most rows one INSERT writes: knex writes a multi-row insert on SQLite as one SELECT per row
 * joined by UNION ALL, and SQLite allows 500 terms in a compound SELECT.
 */
const REQUEST_LOG_BATCH_ROWS = 200;

/**
 * Batches request-log rows: every router request of a key adds one, and one INSERT per 10 ms
 * instead of one transaction per request took a write (and, on SQLite, a commit) off every read.
 * A row is not money: one that waited in a process killed within those 10 ms is lost with it
 * (ADR 0005). Readers in this process flush first; other processes see a row within 10 ms.
 */
class RequestLogWriter {
  private pending: { row: Record<string, unknown>; done: { resolve(): void; reject(error: unknown): void } }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly db: Db) {}

  add(entry: RequestEntry): Promise<void> {
    // Fitted to the columns (varchar: PostgreSQL rejects longer values, SQLite would keep them).
    const row = {
      key_id: entry.keyId,
      method: fitText(entry.method, 10),
      path: fitText(entry.path, 300),
      status: entry.status,
      request_id: fitText(entry.requestId, 80),
      at: entry.at,
    };
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ row, done: { resolve, reject } });
      if (this.pending.length >= REQUEST_LOG_BATCH_ROWS) outsideRequests(() => void this.flush());
      else this.timer ??= outsideRequests(() => setTimeout(() => void this.flush(), REQUEST_LOG_BATCH_MS));
    });
  }

  /** Writes every row added so far (in order, one INSERT per batch); resolves when they are in. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending.splice(0);
    if (batch.length) {
      this.writing = this.writing.then(async () => {
        try {
          for (let i = 0; i < batch.length; i += REQUEST_LOG_BATCH_ROWS) {
            await this.db("request_log").insert(batch.slice(i, i + REQUEST_LOG_BATCH_ROWS).map((p) => p.row));
          }
          for (const p of batch) p.done.resolve();
        } catch (error) {
          for (const p of batch) p.done.reject(error);
        }
      });
    }
    return this.writing;
  }
}

const writers = new WeakMap<Db, RequestLogWriter>();
function writerOf(db: Db): RequestLogWriter {
  let writer = writers.get(db);
  if (!writer) {
    writer = new RequestLogWriter(db);
    writers.set(db, writer);
  }
  return writer;
}

/**
 * Records one request of a key in the request log, batched with the requests of the next 10 ms.
 * @returns a promise settled when the row is written (a caller answering a request need not wait for it)
 * @throws (the promise) the database error that lost the row's batch
 */
export function recordRequest(db: Db, entry: RequestEntry): Promise<void> {
  return writerOf(db).add(entry);
}

/** Writes the request-log rows still waiting in this process (before the database closes). */
export function flushRequestLog(db: Db): Promise<void> {
  return writers.get(db)?.flush() ?? Promise.resolve();
}
