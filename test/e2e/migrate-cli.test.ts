/**
 * `switchyard migrate status`, `migrate --dry-run` and `migrate unlock` as an operator runs them
 * before an upgrade (issue 23 §6; README "Backups and upgrades"), through the real CLI, on SQLite
 * and on PostgreSQL.
 */
import fs from "node:fs";
import path from "node:path";
import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSqlite, openDb, type Db } from "../../src/db/index.ts";
import { LATEST_MIGRATION, MIGRATION_NAMES, migrationNamed } from "../../src/db/migrations/index.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { runCli } from "../support/process.ts";

/** Each test runs several CLI processes: slow on a busy two-core machine. */
const CLI_TEST_TIMEOUT = 180_000;

/** The first `count` migrations of this build, as a knex migration source (a database of an older build). */
function firstMigrations(count: number): Knex.MigrationSource<string> {
  return {
    getMigrations: async () => MIGRATION_NAMES.slice(0, count),
    getMigrationName: (name) => name,
    getMigration: async (name) => migrationNamed(name)!,
  };
}

/** Everything the schema is: tables, columns, indexes, and knex's rows of applied migrations. */
async function schemaOf(db: Db) {
  const objects = isSqlite(db)
    ? await db.raw("select type, name, tbl_name, sql from sqlite_master order by type, name")
    : [
        ...(
          await db.raw(
            "select table_name, column_name, data_type, is_nullable, column_default from information_schema.columns where table_schema = current_schema() order by 1, 2",
          )
        ).rows,
        ...(await db.raw("select tablename, indexname, indexdef from pg_indexes where schemaname = current_schema() order by 1, 2")).rows,
      ];
  const migrations = (await db.schema.hasTable("knex_migrations")) ? await db("knex_migrations").orderBy("id").select() : null;
  const lock = (await db.schema.hasTable("knex_migrations_lock")) ? await db("knex_migrations_lock").select() : null;
  return { objects, migrations, lock };
}

