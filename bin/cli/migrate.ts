/**
 * `switchyard migrate`, `migrate --dry-run`, `migrate status`, `migrate unlock` (README "Backups
 * and upgrades"; docs/architecture.md §2.3). Only `migrate` itself changes the schema.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Command } from "commander";
import { loadConfig, type Config } from "../../src/config.ts";
import type { Db } from "../../src/db/index.ts";
import type { MigrationStatus, PlannedMigration } from "../../src/db/migration-status.ts";
import { table, type Act } from "./shared.ts";

/**
 * Opens the database as it is, without migrating it, says which one on stderr, runs `work`,
 * closes it. A SQLite file that does not exist is not created: `work` gets a temporary empty
 * database instead (removed afterwards), and stderr says so.
 */
async function withDbAsIs<T>(work: (db: Db, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { checkDatabase, databaseDescription, isPostgresUrl, openDb, sqliteFile } = await import("../../src/db/index.ts");
  const missing = !isPostgresUrl(config.databaseUrl) && !fs.existsSync(sqliteFile(config));
  const scratch = missing ? fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-empty-")) : null;
  const db = openDb(scratch ? { databaseUrl: undefined, dataDir: scratch } : config);
  try {
    await checkDatabase(db);
    const described = scratch ? `sqlite ${sqliteFile(config)} (does not exist yet: shown as a new, empty database)` : databaseDescription(db);
    process.stderr.write(`database: ${described}\n`);
    return await work(db, config);
  } finally {
    await db.destroy();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

/** `migrate status --json`: snake_case like every `--json` of the CLI. */
function statusJson(status: MigrationStatus) {
  return {
    schema_version: status.schemaVersion,
    latest: status.latest,
    applied: status.applied.map((m) => ({ name: m.name, applied_at: m.appliedAt, batch: m.batch })),
    pending: status.pending,
    unknown: status.unknown,
    locked: status.locked,
  };
}

/** `migrate status` for people: one row per migration, then the schema version, pending count and lock. */
function statusText(status: MigrationStatus): string {
  const unknown = new Set(status.unknown);
  const rows = [
    ["MIGRATION", "STATE", "APPLIED AT"],
    ...status.applied.map((m) => [m.name, unknown.has(m.name) ? "unknown to this build" : "applied", m.appliedAt ?? "-"]),
    ...status.pending.map((name) => [name, "pending", "-"]),
  ];
  const lines = [
    table(rows),
    `schema version: ${status.schemaVersion ?? "none"} (this build: ${status.latest})`,
    status.pending.length ? `pending: ${status.pending.length} (switchyard migrate applies them; migrate --dry-run prints their SQL)` : "pending: none",
    status.locked
      ? "lock: held (a migration running outside a transaction, or a stale lock: switchyard migrate unlock frees it once no migration runs)"
      : "lock: free",
  ];
  if (status.unknown.length) lines.push(`unknown: ${status.unknown.join(", ")} (a newer Switchyard migrated this database: run that version)`);
  return lines.join("\n");
}

/** `migrate --dry-run`: every pending migration as an SQL comment naming it, then its statements. */
function plannedSql(planned: PlannedMigration[], latest: string): string {
  if (!planned.length) return `-- no pending migrations: the schema is up to date (${latest})`;
  const lines: string[] = [];
  for (const migration of planned) {
    lines.push(`-- ${migration.name}`);
    for (const { sql, bindings } of migration.statements) {
      const statement = sql.trimEnd().endsWith(";") ? sql.trimEnd() : `${sql.trimEnd()};`;
      lines.push(bindings.length ? `${statement} -- bindings: ${JSON.stringify(bindings)}` : statement);
    }
  }
  lines.push(`-- ${planned.length} pending migration${planned.length === 1 ? "" : "s"}, run in one transaction and rolled back: nothing was applied`);
  return lines.join("\n");
}

/** Registers `migrate` (with `--dry-run`) and its subcommands `status` and `unlock` on the program. */
export function registerMigrateCommands(program: Command, act: Act): void {
  const migrate = program
    .command("migrate")
    .description("bring the database schema up to date (start does it too); --dry-run prints what that would run")
    .option("--dry-run", "print the pending migrations and their SQL, run in a transaction that is rolled back; apply nothing")
    .helpCommand(false);

  act(migrate, async function (this: Command) {
    const { databaseDescription, migrate: applyMigrations, openDb } = await import("../../src/db/index.ts");
    if (this.opts().dryRun) {
      const { dryRunMigrations } = await import("../../src/db/migration-status.ts");
      const { LATEST_MIGRATION } = await import("../../src/db/migrations/index.ts");
      console.log(plannedSql(await withDbAsIs((db) => dryRunMigrations(db)), LATEST_MIGRATION));
      return;
    }
    // Not through withDb: this reports the migrations it applies.
    const db = openDb(loadConfig());
    try {
      const names = await applyMigrations(db);
      process.stderr.write(`database: ${databaseDescription(db)}\n`);
      console.log(names.length ? `applied ${names.join(", ")}` : "database is up to date");
    } finally {
      await db.destroy();
    }
  });

  act(
    migrate
      .command("status")
      .description("list applied and pending migrations (with when each was applied), the schema version and the migration lock")
      .option("--json", "print the status as JSON"),
    async function (this: Command) {
      const { migrationStatus } = await import("../../src/db/migration-status.ts");
      const status = await withDbAsIs((db) => migrationStatus(db));
      console.log(this.opts().json ? JSON.stringify(statusJson(status)) : statusText(status));
    },
  );

  act(migrate.command("unlock").description("free knex's migration lock left by a migrator that died (only while no migration runs)"), async () => {
    const { migrationStatus } = await import("../../src/db/migration-status.ts");
    const freed = await withDbAsIs(async (db) => {
      if (!(await migrationStatus(db)).locked) return false;
      await db.migrate.forceFreeMigrationsLock();
      return true;
    });
    console.log(freed ? "migration lock freed" : "the migration lock was not held");
  });
}
