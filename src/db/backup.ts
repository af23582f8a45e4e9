/**
 * Online backups of the SQLite database and their restore (`switchyard backup FILE`, `switchyard
 * restore FILE`; README "Backups and upgrades"; ADR 0013). PostgreSQL has its own tools (pg_dump
 * -Fc, pg_restore), so both refuse it in one line naming them.
 *
 * Neither ever replaces a file: each writes a temporary file beside its target and gives it the
 * target's name with link(2), which fails when the name exists, so a half-written copy never
 * carries the name and a database that appeared meanwhile is not overwritten.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { Config } from "../config.ts";
import { checkDatabase, isPostgresUrl, openDb, sqliteFile } from "./index.ts";
import { MIGRATIONS_TABLE, UnknownMigrationsError } from "./migration-status.ts";
import { MIGRATION_NAMES } from "./migrations/index.ts";

/** A backup or restore that cannot be done; the message is one line naming why and what to do. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackupError";
  }
}

/** What we use of a better-sqlite3 `Database` (the package ships no types). */
interface SqliteFile {
  pragma(source: string, options?: { simple?: boolean }): unknown;
  prepare(sql: string): { all(): unknown[] };
  backup(file: string, options: { progress(p: BackupProgress): number }): Promise<BackupProgress>;
  close(): void;
}

/** better-sqlite3's progress of a backup, in database pages. */
interface BackupProgress {
  totalPages: number;
  remainingPages: number;
}

type SqliteConstructor = new (file: string, options: { fileMustExist: boolean }) => SqliteFile;

/** Opens an existing SQLite file outside knex (a backup, a copy being restored). */
function openSqliteFile(file: string): SqliteFile {
  const Database = createRequire(import.meta.url)("better-sqlite3") as SqliteConstructor;
  return new Database(file, { fileMustExist: true });
}

/** The most pages better-sqlite3 lets one backup step copy: the whole database. */
const ALL_PAGES = 0x7fffffff;

/** What a backup wrote. */
export interface BackupResult {
  /** The backup file, absolute. */
  file: string;
  bytes: number;
  /** The last migration the backed-up database had applied; null when none. */
  schemaVersion: string | null;
}

/**
 * Copies the SQLite database into `file` while the server keeps running and writing, through
 * SQLite's online backup API (better-sqlite3 `db.backup`). The whole copy is one backup step: one
 * read transaction, so the copy is the database as of one commit. (Steps of a few pages would let
 * each commit of another process restart the backup, forever under a steady stream of writes.)
 * In WAL mode that read blocks no writer; it only keeps the WAL from being reset until it ends.
 * The copy is switched to a rollback journal, so the backup is one self-contained file.
 * @param config settings (`databaseUrl`, `dataDir`)
 * @param file the backup to write; must not exist, its folder must
 * @throws BackupError on PostgreSQL (pg_dump), when there is no database, or `file` exists;
 *   DatabaseUnavailableError when the database cannot be opened
 */
export async function backupDatabase(config: Pick<Config, "databaseUrl" | "dataDir">, file: string): Promise<BackupResult> {
  if (isPostgresUrl(config.databaseUrl)) {
    throw new BackupError('backup: DATABASE_URL is PostgreSQL: back it up with pg_dump -Fc (README "Backups and upgrades")');
  }
  const source = sqliteFile(config);
  if (!fs.existsSync(source)) throw new BackupError(`backup: there is no database at ${source} (DATA_DIR)`);
  const target = path.resolve(file);
  if (fs.existsSync(target)) throw new BackupError(`backup: ${target} exists; a backup never replaces a file: name a new one`);
  if (!fs.existsSync(path.dirname(target))) throw new BackupError(`backup: the folder ${path.dirname(target)} does not exist`);
  const partial = `${target}.partial-${process.pid}`;
  try {
    const db = openDb(config);
    try {
      await checkDatabase(db);
      const client = db.client as { acquireConnection(): Promise<SqliteFile>; releaseConnection(connection: SqliteFile): Promise<void> };
      const connection = await client.acquireConnection();
      try {
        await connection.backup(partial, { progress: () => ALL_PAGES });
      } finally {
        await client.releaseConnection(connection);
      }
    } finally {
      await db.destroy();
    }
    const copy = openSqliteFile(partial);
    let schemaVersion: string | null;
    try {
      copy.pragma("journal_mode = DELETE");
      schemaVersion = appliedMigrations(copy).at(-1) ?? null;
    } finally {
      copy.close();
    }
    giveName(partial, target, () => new BackupError(`backup: ${target} appeared while the backup ran; the backup was not kept`));
    return { file: target, bytes: fs.statSync(target).size, schemaVersion };
  } finally {
    removeSqliteFile(partial);
  }
}

/** What a restore installed. */
export interface RestoreResult {
  /** The database file it made, absolute. */
  file: string;
  /** The last migration the backup had applied. */
  schemaVersion: string | null;
  /** Migrations of this build the backup has not applied (`start` or `migrate` applies them). */
  pending: string[];
}

