/**
 * Per-request database budgets (issue "Trust at the edges" item 3: one request can never take
 * the whole database pool). Every GraphQL request a subgraph serves carries a
 * {@link RequestBudget}; the database work done on its behalf — resolvers, DataLoader batches,
 * domain services, transactions — runs inside it (an AsyncLocalStorage scope, so no function
 * needs a new parameter), and {@link enforceRequestBudgets} holds each statement to it:
 *
 * - at most `statements` SQL statements (default 1000; the dashboard runs 10 in-process, 11 over HTTP): past it the next
 *   statement is refused with `query_too_costly` (400);
 * - a deadline, `timeoutMs` after the request began (REQUEST_TIMEOUT_MS, as the router's): past
 *   it every further statement, and every wait for a connection, fails with `request_timeout`
 *   (504), so a request the router has already answered 504 stops using the database;
 * - at most `connections` pooled connections at once (default 4 of PostgreSQL's 10): a request
 *   with more parallel statements queues behind its own, and the rest of the pool stays for the
 *   others.
 *
 * A refused statement is never sent; inside a transaction it rolls the transaction back (knex's
 * BEGIN, COMMIT and ROLLBACK are never refused). A mutation keeps only the connection cap
 * ({@link RequestBudget.forWrites}): a write is never cut between its steps (a submission's debit,
 * provider call and record are separate transactions), and its size is bounded by the router's
 * cost and alias limits. Work outside every request (pollers, dispatchers, start-up) has no budget.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { AppError } from "../errors.ts";
import type { Db } from "./index.ts";

/** The limits of one request's database work. */
export interface BudgetLimits {
  /** Most SQL statements per request. */
  statements: number;
  /** Milliseconds from the start of the request to its deadline; 0 = none. */
  timeoutMs: number;
  /** Most pooled connections one request holds at once. */
  connections: number;
}

/** The defaults: 1000 statements, no deadline, 4 connections. */
export const DEFAULT_BUDGET_LIMITS: BudgetLimits = { statements: 1_000, timeoutMs: 0, connections: 4 };

/** The database budget of one request (or of one event of a subscription). */
export class RequestBudget {
  /** Statements run so far. */
  statements = 0;
  /** Epoch milliseconds after which no statement may start (Infinity: none). */
  deadline = Infinity;
  /** Connections held now. */
  private held = 0;
  /** A mutation's: no statement limit, no deadline (see {@link forWrites}). */
  private writes = false;
  /** Callers waiting for one of this request's connection slots, first come first served. */
  private readonly waiting: (() => void)[] = [];

  /**
   * @param limits the limits (see {@link BudgetLimits})
   * @param now the request's start, epoch milliseconds (default now)
   */
  constructor(
    readonly limits: BudgetLimits = DEFAULT_BUDGET_LIMITS,
    now: number = Date.now(),
  ) {
    this.renew(now);
  }

  /**
   * Starts afresh: no statement counted, the deadline `timeoutMs` from `now`. For each event of
   * a subscription, whose context lives for hours (held connections are kept).
   */
  renew(now: number = Date.now()): void {
    this.statements = 0;
    this.deadline = this.limits.timeoutMs > 0 && !this.writes ? now + this.limits.timeoutMs : Infinity;
  }

  /**
   * Makes this the budget of a mutation: statements are counted but never refused, and there is
   * no deadline; the connection cap stays. A write cut between two of its steps would be worse
   * than one finishing late.
   */
  forWrites(): void {
    this.writes = true;
    this.deadline = Infinity;
  }

  /**
   * Counts one statement about to be sent.
   * @throws AppError `request_timeout` (504) past the deadline; `query_too_costly` (400) past the
   *   statement budget
   */
  spend(): void {
    this.checkDeadline();
    if (++this.statements > this.limits.statements && !this.writes) {
      throw new AppError("query_too_costly", `The request needs more than ${this.limits.statements} database statements`, { limit: this.limits.statements });
    }
  }

