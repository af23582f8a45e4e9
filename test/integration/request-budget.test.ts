/**
 * Per-request database budgets (issue "Trust at the edges" item 3; src/db/budget.ts): a request
 * past its statement budget or its deadline is cut off with a coded error — never a stack — its
 * open transaction rolled back, and it never holds more than its share of the pool, so another
 * customer's request is still served. On SQLite and, with TEST_DATABASE=postgres, PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { startTestStack, type GraphqlError, type TestStack } from "../support/stack.ts";
import { measureStatements } from "../support/sql-count.ts";
import { isSqlite, migrate, openDb, type Db } from "../../src/db/index.ts";
import { enforceRequestBudgets, RequestBudget, runWithBudget } from "../../src/db/budget.ts";
import { AppError } from "../../src/errors.ts";
import { selectRows } from "../../src/db/rows.ts";

/** The error a promise rejects with. */
async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

describe("a request's database budget", () => {
  let database: TestDatabase;
  let db: Db;
  /** Statements that reached the database (knex's `query-response`, after the statement ran). */
  let answered = 0;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = openDb(database);
    await migrate(db);
    await db.schema.createTable("budget_probe", (t) => {
      t.increments("id");
      t.string("note", 20);
    });
    enforceRequestBudgets(db);
    db.on("query-response", () => answered++);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it("refuses the statement past the budget with query_too_costly, without sending it", async () => {
    const budget = new RequestBudget({ statements: 3, timeoutMs: 0, connections: 4 });
    const before = answered;
    const results = await runWithBudget(budget, async () => {
      const outcomes: unknown[] = [];
      for (let i = 0; i < 5; i++)
        outcomes.push(
          await db.raw("select 1 as one").then(
            () => "ok",
            (error) => error,
          ),
        );
      return outcomes;
    });
    expect(results.slice(0, 3)).toEqual(["ok", "ok", "ok"]);
    for (const error of results.slice(3)) {
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ code: "query_too_costly", status: 400, details: { limit: 3 } });
      expect((error as Error).message).toBe("The request needs more than 3 database statements");
    }
    expect(answered - before).toBe(3);
    // Outside every request nothing is counted.
    await db.raw("select 1 as one");
  });

  it("refuses a fixed-SQL read (selectRows) past the budget without running it, and releases its connection", async () => {
    const budget = new RequestBudget({ statements: 2, timeoutMs: 0, connections: 1 });
    const before = answered;
    const results = await runWithBudget(budget, async () => {
      const outcomes: unknown[] = [];
      for (let i = 0; i < 4; i++)
        outcomes.push(
          await selectRows<{ one: number }>(db, "select ? as one", [1]).then(
            (rows) => Number(rows[0]?.one),
            (error) => error,
          ),
        );
      return outcomes;
    });
    expect(results.slice(0, 2)).toEqual([1, 1]);
    for (const error of results.slice(2)) expect(error).toMatchObject({ code: "query_too_costly", status: 400 });
    expect(answered - before).toBe(2);
    // The one connection slot and the pool's connection came back: the next request reads.
    const [row] = await runWithBudget(new RequestBudget({ statements: 1, timeoutMs: 0, connections: 1 }), () =>
      selectRows<{ one: number | string }>(db, "select ? as one", [7]),
    );
    expect(Number(row?.one)).toBe(7);
  });

  it("rolls back a transaction cut off by the budget, and the connection serves the next request", async () => {
    const budget = new RequestBudget({ statements: 2, timeoutMs: 0, connections: 4 });
    const error = await failureOf(
      runWithBudget(budget, () =>
        db.transaction(async (trx) => {
          for (let i = 0; i < 3; i++) await trx("budget_probe").insert({ note: `row ${i}` });
        }),
      ),
    );
    expect(error).toMatchObject({ code: "query_too_costly" });
    expect(await db("budget_probe").count({ n: "*" }).first()).toMatchObject({ n: 0 });
    // The pool's connections are clean: a new request writes and commits.
    await runWithBudget(new RequestBudget(), () => db.transaction((trx) => trx("budget_probe").insert({ note: "after" })));
    expect((await db<{ note: string }>("budget_probe").select("note")).map((r) => r.note)).toEqual(["after"]);
    await db("budget_probe").del();
  });

  it("refuses every statement and every wait for a connection past the deadline with request_timeout", async () => {
    // A request that began 10 s ago with a 1 s deadline.
    const late = new RequestBudget({ statements: 1_000, timeoutMs: 1_000, connections: 1 }, Date.now() - 10_000);
    const before = answered;
    // (A knex builder runs when awaited: awaited inside the budget, as resolvers and services do.)
    const error = await failureOf(runWithBudget(late, async () => await db.raw("select 1 as one")));
    expect(error).toMatchObject({ code: "request_timeout", status: 504, message: "The request's database work passed its 1000 ms deadline" });
    expect(answered).toBe(before);
    // A subscription event starts afresh.
    late.renew();
    await runWithBudget(late, async () => await db.raw("select 1 as one"));
    // A request waiting for one of its own connection slots fails at its deadline.
    const waiting = new RequestBudget({ statements: 1_000, timeoutMs: 200, connections: 1 });
    await waiting.takeSlot();
    expect(await failureOf(waiting.takeSlot())).toMatchObject({ code: "request_timeout" });
    waiting.releaseSlot();
  });

  it("counts a mutation's statements without refusing any, and gives it no deadline", async () => {
    const budget = new RequestBudget({ statements: 2, timeoutMs: 1_000, connections: 4 }, Date.now() - 10_000);
    budget.forWrites();
    await runWithBudget(budget, async () => {
      for (let i = 0; i < 4; i++) await db.raw("select 1 as one");
    });
    expect(budget.statements).toBe(4);
  });

  it("holds at most its share of pooled connections, and another request is served meanwhile", async () => {
    const budget = new RequestBudget({ statements: 1_000, timeoutMs: 0, connections: 2 });
    const pool = (db.client as any).pool as { numUsed(): number };
    let most = 0;
    const sample = () => (most = Math.max(most, pool.numUsed()));
    db.on("query", sample);
    const slow = isSqlite(db) ? "select 1 as one" : "select pg_sleep(0.02)";
    try {
      const [greedy, other] = await Promise.all([
        runWithBudget(budget, () => Promise.all(Array.from({ length: 12 }, () => db.raw(slow).then(() => pool.numUsed())))),
        runWithBudget(new RequestBudget(), () => db.raw("select 1 as one").then(() => "served")),
      ]);
      expect(greedy).toHaveLength(12);
      expect(other).toBe("served");
    } finally {
      db.removeListener("query", sample);
    }
    // Two for the greedy request (one on SQLite, whose pool is one connection), one for the other.
    expect(most).toBeLessThanOrEqual(3);
    expect(budget.statements).toBe(12);
  });
});

