/**
 * Work-queue leases (issue 6 item 1): two instances — two connections (pools) to one database,
 * as two processes have — share the task poller's, the provisioning worker's and the outbox
 * dispatcher's queues without handling any item twice. Runs on SQLite (compare-and-swap claims)
 * and, with TEST_DATABASE=postgres, on PostgreSQL (`FOR UPDATE SKIP LOCKED` claims).
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimBatch, migrate, type Db } from "../../src/db/index.ts";
import { authenticate, createKey, type Caller } from "../../src/auth/keys.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";
import { createGenerationService } from "../../src/generation/tasks/index.ts";
import { startPoller } from "../../src/generation/poller.ts";
import type { GenerationUpstream, UpstreamTaskState } from "../../src/generation/upstream/types.ts";
import { DEMO_CATALOG, seedDemoCatalog } from "../../src/cloud/demo-seed.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { createOrderService } from "../../src/cloud/orders/index.ts";
import { appendOutbox } from "../../src/events/outbox.ts";
import { accountTopic, createInProcessPubSub, type OutboxMessage } from "../../src/events/pubsub.ts";
import { startDispatcher } from "../../src/events/dispatcher/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";

const logger = pino({ level: "silent" });
let testDb: TestDb;
/** Instance A's and instance B's connections to the same database. */
let dbA: Db;
let dbB: Db;

beforeAll(async () => {
  testDb = await openTestDb("switchyard-leases-");
  dbA = testDb.db;
  await migrate(dbA);
  dbB = testDb.openAnother();
});

afterAll(async () => {
  await testDb?.close();
});

/** Runs `round` on both instances at once, again and again, until `done()` holds. */
async function raceUntil(round: (db: Db, instance: "A" | "B") => Promise<unknown>, done: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error("the queue was not drained in time");
    await Promise.all([round(dbA, "A"), round(dbB, "B"), round(dbA, "A"), round(dbB, "B")]);
  }
}

