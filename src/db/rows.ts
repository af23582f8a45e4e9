/**
 * Reads with fixed SQL text (issue 25 §1): the dashboard's hot reads skip knex's query builder,
 * whose building of each statement cost about a quarter of their SQL time. The statement still
 * runs through knex (`raw`), so request budgets, tracing and statement counts see it, and on
 * SQLite its prepared statement is reused per text (sqlite.ts).
 */
import type { Knex } from "knex";
import { isSqlite, type Db } from "./index.ts";

/**
 * Runs one `select` written once for both databases: `?` placeholders, identifiers in double
 * quotes (SQLite and PostgreSQL both read them), no `??`.
 * @param sql the statement's fixed text
 * @param bindings one value per `?`
 * @returns the rows as the driver gives them (numbers may be strings on PostgreSQL)
 * @throws the driver's error
 */
export async function selectRows<Row>(db: Db | Knex.Transaction, sql: string, bindings: readonly Knex.Value[]): Promise<Row[]> {
  const result = await db.raw(sql, bindings as Knex.Value[]);
  return isSqlite(db) ? (result as Row[]) : (result as { rows: Row[] }).rows;
}

/** `?, ?, …` for `count` values (an `in (…)` list), one text per count, made once. */
const placeholderLists: string[] = [];

/**
 * The placeholders of an `in (…)` list.
 * @param count how many values (≥ 1)
 */
export function placeholders(count: number): string {
  let list = placeholderLists[count];
  if (list === undefined) {
    list = Array.from({ length: count }, () => "?").join(", ");
    placeholderLists[count] = list;
  }
  return list;
}