describe.each([
  { name: "SQLite", postgres: false },
  { name: "PostgreSQL", postgres: true },
])("migrate status, --dry-run and unlock on $name", ({ postgres }) => {
  let database: TestDatabase;
  let db: Db;

  beforeAll(async () => {
    database = await createTestDatabase("switchyard-migrate-cli-", { postgres });
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });
  const cli = (...args: string[]) => runCli(args, database.env);

  it("reports every migration pending on a fresh database, as text and JSON, and creates nothing", { timeout: CLI_TEST_TIMEOUT }, async () => {
    const text = await cli("migrate", "status");
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^MIGRATION\s+STATE\s+APPLIED AT$/);
    expect(lines.slice(1, 1 + MIGRATION_NAMES.length)).toEqual(MIGRATION_NAMES.map((name) => expect.stringMatching(new RegExp(`^${name}\\s+pending\\s+-$`))));
    expect(lines.slice(1 + MIGRATION_NAMES.length)).toEqual([
      `schema version: none (this build: ${LATEST_MIGRATION})`,
      `pending: ${MIGRATION_NAMES.length} (switchyard migrate applies them; migrate --dry-run prints their SQL)`,
      "lock: free",
    ]);
    const json = await cli("migrate", "status", "--json");
    expect(JSON.parse(json.stdout)).toEqual({
      schema_version: null,
      latest: LATEST_MIGRATION,
      applied: [],
      pending: MIGRATION_NAMES,
      unknown: [],
      locked: false,
    });
    if (postgres) {
      expect(json.stderr).toMatch(/^database: postgres 127\.0\.0\.1:\d+\/sy_test_\w+\n$/);
      db = openDb(database);
      expect((await schemaOf(db)).objects).toEqual([]);
    } else {
      // Not even the SQLite file: a mistyped DATA_DIR must not grow a database.
      expect(json.stderr).toBe(`database: sqlite ${path.join(database.dataDir, "switchyard.db")} (does not exist yet: shown as a new, empty database)\n`);
      expect(fs.readdirSync(database.dataDir)).toEqual([]);
      db = openDb(database);
    }
  });

  it("prints the SQL of every migration a fresh database lacks without applying any", { timeout: CLI_TEST_TIMEOUT }, async () => {
    const before = await schemaOf(db);
    const run = await cli("migrate", "--dry-run");
    expect(run.code).toBe(0);
    const headers = run.stdout.split("\n").filter((line) => /^-- \d{3}_/.test(line));
    expect(headers).toEqual(MIGRATION_NAMES.map((name) => `-- ${name}`));
    const quote = postgres ? '"' : "`";
    expect(run.stdout).toContain(`create table ${quote}accounts${quote} (`);
    expect(run.stdout.trimEnd().split("\n").at(-1)).toBe(
      `-- ${MIGRATION_NAMES.length} pending migrations, run in one transaction and rolled back: nothing was applied`,
    );
    expect(await schemaOf(db)).toEqual(before);
  });

  it("on a database an older build migrated, lists what is applied and pending, and dry-runs only the pending SQL, changing nothing", {
    timeout: CLI_TEST_TIMEOUT,
  }, async () => {
    await db.migrate.latest({ migrationSource: firstMigrations(9) });
    const status = JSON.parse((await cli("migrate", "status", "--json")).stdout);
    expect(status).toMatchObject({
      schema_version: MIGRATION_NAMES[8],
      latest: LATEST_MIGRATION,
      pending: MIGRATION_NAMES.slice(9),
      unknown: [],
      locked: false,
    });
    expect(status.applied.map((m: { name: string }) => m.name)).toEqual(MIGRATION_NAMES.slice(0, 9));
    for (const m of status.applied) {
      expect(m.batch).toBe(1);
      expect(Date.now() - Date.parse(m.applied_at)).toBeLessThan(10 * 60_000);
      expect(new Date(m.applied_at).toISOString()).toBe(m.applied_at);
    }

    const before = await schemaOf(db);
    expect(before.migrations).toHaveLength(9);
    const run = await cli("migrate", "--dry-run");
    expect(run.code).toBe(0);
    const quote = postgres ? '"' : "`";
    // 010 creates the channels table and adds two task columns; 011 adds the console's indexes; later ones follow.
    const pending = MIGRATION_NAMES.slice(9);
    expect(run.stdout.split("\n").filter((line) => line.startsWith("-- "))).toEqual([
      ...pending.map((name) => `-- ${name}`),
      `-- ${pending.length} pending migrations, run in one transaction and rolled back: nothing was applied`,
    ]);
    expect(run.stdout).toMatch(new RegExp(`^create table ${quote}channels${quote} \\(.*\\);$`, "m"));
    expect(run.stdout).toMatch(new RegExp(`^alter table ${quote}tasks${quote} add column ${quote}channel_id${quote} varchar\\(40\\)`, "m"));
    expect(run.stdout).toMatch(new RegExp(`^create index ${quote}orders_status_created_at_id_index${quote} on ${quote}orders${quote} .*;$`, "m"));
    expect(run.stdout).not.toMatch(/create table .accounts/);
    // Nothing changed: no table, column or index, no knex_migrations row, the lock as it was.
    expect(await schemaOf(db)).toEqual(before);
    expect(await db.schema.hasTable("channels")).toBe(false);

    const applied = await cli("migrate");
    expect(applied.stdout).toBe(`applied ${pending.join(", ")}\n`);
    const text = await cli("migrate", "status");
    expect(text.stdout).toMatch(/^010_channels\s+applied\s+\d{4}-\d\d-\d\dT[\d:.]+Z$/m);
    expect(text.stdout).toContain(`schema version: ${LATEST_MIGRATION} (this build: ${LATEST_MIGRATION})\npending: none\nlock: free\n`);
    expect((await cli("migrate", "--dry-run")).stdout).toBe(`-- no pending migrations: the schema is up to date (${LATEST_MIGRATION})\n`);
  });

  it("shows a stale migration lock, frees it with unlock, and migrate runs again", { timeout: CLI_TEST_TIMEOUT }, async () => {
    await db("knex_migrations_lock").update({ is_locked: 1 });
    const held = await cli("migrate", "status");
    expect(held.stdout).toMatch(/^lock: held \(a migration running outside a transaction, or a stale lock: switchyard migrate unlock frees it/m);
    expect((await cli("migrate", "unlock")).stdout).toBe("migration lock freed\n");
    expect(await db("knex_migrations_lock").select("is_locked")).toEqual([{ is_locked: 0 }]);
    expect(JSON.parse((await cli("migrate", "status", "--json")).stdout).locked).toBe(false);
    expect((await cli("migrate")).stdout).toBe("database is up to date\n");
  });

  it("refuses, in one line, a database a newer build migrated, and status names the migration it does not know", { timeout: CLI_TEST_TIMEOUT }, async () => {
    await db("knex_migrations").insert({ name: "099_from_a_newer_build", batch: 2, migration_time: new Date() });
    try {
      for (const args of [["migrate"], ["migrate", "--dry-run"]]) {
        const run = await cli(...args);
        expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 1, stdout: "" });
        expect(run.stderr.trimEnd().split("\n").at(-1)).toBe(
          "switchyard: database: it has migrations this build does not know (099_from_a_newer_build): a newer Switchyard migrated it; " +
            "run that version or newer (downgrades are not supported: restore the backup taken before the upgrade)",
        );
      }
      const status = await cli("migrate", "status");
      expect(status.code).toBe(0);
      expect(status.stdout).toMatch(/^099_from_a_newer_build\s+unknown to this build\s+\d{4}-/m);
      expect(status.stdout).toContain("schema version: 099_from_a_newer_build (this build: ");
      expect(status.stdout).toContain("unknown: 099_from_a_newer_build (a newer Switchyard migrated this database: run that version)");
      expect(JSON.parse((await cli("migrate", "status", "--json")).stdout).unknown).toEqual(["099_from_a_newer_build"]);
    } finally {
      await db("knex_migrations").where("name", "099_from_a_newer_build").del();
    }
  });
});
