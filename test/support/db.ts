/**
 * The database of a test: SQLite in a fresh temporary folder by default; with
 * `TEST_DATABASE=postgres`, a fresh PostgreSQL database (`sy_test_<random>`) on the server of
 * `TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/postgres), dropped on close.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type pg from "pg";
import { openDb, type Db } from "../../src/db/index.ts";

/** True when this run's tests use PostgreSQL (`TEST_DATABASE=postgres`). */
export const usePostgres = /^(postgres|postgresql|pg)$/i.test(process.env.TEST_DATABASE ?? "");

/** The maintenance database through which test databases are created and dropped. */
const ADMIN_URL = process.env.TEST_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/postgres";

/** A database made for one test file or stack. */
export interface TestDatabase {
  /** What {@link openDb} and `loadConfig` take: `DATABASE_URL` for PostgreSQL, else `DATA_DIR`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Environment for a stack or process: `DATABASE_URL` or `DATA_DIR`. */
  env: Record<string, string>;
  /** Drops the database (PostgreSQL, after ending its connections) or removes the folder. */
  drop(): Promise<void>;
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const { default: driver } = await import("pg");
  const client: pg.Client = new driver.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Creates an empty database for a test (not migrated).
 * @param prefix the temporary folder's prefix (SQLite)
 * @param options `postgres: true` makes a PostgreSQL database whatever TEST_DATABASE says (scale-out tests)
 */
export async function createTestDatabase(prefix = "switchyard-test-", options: { postgres?: boolean } = {}): Promise<TestDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (!(options.postgres ?? usePostgres)) {
    return {
      databaseUrl: undefined,
      dataDir,
      env: { DATA_DIR: dataDir },
      async drop() {
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const name = `sy_test_${randomBytes(6).toString("hex")}`;
  await admin((client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  return {
    databaseUrl,
    dataDir,
    env: { DATABASE_URL: databaseUrl, DATA_DIR: dataDir },
    async drop() {
      await admin(async (client) => {
        await client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
        await client.query(`DROP DATABASE IF EXISTS ${name}`);
      });
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** An open test database. */
export interface TestDb extends TestDatabase {
  db: Db;
  /** Opens another connection (pool) to the same database, as a second process would have. */
  openAnother(): Db;
  /** Destroys every connection opened here, then drops the database. */
  close(): Promise<void>;
}

/**
 * Opens a fresh test database (see the module comment); the caller migrates it.
 * @param prefix the temporary folder's prefix (SQLite)
 */
export async function openTestDb(prefix = "switchyard-test-"): Promise<TestDb> {
  const database = await createTestDatabase(prefix);
  const opened: Db[] = [];
  const open = () => {
    const db = openDb({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
    opened.push(db);
    return db;
  };
  return {
    ...database,
    db: open(),
    openAnother: open,
    async close() {
      for (const db of opened) await db.destroy().catch(() => undefined);
      await database.drop();
    },
  };
}