describe("work-queue leases shared by two instances", () => {
  it("claimBatch hands each due row to exactly one of two concurrent claimers", async () => {
    const key = await createKey(dbA, { name: "claims" });
    const rows = Array.from({ length: 120 }, (_, i) => ({
      topic: "lease.test",
      account_id: key.account_id,
      aggregate_id: `agg_${i}`,
      payload: "{}",
      created_at: new Date().toISOString(),
    }));
    await dbA("outbox").insert(rows);
    const due = (q: any) => q.where("topic", "lease.test").whereNull("published_at").whereNull("lease_until");
    const lease = { lease_until: new Date(Date.now() + 60_000).toISOString() };
    // Four claims at a time, two on each connection, until every row is taken.
    const claims: any[][] = [];
    for (let round = 0; claims.flat().length < 120; round++) {
      if (round > 200) throw new Error("rows left unclaimed");
      claims.push(...(await Promise.all([dbA, dbB, dbA, dbB].map((db) => claimBatch(db, "outbox", due, [{ column: "id" }], 20, lease)))));
    }
    const claimed = claims.flat().map((r) => Number(r.id));
    // No row twice; each claim's rows in id order.
    expect(claimed).toHaveLength(120);
    expect(new Set(claimed).size).toBe(120);
    for (const claim of claims) {
      const ids = claim.map((r) => Number(r.id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      for (const row of claim) expect(row.lease_until).toBe(lease.lease_until);
    }
    expect(await dbA("outbox").where("topic", "lease.test").whereNull("lease_until")).toEqual([]);
    await dbA("outbox").where("topic", "lease.test").delete();
  });

  it("two task pollers ask the upstream about each task once and settle it once", async () => {
    const created = await createKey(dbA, { name: "pollers", balance: parseYuan("1000") });
    const caller: Caller = await authenticate(dbA, created.key);
    const fetches = new Map<string, number>();
    let inFlight = 0;
    let maxInFlight = 0;
    const upstream: GenerationUpstream = {
      name: "counting",
      async submit(_request, taskId) {
        return { upstreamTaskId: `up_${taskId}` };
      },
      async fetchStatus(upstreamTaskId): Promise<UpstreamTaskState> {
        fetches.set(upstreamTaskId, (fetches.get(upstreamTaskId) ?? 0) + 1);
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        // A slow answer keeps the two pollers' rounds overlapping.
        await new Promise((r) => setTimeout(r, 5));
        inFlight -= 1;
        return { status: 1, result: `https://cdn.example/${upstreamTaskId}.mp4` };
      },
    };
    const deps = { upstream, checkUrl: async () => true, pollIntervalMs: 0 };
    const serviceA = createGenerationService({ db: dbA, ...deps });
    const serviceB = createGenerationService({ db: dbB, ...deps });

    const count = 80;
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const task = await serviceA.submit(caller, "video", { prompt: `lease ${i}`, modelId: 52, seconds: 5 });
      ids.push(task.id);
    }
    const options = { upstream, logger, intervalMs: 60_000, batchSize: 15, concurrency: 4 };
    const pollerA = startPoller({ db: dbA, service: serviceA, ...options });
    const pollerB = startPoller({ db: dbB, service: serviceB, ...options });
    try {
      await raceUntil(
        (_db, instance) => (instance === "A" ? pollerA : pollerB).pollOnce(),
        async () => (await dbA("tasks").whereIn("id", ids).whereNot("status", 1)).length === 0,
      );
    } finally {
      await pollerA.stop();
      await pollerB.stop();
    }

    expect(maxInFlight).toBeGreaterThan(1);
    expect(fetches.size).toBe(count);
    for (const [upstreamId, n] of fetches) expect({ upstreamId, n }).toEqual({ upstreamId, n: 1 });
    // One status event at submission and one at success per task; one debit, no refund.
    const events = await dbA("outbox").whereIn("aggregate_id", ids).select("aggregate_id");
    expect(events).toHaveLength(2 * count);
    const entries = await dbA<{ kind: string }>("ledger_entries").whereIn("task_id", ids).select("kind");
    expect(entries.filter((e) => e.kind === "debit")).toHaveLength(count);
    expect(entries.filter((e) => e.kind === "refund")).toHaveLength(0);
    expect(await verifyLedger(dbA)).toEqual([]);
  });

  it("two provisioning workers settle each due order once", async () => {
    await seedDemoCatalog(dbA);
    const created = await createKey(dbA, { name: "provisioning" });
    const caller: Caller = await authenticate(dbA, created.key);
    let clock = Date.parse("2031-01-01T00:00:00.000Z");
    const now = () => clock;
    const ordersA = createOrderService({ db: dbA, provisionDelayMs: 1_000, now, provisionBatch: 7 });
    const ordersB = createOrderService({ db: dbB, provisionDelayMs: 1_000, now, provisionBatch: 7 });
    await topUpCustomer(dbA, { accountId: created.account_id, customerId: "cust-lease", amount: parseYuan("100000") });

    const count = 40;
    const orderIds: string[] = [];
    for (let i = 0; i < count; i++) {
      const { order } = await ordersA.create(caller, {
        clientOrderNo: `LEASE-${i}`,
        productId: DEMO_CATALOG.products.compute,
        quantity: 1,
        billingCycle: "monthly",
        customer: { customerId: "cust-lease" },
        metadata: i % 5 === 0 ? { simulate: "fail" } : {},
      });
      expect(order.status).toBe("provisioning");
      orderIds.push(order.id);
    }
    clock += 1_000;

    let settled = 0;
    await raceUntil(
      async (_db, instance) => {
        const n = await (instance === "A" ? ordersA : ordersB).provisionDue();
        settled += n;
      },
      async () => (await dbA("orders").whereIn("id", orderIds).where("status", "provisioning")).length === 0,
    );

    // Every order settled by exactly one call: the settled counts add up, one event each.
    expect(settled).toBe(count);
    const statuses = await dbA<{ status: string }>("orders").whereIn("id", orderIds).select("status");
    expect(statuses.filter((o) => o.status === "failed")).toHaveLength(count / 5);
    expect(statuses.filter((o) => o.status === "active")).toHaveLength(count - count / 5);
    const settledEvents = await dbA<{ aggregate_id: string; topic: string }>("outbox")
      .whereIn("aggregate_id", orderIds)
      .whereIn("topic", ["order.provisioned", "order.failed"])
      .select("aggregate_id");
    expect(settledEvents).toHaveLength(count);
    expect(new Set(settledEvents.map((e) => e.aggregate_id)).size).toBe(count);
    expect(await dbA("resources").whereIn("order_id", orderIds)).toHaveLength(count - count / 5);
    expect(await dbA("ledger_entries").whereIn("order_id", orderIds).where("kind", "refund")).toHaveLength(count / 5);
    expect(await verifyLedger(dbA)).toEqual([]);
  });

  it("two dispatchers publish each outbox row once", async () => {
    const created = await createKey(dbA, { name: "dispatchers" });
    const pubsubA = createInProcessPubSub();
    const pubsubB = createInProcessPubSub();
    const published: { id: number; by: string }[] = [];
    const unsubscribe = [
      pubsubA.subscribe(accountTopic(created.account_id), (e) => published.push({ id: (e as OutboxMessage).id, by: "A" })),
      pubsubB.subscribe(accountTopic(created.account_id), (e) => published.push({ id: (e as OutboxMessage).id, by: "B" })),
    ];
    const count = 300;
    await dbA.transaction(async (trx) => {
      for (let i = 0; i < count; i++) {
        await appendOutbox(trx, { topic: "order.created", accountId: created.account_id, aggregateId: `ord_lease_${i}`, payload: { i } });
      }
    });
    const options = { logger, retryBaseMs: 1_000, maxAttempts: 3, intervalMs: 0 };
    const a = startDispatcher({ db: dbA, pubsub: pubsubA, ...options });
    const b = startDispatcher({ db: dbB, pubsub: pubsubB, ...options });
    try {
      await raceUntil(
        (_db, instance) => (instance === "A" ? a : b).runOnce(),
        async () => (await dbA("outbox").where("account_id", created.account_id).whereNull("published_at")).length === 0,
      );
    } finally {
      await a.stop();
      await b.stop();
      for (const off of unsubscribe) off();
    }
    expect(published).toHaveLength(count);
    expect(new Set(published.map((p) => p.id)).size).toBe(count);
  });
});
