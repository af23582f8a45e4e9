/**
 * The database's readiness checks (docs/architecture.md §2.9): registered by bin/stack.ts with
 * src/observability/readiness.ts, which imports no business module (§1.2).
 */
import { CheckFailure, type ReadinessCheck } from "../observability/readiness.ts";
import type { Db } from "./index.ts";
import { migrationSource } from "./migrations/index.ts";

/** `database`: the database answers one `select 1`. */
export function databaseCheck(db: Db): ReadinessCheck {
  return {
    name: "database",
    async run() {
      await db.raw("select 1");
    },
  };
}

/** The last migration this build knows (the schema version a running process expects). */
async function expectedMigration(): Promise<string> {
  const names = await migrationSource.getMigrations([]);
  return migrationSource.getMigrationName(names.at(-1)!);
}

/**
 * `migrations`: the last migration this build knows is recorded as applied (`knex_migrations`),
 * so a process never reports ready on a schema older than its code (a database restored from an
 * older backup, or migrated by nobody).
 */
export function migrationsCheck(db: Db): ReadinessCheck {
  return {
    name: "migrations",
    async run() {
      const expected = await expectedMigration();
      const applied = await db("knex_migrations").where("name", expected).first("name");
      if (!applied) throw new CheckFailure(`migration ${expected} is not applied (run: switchyard migrate)`);
    },
  };
}
