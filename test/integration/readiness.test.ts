import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../src/db/index.ts";
import { startDispatcher } from "../../src/events/dispatcher/index.ts";
import { createInProcessPubSub } from "../../src/events/pubsub.ts";
import { CheckFailure, createReadiness, type ReadinessCheck } from "../../src/observability/readiness.ts";
import { migrationsCheck } from "../../src/db/readiness.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const silent = pino({ level: "silent" });

describe("/livez and /readyz of a whole stack in one process", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(() => stack?.close());

  it("answers /livez 200 {status: ok} on the router and on each subgraph port", async () => {
    for (const base of [stack.url, new URL(stack.stack.generationUrl!).origin, new URL(stack.stack.cloudUrl!).origin]) {
      const response = await fetch(`${base}/livez`);
      expect({ base, status: response.status, body: await response.json() }).toEqual({ base, status: 200, body: { status: "ok" } });
    }
  });

  it("answers the router's /readyz 200 naming the database, migrations, dispatcher and both in-process subgraphs", async () => {
    const response = await fetch(`${stack.url}/readyz`);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.json()).toEqual({
      status: "ok",
      checks: {
        database: { status: "ok" },
        migrations: { status: "ok" },
        outbox_dispatcher: { status: "ok" },
        "subgraph:generation": { status: "ok" },
        "subgraph:cloud": { status: "ok" },
      },
    });
  });

  it("answers each subgraph port's /readyz with the process's own checks, no subgraph among them", async () => {
    for (const url of [stack.stack.generationUrl!, stack.stack.cloudUrl!]) {
      const response = await fetch(new URL("/readyz", url));
      expect(response.status).toBe(200);
      expect(Object.keys((await response.json()).checks)).toEqual(["database", "migrations", "outbox_dispatcher"]);
    }
  });

  it("keeps /health in the spec's shape", async () => {
    const body = await (await fetch(`${stack.url}/health`)).json();
    expect(body.status).toBe("ok");
    expect(body.subgraphs).toEqual({ generation: "ok", cloud: "ok" });
    expect(body.models.length).toBeGreaterThan(0);
  });
});

describe("readiness checks", () => {
  it("runs a check once for a burst of probes and reuses the report for a second", async () => {
    let runs = 0;
    let clock = 0;
    const check: ReadinessCheck = { name: "counted", run: async () => void runs++ };
    const readiness = createReadiness([check], { now: () => clock });
    const reports = await Promise.all(Array.from({ length: 20 }, () => readiness.report()));
    expect(runs).toBe(1);
    expect(reports.every((r) => r.status === "ok")).toBe(true);
    clock = 999;
    await readiness.report();
    expect(runs).toBe(1);
    clock = 1000;
    await readiness.report();
    expect(runs).toBe(2);
  });

  it("fails a check that does not answer in time and starts no second run while the first is pending", async () => {
    let runs = 0;
    let release!: () => void;
    let released = false;
    const hanging: ReadinessCheck = {
      name: "hanging",
      run: () => {
        runs++;
        return released ? Promise.resolve() : new Promise<void>((resolve) => (release = resolve));
      },
    };
    const readiness = createReadiness([hanging], { timeoutMs: 30, cacheMs: 0 });
    expect(await readiness.report()).toEqual({ status: "unavailable", checks: { hanging: { status: "failed", error: "no answer within 0.03 s" } } });
    expect(await readiness.report()).toMatchObject({ status: "unavailable" });
    expect(runs).toBe(1);
    // Once the run settles, the next probe runs the check afresh.
    released = true;
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await readiness.report()).toEqual({ status: "ok", checks: { hanging: { status: "ok" } } });
    expect(runs).toBe(2);
  });

  it("names a failure with a safe reason, never the error's own text, which may hold an address", async () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 10.1.2.3:5432 postgres://u:hunter2@db"), { code: "ECONNREFUSED" });
    const odd = new Error("password authentication failed for user hunter2 at db.internal");
    const readiness = createReadiness([
      { name: "a", run: () => Promise.reject(refused) },
      { name: "b", run: () => Promise.reject(odd) },
      { name: "c", run: () => Promise.reject(new CheckFailure("HTTP 503")) },
    ]);
    expect(await readiness.report()).toEqual({
      status: "unavailable",
      checks: {
        a: { status: "failed", error: "connection refused" },
        b: { status: "failed", error: "failed" },
        c: { status: "failed", error: "HTTP 503" },
      },
    });
  });

  describe("on a database", () => {
    let testDb: TestDb;
    beforeAll(async () => {
      testDb = await openTestDb();
      await migrate(testDb.db);
    });
    afterAll(() => testDb?.close());

    it("says the schema is behind when the last migration this build knows is not applied", async () => {
      const check = migrationsCheck(testDb.db);
      await expect(check.run()).resolves.toBeUndefined();
      const last = await testDb.db("knex_migrations").orderBy("id", "desc").first("id", "name");
      await testDb.db("knex_migrations").where("id", last.id).delete();
      try {
        await expect(check.run()).rejects.toThrow(`migration ${last.name} is not applied (run: switchyard migrate)`);
      } finally {
        await testDb.db("knex_migrations").insert({ name: last.name, batch: 99, migration_time: new Date() });
      }
    });

    it("reports the outbox dispatcher alive while its loop runs, and not once it is stopped or stuck", async () => {
      let clock = Date.now();
      const dispatcher = startDispatcher({
        db: testDb.db,
        logger: silent,
        pubsub: createInProcessPubSub(),
        retryBaseMs: 1000,
        maxAttempts: 3,
        intervalMs: 20,
        requestTimeoutMs: 1000,
        now: () => clock,
      });
      try {
        expect(dispatcher.alive()).toBe(true);
        // Silence longer than max(10 intervals, 2 × request timeout + 5 s) is a stuck loop.
        clock += 7_001;
        expect(dispatcher.alive()).toBe(false);
        await dispatcher.runOnce();
      } finally {
        await dispatcher.stop();
      }
      clock = Date.now();
      expect(dispatcher.alive()).toBe(false);
    });
  });
});