/**
 * Installs a backup as the SQLite database of `DATA_DIR`, which must hold none: restore never
 * replaces a database (stop the server and move the old files aside first). The backup is
 * copied beside the target, checked (`PRAGMA integrity_check`, a Switchyard schema no newer than
 * this build) and only then given the database's name.
 * @param config settings (`databaseUrl`, `dataDir`)
 * @param file a file written by {@link backupDatabase} (or any self-contained copy of the database)
 * @throws BackupError on PostgreSQL (pg_restore), when `DATA_DIR` holds a database, or the file
 *   is missing, not a SQLite database, damaged, not Switchyard's, or has a write-ahead log beside it;
 *   UnknownMigrationsError when a newer build wrote it
 */
export async function restoreDatabase(config: Pick<Config, "databaseUrl" | "dataDir">, file: string): Promise<RestoreResult> {
  if (isPostgresUrl(config.databaseUrl)) {
    throw new BackupError('restore: DATABASE_URL is PostgreSQL: restore a pg_dump -Fc file with pg_restore (README "Backups and upgrades")');
  }
  const source = path.resolve(file);
  if (!fs.existsSync(source)) throw new BackupError(`restore: there is no file ${source}`);
  if (fs.existsSync(`${source}-wal`) && fs.statSync(`${source}-wal`).size > 0) {
    throw new BackupError(`restore: ${source} has a write-ahead log beside it (it is in use, or was not closed): copy it with switchyard backup`);
  }
  const target = sqliteFile(config);
  if (SQLITE_SUFFIXES.some((suffix) => fs.existsSync(target + suffix))) {
    throw new BackupError(
      `restore: ${target} exists; restore never replaces a database: stop the server, move switchyard.db and its -wal and -shm files aside, then restore`,
    );
  }
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const partial = path.join(path.dirname(target), `.switchyard.db.restore-${process.pid}`);
  try {
    fs.copyFileSync(source, partial, fs.constants.COPYFILE_EXCL);
    const copy = openSqliteFile(partial);
    let applied: string[];
    try {
      applied = checkedBackup(copy, source);
    } finally {
      copy.close();
    }
    const unknown = applied.filter((name) => !MIGRATION_NAMES.includes(name));
    if (unknown.length) throw new UnknownMigrationsError(unknown);
    giveName(partial, target, () => new BackupError(`restore: ${target} appeared while restoring; nothing was replaced`));
    return { file: target, schemaVersion: applied.at(-1) ?? null, pending: MIGRATION_NAMES.filter((name) => !applied.includes(name)) };
  } finally {
    removeSqliteFile(partial);
  }
}

/** The files of one SQLite database besides the main file. */
const SQLITE_SUFFIXES = ["", "-wal", "-shm", "-journal"];

/**
 * Checks a copy being restored.
 * @returns the migrations it has applied, sorted
 * @throws BackupError when it is not a SQLite database, is damaged or is not Switchyard's
 */
function checkedBackup(copy: SqliteFile, source: string): string[] {
  let integrity: unknown;
  try {
    integrity = copy.pragma("integrity_check", { simple: true });
  } catch (error) {
    if ((error as { code?: unknown }).code === "SQLITE_NOTADB") throw new BackupError(`restore: ${source} is not a SQLite database`);
    throw error;
  }
  if (integrity !== "ok") throw new BackupError(`restore: ${source} is damaged (integrity_check: ${String(integrity).split("\n")[0]})`);
  const applied = appliedMigrations(copy);
  if (!applied.length) throw new BackupError(`restore: ${source} is not a Switchyard database (no ${MIGRATIONS_TABLE})`);
  return applied;
}

/** The migrations a SQLite file has applied, sorted; [] when it has no migration table. */
function appliedMigrations(file: SqliteFile): string[] {
  const table = file.prepare(`select 1 from sqlite_master where type = 'table' and name = '${MIGRATIONS_TABLE}'`).all();
  if (!table.length) return [];
  return (file.prepare(`select name from ${MIGRATIONS_TABLE}`).all() as { name: string }[]).map((row) => row.name).sort();
}

/**
 * Gives `partial` the name `target` without replacing anything: a hard link, which fails when
 * the name exists (a file system without hard links gets an exclusive copy instead).
 * @param taken the error when `target` exists
 */
function giveName(partial: string, target: string, taken: () => Error): void {
  try {
    fs.linkSync(partial, target);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EEXIST") throw taken();
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EXDEV") throw error;
    try {
      fs.copyFileSync(partial, target, fs.constants.COPYFILE_EXCL);
    } catch (copyError) {
      if ((copyError as { code?: unknown }).code === "EEXIST") throw taken();
      throw copyError;
    }
  }
}

/** Removes a SQLite file and the journal files SQLite may have left beside it. */
function removeSqliteFile(file: string): void {
  for (const suffix of SQLITE_SUFFIXES) fs.rmSync(file + suffix, { force: true });
}
