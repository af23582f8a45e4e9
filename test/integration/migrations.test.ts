/**
 * What a failed migration leaves behind, as README "Backups and upgrades" says (issue 23 §6),
 * on the database of the run (SQLite by default, PostgreSQL with TEST_DATABASE=postgres).
 */
import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, MigrationLockedError, type Db } from "../../src/db/index.ts";
import { dryRunMigrations, migrationStatus } from "../../src/db/migration-status.ts";
import { MIGRATION_NAMES, migrationNamed, migrationSource } from "../../src/db/migrations/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";

/** This build's migrations and, after them, one that creates a table and then fails. */
const withABrokenOne: Knex.MigrationSource<string> = {
  getMigrations: async () => [...MIGRATION_NAMES, "999_broken"],
  getMigrationName: (name) => name,
  getMigration: async (name) =>
    name === "999_broken"
      ? {
          async up(knex: Knex) {
            await knex.schema.createTable("half_done", (t) => t.string("id"));
            await knex.raw("select * from no_such_table");
          },
          async down() {},
        }
      : migrationNamed(name)!,
};

let testDb: TestDb;
let db: Db;

beforeAll(async () => {
  testDb = await openTestDb("switchyard-migrations-");
  db = testDb.db;
});

afterAll(async () => {
  await testDb?.close();
});

describe("migrations", () => {
  it("runs every migration in a transaction (what the README promises about a failed one rests on it)", () => {
    // knex reads `config.transaction` of a migration module (false: run it outside a transaction); its types omit it.
    for (const name of MIGRATION_NAMES) {
      const migration = migrationNamed(name) as { config?: { transaction?: boolean } };
      expect({ name, transaction: migration.config?.transaction }).toEqual({ name, transaction: undefined });
    }
    expect(db.client.config.migrations?.disableTransactions).toBeUndefined();
  });

  it("leaves nothing of a run whose migration fails: no table of that run, no knex_migrations row, the lock free", async () => {
    const failure = await db.migrate.latest({ migrationSource: withABrokenOne }).catch((error: Error) => error);
    expect(String(failure)).toMatch(/no_such_table/);
    // Every migration of the run rolled back with it, the first ones included.
    expect(await db.schema.hasTable("accounts")).toBe(false);
    expect(await db.schema.hasTable("half_done")).toBe(false);
    const status = await migrationStatus(db);
    expect(status).toMatchObject({ applied: [], pending: MIGRATION_NAMES, locked: false });
    // Fixed (here: without the broken one), the same run applies cleanly.
    expect(await migrate(db)).toEqual(MIGRATION_NAMES);
  });

  it("fails with a message naming the lock and the commands when the lock stays held", async () => {
    const [, undone] = await db.migrate.down({ migrationSource });
    expect(undone).toEqual([MIGRATION_NAMES.at(-1)]);
    await db("knex_migrations_lock").update({ is_locked: 1 });
    try {
      const failure = await migrate(db, 200).catch((error: Error) => error);
      expect(failure).toBeInstanceOf(MigrationLockedError);
      expect((failure as Error).message).toBe(
        "database: the migration lock (knex_migrations_lock) is still held after 0.2 s: another process is migrating, or one died while migrating; " +
          "`switchyard migrate status` shows it, `switchyard migrate unlock` frees it once no migration runs",
      );
    } finally {
      await db.migrate.forceFreeMigrationsLock({ migrationSource });
    }
    // The last migration is pending again: dry run shows its statements without applying them.
    const planned = await dryRunMigrations(db);
    expect(planned.map((m) => m.name)).toEqual([MIGRATION_NAMES.at(-1)]);
    expect(planned[0]!.statements.length).toBeGreaterThan(0);
    expect((await migrationStatus(db)).pending).toEqual([MIGRATION_NAMES.at(-1)]);
    expect(await migrate(db)).toEqual([MIGRATION_NAMES.at(-1)]);
  });
});
