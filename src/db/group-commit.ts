/**
 * Group commit on SQLite (ADR 0011; docs/architecture.md §2 storage): short write transactions
 * of concurrent requests share one SQLite transaction, each in its own SAVEPOINT, so one that
 * fails (insufficient balance, a unique violation) rolls back alone and the others commit.
 * Every caller's promise settles only after the group's COMMIT (or its failure): an answer sent
 * after it names only durable rows. On PostgreSQL each call is its own transaction, as before, and
 * a one-statement call an autocommit statement.
 *
 * How a group forms: calls queue; one group runs at a time. A group takes, when it holds the
 * connection, every call queued so far (up to {@link MAX_GROUP}); calls that arrive while it
 * commits form the next one. Under no load a group is one call (no waiting, no savepoint);
 * under load the groups grow by themselves with the queue.
 */
import { AsyncResource } from "node:async_hooks";
import type { Knex } from "knex";
import { isSqlite, type Db } from "./index.ts";

/**
 * The work of one caller: database statements on `trx` only (never on the Db: it waits for this
 * group), each awaited before it settles (a statement still running after a failure would land
 * outside its rolled-back savepoint).
 */
export type GroupWork<T> = (trx: Knex.Transaction) => Promise<T>;

/**
 * How a call's work is shaped. `oneStatement`: the work runs exactly one statement, so it needs
 * no savepoint: SQLite backs a failed statement out by itself and keeps the transaction's
 * earlier statements (two statements less per call).
 */
export interface GroupWorkShape {
  oneStatement?: boolean;
}

/** Runs `work` in a write transaction, possibly shared with others (see the file comment). */
export type GroupCommit = <T>(work: GroupWork<T>, shape?: GroupWorkShape) => Promise<T>;

/** Most calls in one group: bounds how long one group holds the connection (tens of ms). */
export const MAX_GROUP = 64;

interface Pending {
  work: GroupWork<unknown>;
  /** The caller's async context, where `work` runs (request budget, tracing span). */
  scope: AsyncResource;
  oneStatement: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** What we read of a better-sqlite3 connection. */
interface SqliteConnection {
  inTransaction: boolean;
}

/**
 * The group itself runs outside every caller's async context (request budgets, tracing spans,
 * src/db/budget.ts): this resource is made at load, when no request is current. Each call's
 * work runs in its own caller's context (an AsyncResource made at enqueue).
 */
const outsideRequests = new AsyncResource("switchyard.group-commit");

const committers = new WeakMap<Db, GroupCommit>();

/**
 * The group committer of a database (one per Db).
 * @returns `run(work)`: resolves with `work`'s result after the COMMIT that made it durable;
 *   rejects with `work`'s own error when it failed (its savepoint rolled back, nothing of it
 *   written), or with the transaction's error when the group could not commit (nothing of the
 *   group written)
 */
export function groupCommit(db: Db): GroupCommit {
  let committer = committers.get(db);
  if (!committer) {
    committer = isSqlite(db) ? sqliteGroups(db) : postgresCalls(db);
    committers.set(db, committer);
  }
  return committer;
}

/**
 * PostgreSQL: each call its own transaction; a one-statement call runs as an autocommit statement
 * (atomic by itself: no BEGIN and COMMIT round trips, issue 25 §2).
 */
function postgresCalls(db: Db): GroupCommit {
  return <T>(work: GroupWork<T>, shape: GroupWorkShape = {}) =>
    // The Db stands in for the transaction: the work runs exactly one statement on it.
    shape.oneStatement ? work(db as unknown as Knex.Transaction) : db.transaction(work);
}

/** Runs a call's work in its caller's async context. */
function runCall(call: Pending, trx: Knex.Transaction): Promise<unknown> {
  return call.scope.runInAsyncScope(call.work, null, trx);
}

function sqliteGroups(db: Db): GroupCommit {
  const queue: Pending[] = [];
  let running = false;

  /** Runs one group: takes what is queued (up to the group size) into one transaction, then settles each call after it ends. */
  async function runGroup(): Promise<void> {
    let group: Pending[] = [];
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      await db.transaction(async (trx) => {
        group = queue.splice(0, MAX_GROUP);
        if (group.length === 1) {
          // Alone: no savepoint; its failure rolls back the transaction, which is only its own.
          outcomes.push({ ok: true, value: await runCall(group[0]!, trx) });
          return;
        }
        const connection = await (trx.client as { acquireConnection(): Promise<SqliteConnection> }).acquireConnection();
        // Plain SAVEPOINT statements on the group's transaction: a knex nested transaction would
        // build a transaction object per call (measured: ~1.5% of a submission's CPU).
        for (const call of group) {
          if (call.oneStatement) {
            try {
              outcomes.push({ ok: true, value: await runCall(call, trx) });
            } catch (error) {
              if (!connection.inTransaction) throw error;
              outcomes.push({ ok: false, error });
            }
            continue;
          }
          await trx.raw("SAVEPOINT group_call");
          try {
            const value = await runCall(call, trx);
            await trx.raw("RELEASE SAVEPOINT group_call");
            outcomes.push({ ok: true, value });
          } catch (error) {
            // SQLite rolls a whole transaction back on some errors (disk full, I/O): the calls
            // before this one are gone too, so the group must fail, never half-commit.
            if (!connection.inTransaction) throw error;
            await trx.raw("ROLLBACK TO SAVEPOINT group_call");
            await trx.raw("RELEASE SAVEPOINT group_call");
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // Nothing of this group is written: every call fails (with its own error when it was alone).
      if (group.length === 0) group = queue.splice(0, MAX_GROUP);
      for (const call of group) call.reject(error);
      return;
    }
    group.forEach((call, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) call.resolve(outcome.value);
      else call.reject(outcome.error);
    });
  }

  async function drain(): Promise<void> {
    try {
      while (queue.length) await runGroup();
    } finally {
      running = false;
    }
  }

  return <T>(work: GroupWork<T>, shape: GroupWorkShape = {}) =>
    new Promise<T>((resolve, reject) => {
      queue.push({
        work: work as GroupWork<unknown>,
        // Not AsyncResource.bind: on node 20 it also builds a deprecation wrapper per call (~3% of
        // a submission's database side, bench/write-isolated.ts).
        scope: new AsyncResource("switchyard.group-call"),
        oneStatement: shape.oneStatement === true,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (running) return;
      running = true;
      outsideRequests.runInAsyncScope(() => void drain());
    });
}
