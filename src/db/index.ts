/**
 * The knex instance (docs/architecture.md §2 storage): SQLite under DATA_DIR by default, PostgreSQL when
 * DATABASE_URL is `postgres://…`. The same migrations and queries run on both; what differs
 * between them lives here (unique-violation detection, work-queue claims) and, for connection
 * set-up, in sqlite.ts and postgres.ts.
 */
import fs from "node:fs";
import type { Knex } from "knex";
import { ConfigError, type Config } from "../config.ts";
import { migrationSource } from "./migrations/index.ts";
import { MIGRATIONS_LOCK_TABLE, UnknownMigrationsError } from "./migration-status.ts";
import { CONNECT_TIMEOUT_MS, openPostgres } from "./postgres.ts";
import { openSqlite, sqliteFile } from "./sqlite.ts";

export { CONNECT_TIMEOUT_MS, sqliteFile };

export type Db = Knex;

/** True when the database is SQLite (affects only connection set-up, never business rules). */
export function isSqlite(db: Db | Knex.Transaction): boolean {
  return db.client.dialect === "sqlite3"; // the sqlite3 and better-sqlite3 clients alike
}

/** True when `url` names a PostgreSQL database (`postgres://` or `postgresql://`). */
export function isPostgresUrl(url: string | null | undefined): url is string {
  return typeof url === "string" && /^postgres(ql)?:\/\//i.test(url);
}

/**
 * Opens the database.
 * PostgreSQL: a pool of up to 10 connections (none kept while idle), bigint and numeric as numbers.
 * SQLite: WAL journal, 5 s busy timeout (several processes may share the file), foreign keys on,
 * a 64 MiB page cache,
 * one connection (SQLite has one writer; one connection serialises our transactions in-process),
 * through better-sqlite3 with its prepared statements reused. better-sqlite3 runs each statement
 * on the calling thread (tens of microseconds, no thread-pool round trip): measured on REST
 * submissions, twice the throughput of sqlite3 at half the CPU. The price: waiting for a lock
 * held by another process blocks this one's event loop, so processes sharing one file is for
 * tools and tests; instances that scale out share PostgreSQL.
 * Opening connects to nothing yet: {@link checkDatabase} (run by {@link migrate}) does.
 * @param config settings (`databaseUrl`, `dataDir`)
 * @returns a knex instance; the caller destroys it
 * @throws DatabaseUnavailableError when the SQLite folder cannot be made
 */
export function openDb(config: Pick<Config, "databaseUrl" | "dataDir">): Db {
  const description = describeDatabase(config);
  if (isPostgresUrl(config.databaseUrl)) {
    const db = openPostgres(config.databaseUrl, knexLog);
    descriptions.set(db, { text: description, variable: "DATABASE_URL" });
    return db;
  }
  try {
    fs.mkdirSync(config.dataDir, { recursive: true });
  } catch (error) {
    throw new DatabaseUnavailableError(`database: cannot open ${description} (DATA_DIR): ${reasonOf(error)}`);
  }
  const filename = sqliteFile(config);
  const db = openSqlite(filename, knexLog);
  descriptions.set(db, { text: description, variable: "DATA_DIR" });
  return db;
}

/**
 * knex's own messages go to stderr, never among the JSON log lines on stdout. Its warning about
 * a failed connection is dropped: the error reaches the caller, who reports it once.
 */
const knexLog = {
  warn(message: unknown) {
    if (typeof message === "string" && message.startsWith("Acquire connection error")) return;
    console.error(message);
  },
  error: (message: unknown) => console.error(message),
  deprecate: (message: unknown) => console.error(message),
};

/** Which database each open Db is, for people, and the variable that chose it. */
const descriptions = new WeakMap<Db, { text: string; variable: string }>();

/**
 * Names the database a configuration opens, for people (never a password or user name):
 * `sqlite /abs/data/switchyard.db` or `postgres 127.0.0.1:5432/switchyard`.
 * @param config settings (`databaseUrl`, `dataDir`)
 */
