/**
 * One statement for many concurrent callers on PostgreSQL (issue 25 §2, ADR 0032): each call
 * queues its item; one statement runs at a time and takes every item queued so far. Under no load
 * a call is its own statement, run in its caller's async context (its request's budget counts
 * it, as before); under load one statement, one connection checkout and one round trip serve the
 * whole queue, outside every request. Each call settles with its own item's answer once the
 * statement has ended: nothing is answered before the statement's commit.
 */
import { AsyncResource } from "node:async_hooks";

/**
 * Runs the items of one batch as one statement.
 * @returns one answer per item, in the items' order
 */
export type BatchStatement<I, O> = (items: I[]) => Promise<O[]>;

/** Most items in one statement: bounds its size and how long it holds its rows. */
export const MAX_BATCH = 256;

interface Queued<I, O> {
  item: I;
  scope: AsyncResource;
  resolve(answer: O): void;
  reject(error: unknown): void;
}

/** A shared statement runs outside every request's async scope (budgets, tracing): made at load. */
const outsideRequests = new AsyncResource("switchyard.statement-batch");

/**
 * Makes a batcher: `call(item)` resolves with the item's answer (see the file comment).
 * @param run the statement of one batch; its error rejects every call of that batch
 * @param sameItem items the statement must not hold twice (a row updated twice by one UPDATE is
 *   updated once): the later call waits for the next batch
 */
export function statementBatcher<I, O>(run: BatchStatement<I, O>, sameItem?: (item: I) => string): (item: I) => Promise<O> {
  const queue: Queued<I, O>[] = [];
  let running = false;

  async function runBatch(): Promise<void> {
    let batch = queue.splice(0, MAX_BATCH);
    if (sameItem) {
      const seen = new Set<string>();
      const later: Queued<I, O>[] = [];
      batch = batch.filter((call) => {
        const id = sameItem(call.item);
        if (!seen.has(id)) return seen.add(id);
        later.push(call);
        return false;
      });
      queue.unshift(...later);
    }
    const items = batch.map((call) => call.item);
    try {
      const answers = await (batch.length === 1 ? batch[0]!.scope.runInAsyncScope(run, null, items) : run(items));
      batch.forEach((call, i) => {
        call.resolve(answers[i]!);
      });
    } catch (error) {
      for (const call of batch) call.reject(error);
    }
  }

  async function drain(): Promise<void> {
    try {
      while (queue.length) await runBatch();
    } finally {
      running = false;
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      queue.push({ item, scope: new AsyncResource("switchyard.statement-batch-call"), resolve, reject });
      if (running) return;
      running = true;
      outsideRequests.runInAsyncScope(() => void drain());
    });
}

/**
 * {@link statementBatcher} with one queue per database (a statement runs on the database it was
 * queued for): `call(db, item)` resolves with the item's answer.
 * @param run the statement of one batch on `db`
 * @param sameItem as for {@link statementBatcher}
 */
export function statementBatcherPerDb<D extends object, I, O>(
  run: (db: D, items: I[]) => Promise<O[]>,
  sameItem?: (item: I) => string,
): (db: D, item: I) => Promise<O> {
  const batchers = new WeakMap<D, (item: I) => Promise<O>>();
  return (db, item) => {
    let batcher = batchers.get(db);
    if (!batcher) {
      batcher = statementBatcher((items: I[]) => run(db, items), sameItem);
      batchers.set(db, batcher);
    }
    return batcher(item);
  };
}