describe("the statement budget through the router", () => {
  let t: TestStack;
  let greedy: string;
  let other: string;
  // Below the fewest statements a submission takes alone (four on PostgreSQL: the key, the channels,
  // the CTE statement and markSent; the outbox dispatcher's, when it wakes in the request's scope).
  const BUDGET = 3;
  beforeAll(async () => {
    t = await startTestStack({ SUBGRAPH_TRANSPORT: "http", DB_STATEMENTS_PER_REQUEST: String(BUDGET) });
    greedy = (await t.createKey("10")).key;
    other = (await t.createKey("10")).key;
  });
  afterAll(() => t?.close());

  it("cuts off a request past its statement budget with query_too_costly and clean JSON, while another customer's request is served", async () => {
    // Twenty order pages: a page and a count each, 40 statements and more in the cloud subgraph.
    const heavy = `{ viewer { ${Array.from({ length: 20 }, (_, i) => `o${i}: orders(first: ${i + 1}) { totalCount }`).join(" ")} } }`;
    const light = "{ viewer { orders(first: 5) { totalCount nodes { id } } } }";
    const cloudPort = Number(new URL(t.stack.cloudUrl!).port);
    const measured = await measureStatements(t.stack.db!, () => Promise.all([t.graphql(heavy, {}, greedy), t.graphql(light, {}, other)]));
    const [cut, served] = measured.result;
    expect(served.body).toEqual({ data: { viewer: { orders: { totalCount: 0, nodes: [] } } } });
    const errors = cut.body.errors as GraphqlError[];
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors) {
      expect(error.message).toBe(`The request needs more than ${BUDGET} database statements`);
      expect(error.extensions).toEqual({ code: "query_too_costly", limit: BUDGET, http: { status: 400 } });
      expect(JSON.stringify(error)).not.toMatch(/stack|at .*\.ts|node_modules/);
    }
    // Fields resolved within the budget keep their data; the others are null.
    const values = Object.values(cut.body.data.viewer);
    expect(values).toHaveLength(20);
    expect(values.filter((v) => v === null).length).toBe(errors.length);
    // What ran in the cloud subgraph: both requests' statements, the greedy one's within its budget.
    const inCloud = measured.statements.filter((s) => s.port === cloudPort);
    expect(inCloud.length).toBeLessThanOrEqual(BUDGET + 3);
  });

  it("never cuts a mutation between its steps: a submission needing more statements than the budget completes", async () => {
    const generationPort = Number(new URL(t.stack.generationUrl!).port);
    const measured = await measureStatements(t.stack.db!, () =>
      t.rest("POST", "/api/v1/images/generations", { key: greedy, body: { prompt: "a budget", model_id: 45 } }),
    );
    expect(measured.result.status, JSON.stringify(measured.result.body)).toBe(200);
    expect(measured.statements.filter((s) => s.port === generationPort).length).toBeGreaterThan(BUDGET);
    const task = await t.waitForTask(greedy, measured.result.body.data.task_id);
    expect(task.status).toBe(1);
  });

  it("serves the same customer's next request on a fresh budget", async () => {
    const next = await t.graphql("{ orders(first: 5) { totalCount } }", {}, greedy);
    expect(next.body).toEqual({ data: { orders: { totalCount: 0 } } });
  });
});