  /** @throws AppError `request_timeout` (504) past the deadline */
  private checkDeadline(): void {
    if (Date.now() > this.deadline) throw this.timeoutError();
  }

  private timeoutError(): AppError {
    return new AppError("request_timeout", `The request's database work passed its ${this.limits.timeoutMs} ms deadline`, { limit: this.limits.timeoutMs });
  }

  /**
   * Waits for one of this request's connection slots.
   * @throws AppError `request_timeout` (504) when the deadline passes first
   */
  async takeSlot(): Promise<void> {
    this.checkDeadline();
    if (this.held < this.limits.connections) {
      this.held++;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const grant = () => {
        clearTimeout(timer);
        resolve();
      };
      this.waiting.push(grant);
      if (this.deadline === Infinity) return;
      timer = setTimeout(
        () => {
          this.waiting.splice(this.waiting.indexOf(grant), 1);
          reject(this.timeoutError());
        },
        this.deadline - Date.now() + 1,
      );
    });
    // A released slot passes straight to its waiter: `held` is unchanged.
  }

  /** Gives a slot back (to the next waiter, if any). */
  releaseSlot(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held--;
  }
}

const current = new AsyncLocalStorage<RequestBudget>();

/**
 * Runs `work` inside a budget: the statements it causes, directly or through promises, timers
 * and DataLoader batches it starts, count against `budget`.
 */
export function runWithBudget<T>(budget: RequestBudget, work: () => T): T {
  // A field resolved inside its parent's budget needs no scope of its own (one per field of
  // every row would be most of the cost).
  return current.getStore() === budget ? work() : current.run(budget, work);
}

/**
 * Whether `budget` is the one the caller runs inside (then work needs no scope of its own).
 * @param budget a request's budget
 * @returns true when it is the current budget
 */
export function isCurrentBudget(budget: RequestBudget): boolean {
  return current.getStore() === budget;
}

/** What we use of a knex client: connections from its pool. */
interface PoolClient {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<void>;
}

const enforced = new WeakSet<Db>();

/**
 * knex's own transaction statements: never refused (a refused COMMIT or ROLLBACK would leave a
 * transaction open on a pooled connection) nor counted (they come with the work they frame).
 */
const TRANSACTION_CONTROL = /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE SAVEPOINT|SET TRANSACTION)\b/i;

/**
 * Holds every statement of `db` run inside a budget to it (idempotent per knex instance):
 * - knex emits `query` synchronously just before it sends a statement, inside the caller's async
 *   context; this listener counts it, and its throw rejects that statement's promise before
 *   anything is sent (knex then releases the connection; a transaction rolls back);
 * - the pool's acquire and release go through the budget's connection slots (a transaction
 *   takes one slot for its whole life; its statements take none of their own).
 */
export function enforceRequestBudgets(db: Db): void {
  if (enforced.has(db)) return;
  enforced.add(db);
  db.on("query", (query: { sql?: unknown }) => {
    const budget = current.getStore();
    if (budget && !(typeof query.sql === "string" && TRANSACTION_CONTROL.test(query.sql))) budget.spend();
  });
  const client = db.client as PoolClient;
  const acquire = client.acquireConnection.bind(client);
  const release = client.releaseConnection.bind(client);
  const owners = new WeakMap<object, RequestBudget>();
  client.acquireConnection = async () => {
    const budget = current.getStore();
    if (!budget) return acquire();
    await budget.takeSlot();
    try {
      const connection = await acquire();
      owners.set(connection as object, budget);
      return connection;
    } catch (error) {
      budget.releaseSlot();
      throw error;
    }
  };
  client.releaseConnection = (connection) => {
    const released = release(connection);
    const budget = owners.get(connection as object);
    if (budget) {
      owners.delete(connection as object);
      budget.releaseSlot();
    }
    return released;
  };
}
