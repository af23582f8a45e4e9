/**
 * The live overview of the operator console (issue 16 "a live overview"; docs/api/generation.md
 * "Admin"): tasks per minute, success rate, revenue and refunds today. Every figure is one range
 * over an indexed time column (tasks (`created_at`, `status`), ledger entries (`kind`,
 * `created_at`, `amount`): src/db/migrations/010_admin_console_indexes.ts), answered from the
 * index alone, never a scan of the whole history. Days and minutes are UTC.
 */
import { AppError } from "../errors.ts";
import type { Db } from "../db/index.ts";
import type { MilliYuan } from "../money.ts";

/** The most minutes one overview spans: three hours of per-minute points. */
export const MAX_OVERVIEW_MINUTES = 180;

/** Tasks created in one UTC minute, by how they stand now. */
export interface MinuteTasks {
  /** The minute, ISO 8601 `YYYY-MM-DDTHH:MM` (UTC). */
  minute: string;
  submitted: number;
  succeeded: number;
  failed: number;
}

/** Task counts of a time range, by how they stand now. */
export interface TaskCounts {
  submitted: number;
  succeeded: number;
  failed: number;
  /** succeeded / (succeeded + failed); null before any task finished. */
  successRate: number | null;
}

/** The overview; money in milli-yuan. */
export interface Overview {
  /** ISO 8601 time the figures were read. */
  at: string;
  /** One point per minute of the last `minutes` minutes, oldest first, this minute included. */
  perMinute: MinuteTasks[];
  /** Tasks created in the last `minutes` minutes. */
  window: TaskCounts;
  /** Tasks created since 00:00 UTC today. */
  today: TaskCounts;
  /** Debits since 00:00 UTC (generation tasks and cloud orders), as a positive amount. */
  revenueToday: MilliYuan;
  /** Refunds since 00:00 UTC. */
  refundsToday: MilliYuan;
  /** Top-ups since 00:00 UTC. */
  topUpsToday: MilliYuan;
}

const counts = (rows: { status: number; n: number }[]): TaskCounts => {
  let submitted = 0;
  let succeeded = 0;
  let failed = 0;
  for (const { status, n } of rows) {
    submitted += n;
    if (status === 1) succeeded += n;
    if (status === 2) failed += n;
  }
  return { submitted, succeeded, failed, successRate: succeeded + failed ? succeeded / (succeeded + failed) : null };
};

/**
 * Tasks created since `since`, counted per UTC minute and status: one range of the (`created_at`,
 * `status`) index, read from the index alone.
 */
export function overviewTasksQuery(db: Db, since: string) {
  const minute = db.raw("substr(created_at, 1, 16)");
  return db("tasks").where("created_at", ">=", since).groupByRaw("substr(created_at, 1, 16), status").select({ minute, status: "status" }).count({ n: "*" });
}

/**
 * Debits, refunds and top-ups since `since`, summed per kind: one range of the (`kind`,
 * `created_at`, `amount`) index per kind, read from the index alone.
 */
export function overviewMoneyQuery(db: Db, since: string) {
  return db("ledger_entries")
    .whereIn("kind", ["debit", "refund", "topup"])
    .andWhere("created_at", ">=", since)
    .groupBy("kind")
    .select("kind")
    .sum({ total: "amount" });
}

/**
 * Reads the overview.
 * @param minutes the window of the per-minute series, 1-{@link MAX_OVERVIEW_MINUTES}
 * @param nowMs the clock, epoch milliseconds
 * @returns the figures (see {@link Overview})
 * @throws AppError `invalid_request` (400, field `minutes`) for another window
 */
export async function readOverview(db: Db, minutes: number, nowMs: number = Date.now()): Promise<Overview> {
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_OVERVIEW_MINUTES) {
    throw new AppError("invalid_request", `minutes must be an integer from 1 to ${MAX_OVERVIEW_MINUTES}`, { field: "minutes" });
  }
  const thisMinute = Math.floor(nowMs / 60_000) * 60_000;
  const since = new Date(thisMinute - (minutes - 1) * 60_000).toISOString();
  const dayStart = new Date(Math.floor(nowMs / 86_400_000) * 86_400_000).toISOString();
  // biome-ignore lint/complexity/useMathMinMax: ISO 8601 strings compare as text, Math.min would turn them into NaN
  const rangeStart = since < dayStart ? since : dayStart;
  const [taskRows, moneyRows] = await Promise.all([overviewTasksQuery(db, rangeStart), overviewMoneyQuery(db, dayStart)]);
  const rows = (taskRows as { minute: string; status: number | string; n: number | string }[]).map((r) => ({
    minute: String(r.minute),
    status: Number(r.status),
    n: Number(r.n),
  }));
  const sinceMinute = since.slice(0, 16);
  const todayMinute = dayStart.slice(0, 16);
  const perMinute: MinuteTasks[] = [];
  const index = new Map<string, MinuteTasks>();
  for (let t = thisMinute - (minutes - 1) * 60_000; t <= thisMinute; t += 60_000) {
    const point = { minute: new Date(t).toISOString().slice(0, 16), submitted: 0, succeeded: 0, failed: 0 };
    perMinute.push(point);
    index.set(point.minute, point);
  }
  for (const row of rows) {
    const point = index.get(row.minute);
    if (!point) continue;
    point.submitted += row.n;
    if (row.status === 1) point.succeeded += row.n;
    if (row.status === 2) point.failed += row.n;
  }
  const money = new Map((moneyRows as { kind: string; total: number | string | null }[]).map((r) => [String(r.kind), Number(r.total ?? 0)]));
  return {
    at: new Date(nowMs).toISOString(),
    perMinute,
    window: counts(rows.filter((r) => r.minute >= sinceMinute)),
    today: counts(rows.filter((r) => r.minute >= todayMinute)),
    revenueToday: -(money.get("debit") ?? 0),
    refundsToday: money.get("refund") ?? 0,
    topUpsToday: money.get("topup") ?? 0,
  };
}
