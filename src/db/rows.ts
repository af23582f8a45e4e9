/**
 * Reads with fixed SQL text (issue 25 §1): the dashboard's hot reads skip knex's query builder,
 * whose building of each statement cost about a quarter of their SQL time. The statement still
 * runs on knex's pool and emits knex's `query` events, so request budgets and statement counts see
 * it, and on SQLite its prepared statement is reused per text (sqlite.ts); on SQLite outside a
 * transaction it skips knex's runner too ({@link sqliteRows}).
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
  if (isSqlite(db) && !(db as Partial<Knex.Transaction>).isTransaction) return sqliteRows<Row>(db, sql, bindings);
  const result = await db.raw(sql, bindings as Knex.Value[]);
  return isSqlite(db) ? (result as Row[]) : (result as { rows: Row[] }).rows;
}

/** What {@link sqliteRows} uses of knex's better-sqlite3 client. */
interface SqliteClient {
  acquireConnection(): Promise<{ prepare(sql: string): { all(bindings: unknown[]): unknown[] } }>;
  releaseConnection(connection: unknown): Promise<void>;
  emit(event: string, ...args: unknown[]): boolean;
}

/**
 * A read on SQLite outside a transaction, without knex's runner (its builder, query object,
 * uid and debug per statement were about a third of the dashboard's SQL time: bench/README.md
 * "Round 3 step G"). Everything else stays as knex does it: the connection comes from the pool
 * (so request budgets' connection slots and sqlite.ts's turns apply), the `query` event is
 * emitted before the statement runs (request budgets count it, and their throw refuses it
 * before it is sent), and the prepared statement is the connection's cached one for the text.
 */
async function sqliteRows<Row>(db: Db, sql: string, bindings: readonly Knex.Value[]): Promise<Row[]> {
  const values = bindings.map(sqliteBinding);
  const client = db.client as unknown as SqliteClient;
  const connection = await client.acquireConnection();
  try {
    const query = { method: "raw", sql, bindings: values, options: {} };
    client.emit("query", query);
    let rows: Row[];
    try {
      rows = connection.prepare(sql).all(values) as Row[];
    } catch (error) {
      client.emit("query-error", error, query);
      throw error;
    }
    client.emit("query-response", rows, query);
    return rows;
  } finally {
    await client.releaseConnection(connection);
  }
}

/** A binding as knex's better-sqlite3 client passes it: dates as epoch ms, booleans as 0/1. @throws Error on undefined, as knex */
function sqliteBinding(value: Knex.Value): unknown {
  if (value === undefined) throw new Error("Undefined binding(s) detected when compiling RAW query");
  if (value instanceof Date) return value.valueOf();
  if (typeof value === "boolean") return Number(value);
  return value;
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
