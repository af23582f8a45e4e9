/**
 * What is particular to PostgreSQL in opening the database (src/db/index.ts `openDb`;
 * docs/architecture.md §2 storage): the connection pool and the type parsers.
 */
import { createRequire } from "node:module";
import knexFactory, { type Knex } from "knex";
import type pg from "pg";

const PG_INT8 = 20;
const PG_NUMERIC = 1700;

/**
 * Type parsers of our PostgreSQL connections: `bigint` columns (money, counts) and `numeric`
 * results (`sum()` of a bigint) arrive as strings from pg; every value we store fits in a safe
 * integer (milli-yuan, bytes, counts), so they become numbers, as SQLite returns them.
 * pg is loaded only when PostgreSQL is used (SQLite processes start without it).
 */
function pgTypes() {
  const driver = createRequire(import.meta.url)("pg") as typeof pg;
  const fallback = driver.types.getTypeParser as (oid: number, format?: "text" | "binary") => unknown;
  return {
    getTypeParser(oid: number, format?: "text" | "binary") {
      if (oid === PG_INT8 || oid === PG_NUMERIC) return (value: string) => Number(value);
      return fallback(oid, format);
    },
  };
}

/** How long opening one PostgreSQL connection may take (a server that does not answer fails then). */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Opens a PostgreSQL database: a pool of up to 10 connections (none kept while idle), bigint and
 * numeric as numbers. Connects to nothing yet.
 * @param url the `postgres://` URL (DATABASE_URL)
 * @param log knex's logger
 * @returns a knex instance; the caller destroys it
 */
export function openPostgres(url: string, log: Knex.Config["log"]): Knex {
  return knexFactory({
    client: "pg",
    connection: { connectionString: url, types: pgTypes(), connectionTimeoutMillis: CONNECT_TIMEOUT_MS } as Knex.PgConnectionConfig,
    pool: { min: 0, max: 10 },
    log,
  });
}