export function describeDatabase(config: Pick<Config, "databaseUrl" | "dataDir">): string {
  if (!isPostgresUrl(config.databaseUrl)) return `sqlite ${sqliteFile(config)}`;
  let url: URL;
  try {
    url = new URL(config.databaseUrl);
  } catch {
    return "postgres (DATABASE_URL is not a valid URL)";
  }
  // A socket folder or a host may also come as `?host=`; the database defaults to the user's name.
  const host = decodeURIComponent(url.hostname) || url.searchParams.get("host") || "localhost";
  const database = decodeURIComponent(url.pathname.replace(/^\//, "")) || decodeURIComponent(url.username) || "postgres";
  return `postgres ${host}:${url.port || "5432"}/${database}`;
}

/** The database of an open Db, as {@link describeDatabase} names it. */
export function databaseDescription(db: Db): string {
  return descriptions.get(db)?.text ?? "database";
}

/** A database that cannot be reached or opened; its message is one line naming it and the setting. */
export class DatabaseUnavailableError extends ConfigError {
  constructor(message: string) {
    super(message);
    this.name = "DatabaseUnavailableError";
  }
}

/** A short reason for a connection failure: no stack, no URL (it may hold a password). */
function reasonOf(error: unknown): string {
  const e = (error ?? {}) as { code?: unknown; message?: unknown };
  const message = String(e.message ?? error).split("\n")[0]!;
  switch (e.code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ENOTFOUND":
      return "host not found";
    case "EAI_AGAIN":
      return "host name lookup failed";
    case "ETIMEDOUT":
      return `no answer within ${CONNECT_TIMEOUT_MS / 1000} s`;
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "host unreachable";
    case "EACCES":
      return "permission denied";
  }
  if (/timeout/i.test(message)) return `no answer within ${CONNECT_TIMEOUT_MS / 1000} s`;
  return message.replace(/^Error: /, "");
}

/**
 * Checks that the database answers (one `select 1`). Called by {@link migrate}, so every process
 * and command that opens the database learns at once that it cannot, in one line.
 * @throws DatabaseUnavailableError naming the database and DATABASE_URL or DATA_DIR, with the
 *   cause: `database: cannot connect to postgres 127.0.0.1:5999/x (DATABASE_URL): connection refused`
 */
export async function checkDatabase(db: Db): Promise<void> {
  try {
    await db.raw("select 1");
  } catch (error) {
    const known = descriptions.get(db);
    const what = known ? `${known.text} (${known.variable})` : "the database";
    throw new DatabaseUnavailableError(`database: cannot ${isSqlite(db) ? "open" : "connect to"} ${what}: ${reasonOf(error)}`);
  }
}

/**
 * Brings the schema up to date. Several instances may start at once on one PostgreSQL database:
 * knex refuses a second migrator while the first holds its lock row instead of waiting, so this
 * waits for it (up to `waitMs`) and runs again, finding nothing left to do.
 * @param waitMs how long to wait for another instance's migration (default 60 s)
 * @returns the names of the migrations that ran
 * @throws DatabaseUnavailableError when the database does not answer ({@link checkDatabase});
 *   UnknownMigrationsError when a newer build migrated the database; MigrationLockedError when
 *   the migration lock is still held after `waitMs`; a failing migration's error (nothing of the
 *   run is applied: every pending migration runs in one transaction with the lock)
 */
export async function migrate(db: Db, waitMs = 60_000): Promise<string[]> {
  await checkDatabase(db);
  const deadline = Date.now() + waitMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    try {
      const [, names] = await db.migrate.latest({ migrationSource });
      return names as string[];
    } catch (error) {
      const message = String((error as Error)?.message);
      // knex's words for applied migrations missing from the source: the database is newer than this build.
      const missing = /migration directory is corrupt, the following files are missing: (.*)$/i.exec(message);
      if (missing) throw new UnknownMigrationsError(missing[1]!.split(/,\s*/));
      const locked = /already locked/i.test(message);
      if (!locked) throw error;
      if (Date.now() + delay > deadline) throw new MigrationLockedError(waitMs);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** knex's migration lock is still held after `migrate` waited for it. */
export class MigrationLockedError extends Error {
  constructor(waitMs: number) {
    super(
      `database: the migration lock (${MIGRATIONS_LOCK_TABLE}) is still held after ${waitMs / 1000} s: ` +
        "another process is migrating, or one died while migrating; `switchyard migrate status` shows it, " +
        "`switchyard migrate unlock` frees it once no migration runs",
    );
    this.name = "MigrationLockedError";
  }
}

/** The current time as ISO 8601 UTC with milliseconds (fixed width, sortable as text). */
export function nowIso(): string {
  return new Date().toISOString();
}

/**
 * Cuts a text to at most `maxChars` characters (code points, as PostgreSQL counts them) so it
 * fits a `varchar(maxChars)` column: SQLite ignores declared lengths, PostgreSQL rejects longer
 * values. For texts that come from outside (an upstream's error message, a header).
 */
export function fitText(value: string, maxChars: number): string;
export function fitText(value: string | null | undefined, maxChars: number): string | null;
export function fitText(value: string | null | undefined, maxChars: number): string | null {
  if (value == null) return null;
  if (value.length <= maxChars) return value;
  return Array.from(value).slice(0, maxChars).join("");
}

/**
 * True when a database error is a unique (or primary-key) violation: PostgreSQL SQLSTATE 23505,
 * SQLite `SQLITE_CONSTRAINT` "UNIQUE constraint failed". The one place that tells them apart.
 */
export function isUniqueViolation(error: unknown): boolean {
  if (!error || typeof error !== "object") return false;
  const e = error as { code?: unknown; errno?: unknown; message?: unknown };
  if (e.code === "23505") return true;
  const sqliteConstraint =
    e.code === "SQLITE_CONSTRAINT" || e.code === "SQLITE_CONSTRAINT_UNIQUE" || e.code === "SQLITE_CONSTRAINT_PRIMARYKEY" || e.errno === 19;
  return sqliteConstraint && /UNIQUE constraint failed/.test(String(e.message ?? ""));
}

/** One ordering column of a {@link claimBatch}. */
export interface ClaimOrder {
  column: string;
  order?: "asc" | "desc";
}

/**
 * Claims up to `limit` rows of a work queue for this process and leases them: the rows that match
 * `where`, in `order`, each updated with `lease` (a time pushed forward such as `next_poll_at`,
 * `provision_due_at` or `lease_until`, which takes them out of `where` until it passes), so many
 * instances share the queue without two of them taking the same row.
 *
 * - PostgreSQL: `SELECT … FOR UPDATE SKIP LOCKED` and the lease update in one short transaction;
 *   rows another instance is claiming are skipped, not waited for.
 * - SQLite (one writer): the ordered select, then one `UPDATE … WHERE id IN (…) AND <where>
 *   RETURNING id`, a compare-and-swap that only leases rows still matching `where`.
 *
 * The lease only shares the work out; the state transitions that follow keep their own
 * compare-and-swap, which remains the guard against doing an item twice.
 * @param table a table with an `id` primary key
 * @param where the filter of due, unleased rows
 * @param order ordering columns, most significant first
 * @param lease the columns to set on every claimed row
 * @returns the claimed rows in `order`, with `lease` applied
 */
export async function claimBatch<Row extends { id: string | number }>(
  db: Db,
  table: string,
  where: (query: Knex.QueryBuilder) => void,
  order: ClaimOrder[],
  limit: number,
  lease: Record<string, unknown>,
): Promise<Row[]> {
  const filter = function (this: Knex.QueryBuilder) {
    where(this);
  };
  const orderBy = order.map((o) => ({ column: o.column, order: o.order ?? "asc" }));
  if (isSqlite(db)) {
    const candidates: Row[] = await db(table).where(filter).orderBy(orderBy).limit(limit);
    if (candidates.length === 0) return [];
    const won: { id: unknown }[] = await db(table)
      .whereIn(
        "id",
        candidates.map((row) => row.id),
      )
      .andWhere(filter)
      .update(lease)
      .returning("id");
    const ids = new Set(won.map((row) => row.id));
    return candidates.filter((row) => ids.has(row.id)).map((row) => ({ ...row, ...lease }));
  }
  return db.transaction(async (trx) => {
    const rows: Row[] = await trx(table).where(filter).orderBy(orderBy).limit(limit).forUpdate().skipLocked();
    if (rows.length === 0) return [];
    await trx(table)
      .whereIn(
        "id",
        rows.map((row) => row.id),
      )
      .update(lease);
    return rows.map((row) => ({ ...row, ...lease }));
  });
}
