/**
 * What a database has applied of this build's migrations, and what applying the rest would run
 * (`switchyard migrate status` and `switchyard migrate --dry-run`; README "Backups and upgrades";
 * docs/architecture.md §2.3). Neither changes the database: they read knex's bookkeeping tables
 * without creating them and never take its lock.
 */
import type { Knex } from "knex";
import { LATEST_MIGRATION, MIGRATION_NAMES, migrationNamed } from "./migrations/index.ts";

/** knex's table of applied migrations (`id`, `name`, `batch`, `migration_time`). */
export const MIGRATIONS_TABLE = "knex_migrations";
/** knex's lock table: one row, `is_locked` 1 while a migrator holds it. */
export const MIGRATIONS_LOCK_TABLE = "knex_migrations_lock";

/** One applied migration. */
export interface AppliedMigration {
  name: string;
  /** When it was applied, ISO 8601 UTC; null when knex recorded no time. */
  appliedAt: string | null;
  /** knex's batch number: migrations applied by one run share it. */
  batch: number | null;
}

/** The migration state of a database against this build. */
export interface MigrationStatus {
  /** The last migration the database has applied (names sort in order); null when none. */
  schemaVersion: string | null;
  /** The last migration this build knows ({@link LATEST_MIGRATION}). */
  latest: string;
  /** Applied migrations, in the order they were applied. */
  applied: AppliedMigration[];
  /** Migrations of this build the database has not applied, in the order they would run. */
  pending: string[];
  /** Applied migrations this build does not know: a newer build migrated the database. */
  unknown: string[];
  /**
   * True when the lock row says a migrator holds it. Every migration runs in one transaction with
   * the lock, so a committed lock means a migrator running outside a transaction, or a stale lock.
   */
  locked: boolean;
}

/**
 * Reads the migration state (nothing is created: a database never migrated has every migration pending).
 * @returns see {@link MigrationStatus}
 */
export async function migrationStatus(db: Knex): Promise<MigrationStatus> {
  const rows: { name: string; batch: unknown; migration_time: unknown }[] = (await db.schema.hasTable(MIGRATIONS_TABLE))
    ? await db(MIGRATIONS_TABLE).orderBy("id").select("name", "batch", "migration_time")
    : [];
  const lock: { is_locked: unknown }[] = (await db.schema.hasTable(MIGRATIONS_LOCK_TABLE)) ? await db(MIGRATIONS_LOCK_TABLE).select("is_locked") : [];
  const applied = rows.map((row) => ({
    name: row.name,
    // SQLite keeps knex's time as epoch milliseconds, PostgreSQL as timestamptz.
    appliedAt: row.migration_time == null ? null : new Date(row.migration_time as number | string | Date).toISOString(),
    batch: row.batch == null ? null : Number(row.batch),
  }));
  const names = new Set(applied.map((m) => m.name));
  const known = new Set(MIGRATION_NAMES);
  return {
    schemaVersion: applied.length
      ? applied
          .map((m) => m.name)
          .sort()
          .at(-1)!
      : null,
    latest: LATEST_MIGRATION,
    applied,
    pending: MIGRATION_NAMES.filter((name) => !names.has(name)),
    unknown: applied.map((m) => m.name).filter((name) => !known.has(name)),
    locked: lock.some((row) => Number(row.is_locked) === 1),
  };
}

/** A database migrated by a newer build: this build must not run on it. */
export class UnknownMigrationsError extends Error {
  constructor(readonly names: string[]) {
    super(
      `database: it has migrations this build does not know (${names.join(", ")}): a newer Switchyard migrated it; ` +
        "run that version or newer (downgrades are not supported: restore the backup taken before the upgrade)",
    );
    this.name = "UnknownMigrationsError";
  }
}

/** One statement a migration sends: the SQL text as the driver receives it and its bindings. */
export interface PlannedStatement {
  sql: string;
  bindings: unknown[];
}

/** A pending migration and every statement it would send to this database now. */
export interface PlannedMigration {
  name: string;
  statements: PlannedStatement[];
}

/**
 * Runs the pending migrations as `migrate` would (in order, in one transaction) and rolls that
 * transaction back, recording every statement each one sent. Exact on SQLite and PostgreSQL: both
 * roll DDL back, and a migration that reads rows to decide what to write (004, 007) shows the
 * statements it would send for the rows there are now. It holds the locks the migrations take
 * until it rolls back (on SQLite the write lock: writers of other processes wait for it), and
 * PostgreSQL sequences a migration draws from stay advanced.
 * @returns the pending migrations with their statements; [] when the schema is up to date
 * @throws UnknownMigrationsError when a newer build migrated the database; a migration's own error
 */
export async function dryRunMigrations(db: Knex): Promise<PlannedMigration[]> {
  const { pending, unknown } = await migrationStatus(db);
  if (unknown.length) throw new UnknownMigrationsError(unknown);
  if (!pending.length) return [];
  const planned: PlannedMigration[] = [];
  let current: PlannedMigration | null = null;
  const rollback = new Error("dry run: rolled back");
  // The CLI runs nothing else on this Db meanwhile: every query seen during `up` is the migration's.
  const record = (query: { sql: string; bindings?: unknown[] }) => current?.statements.push({ sql: query.sql, bindings: query.bindings ?? [] });
  db.on("query", record);
  try {
    await db.transaction(async (trx) => {
      for (const name of pending) {
        current = { name, statements: [] };
        planned.push(current);
        await migrationNamed(name)!.up(trx);
        current = null;
      }
      throw rollback;
    });
  } catch (error) {
    if (error !== rollback) throw error;
  } finally {
    db.off("query", record);
  }
  return planned;
}
