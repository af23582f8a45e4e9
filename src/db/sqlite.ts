/**
 * What is particular to SQLite in opening the database (src/db/index.ts `openDb`;
 * docs/architecture.md §2 storage): the file, the connection's pragmas and prepared-statement
 * cache, and the turns several Db instances of one process take on one file.
 */
import path from "node:path";
import knexFactory, { type Knex } from "knex";
import type { Config } from "../config.ts";

/** What we use of a better-sqlite3 connection (the package ships no types). */
interface SqliteConnection {
  exec(sql: string): unknown;
  prepare(sql: string): unknown;
}

/** How many distinct SQL texts keep their prepared statement per connection. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * knex's better-sqlite3 client prepares (parses and plans) every query anew; this makes one
 * connection reuse the prepared statement of each distinct SQL text (least recently used first
 * out), so a hot query is planned once. SQLite re-prepares a statement itself after a schema change.
 */
function reusePreparedStatements(conn: SqliteConnection): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    let statement = cache.get(sql);
    if (statement) cache.delete(sql);
    else statement = prepare(sql);
    cache.set(sql, statement);
    if (cache.size > STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    return statement;
  };
}

/** The SQLite page cache of the one connection, in KiB (`PRAGMA cache_size = -N`). */
const SQLITE_PAGE_CACHE_KIB = 65_536;

/** The SQLite file of a configuration: `switchyard.db` in `DATA_DIR`, absolute. */
export function sqliteFile(config: Pick<Config, "dataDir">): string {
  return path.resolve(config.dataDir, "switchyard.db");
}

/** A FIFO lock: one holder, the others wait their turn without blocking the thread. */
class TurnLock {
  private held = false;
  private readonly waiting: (() => void)[] = [];
  async acquire(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }
}

/** One lock per SQLite file in this process. */
const fileLocks = new Map<string, TurnLock>();

/**
 * Several Db instances of one process on the same SQLite file (a tool or test opening a second
 * one, as another process would) take turns holding their connection, each for one query or one
 * transaction. better-sqlite3 waits for SQLite's lock on the calling thread: a second connection
 * waiting for the first's open transaction would stop the very event loop that transaction needs
 * to finish (and fail after the busy timeout); taking turns makes that wait asynchronous.
 *
 * Each turn also starts on a fresh turn of the event loop (setImmediate). better-sqlite3 answers
 * within the same microtask chain, so without it a loop that runs one query or transaction after
 * another (the poller settling a batch of 100 tasks against the in-process simulator) never lets
 * the event loop read a socket until it is done: measured, the event loop stalled 200-750 ms
 * every second under submissions, and requests waited seconds. sqlite3 yielded on every query
 * (its thread pool); this yields once per query or transaction, for about a microsecond.
 */
function takeTurnsInProcess(db: Knex, filename: string): void {
  let lock = fileLocks.get(filename);
  if (!lock) {
    lock = new TurnLock();
    fileLocks.set(filename, lock);
  }
  const turn = lock;
  const client = db.client as { acquireConnection(): Promise<unknown>; releaseConnection(connection: unknown): Promise<void> };
  const acquire = client.acquireConnection.bind(client);
  const release = client.releaseConnection.bind(client);
  client.acquireConnection = async () => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await turn.acquire();
    try {
      return await acquire();
    } catch (error) {
      turn.release();
      throw error;
    }
  };
  client.releaseConnection = (connection) => {
    const released = release(connection);
    turn.release();
    return released;
  };
}

/**
 * Opens a SQLite file through better-sqlite3 with one connection: WAL journal, 5 s busy timeout,
 * foreign keys on, a 64 MiB page cache, prepared statements reused, and turns taken with other
 * Db instances of this process on the same file. Connects to nothing yet.
 * @param filename the database file, absolute ({@link sqliteFile})
 * @param log knex's logger
 * @returns a knex instance; the caller destroys it
 */
export function openSqlite(filename: string, log: Knex.Config["log"]): Knex {
  const db = knexFactory({
    client: "better-sqlite3",
    connection: { filename },
    useNullAsDefault: true,
    log,
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void) {
        try {
          // A 64 MiB page cache (SQLite's default is 2 MiB): with one connection, an
          // index search that misses it reads its pages through the OS again (bench/README.md "growth").
          conn.exec(
            `PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -${SQLITE_PAGE_CACHE_KIB};`,
          );
          reusePreparedStatements(conn);
          done(null, conn);
        } catch (error) {
          done(error as Error, conn);
        }
      },
    },
  });
  takeTurnsInProcess(db, filename);
  return db;
}
