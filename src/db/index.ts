/**
 * The knex instance (DESIGN §2 storage): SQLite under DATA_DIR by default, PostgreSQL when
 * DATABASE_URL is `postgres://…`.
 */
import fs from "node:fs";
import path from "node:path";
import knexFactory, { type Knex } from "knex";
import type { Config } from "../config.ts";
import { migrationSource } from "./migrations/index.ts";

export type Db = Knex;

/** True when the database is SQLite (affects only connection set-up, never business rules). */
export function isSqlite(db: Db): boolean {
  return db.client.config.client === "sqlite3";
}

/**
 * Opens the database.
 * SQLite: WAL journal, 5 s busy timeout (several processes may share the file), foreign keys on,
 * one connection (SQLite has one writer; one connection serialises our transactions in-process).
 * @param config settings (`databaseUrl`, `dataDir`)
 * @returns a knex instance; the caller destroys it
 */
export function openDb(config: Pick<Config, "databaseUrl" | "dataDir">): Db {
  if (config.databaseUrl && /^postgres(ql)?:\/\//.test(config.databaseUrl)) {
    return knexFactory({ client: "pg", connection: config.databaseUrl, pool: { min: 0, max: 10 } });
  }
  fs.mkdirSync(config.dataDir, { recursive: true });
  const filename = path.join(config.dataDir, "switchyard.db");
  return knexFactory({
    client: "sqlite3",
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: any, done: (err: Error | null, conn: unknown) => void) {
        conn.exec(
          "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;",
          (err: Error | null) => done(err, conn),
        );
      },
    },
  });
}

/**
 * Brings the schema up to date.
 * @returns the names of the migrations that ran
 */
export async function migrate(db: Db): Promise<string[]> {
  const [, names] = await db.migrate.latest({ migrationSource });
  return names as string[];
}

/** The current time as ISO 8601 UTC with milliseconds (fixed width, sortable as text). */
export function nowIso(): string {
  return new Date().toISOString();
}
