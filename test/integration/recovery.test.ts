/**
 * The recovery sweep (src/generation/recovery.ts) and the books check of orders (verifyLedger)
 * against a real database (SQLite, or PostgreSQL with TEST_DATABASE=postgres), driven step by
 * step with sweepOnce(). A "crashed" submission is made the way a crash leaves it: the debit and
 * the pending task row are committed, and the upstream call never returns. Lookups of lost
 * submissions run through the real HTTP adapter against the fake provider (a real HTTP server).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { migrate, type Db } from "../../src/db/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { authenticate, createKey, type Caller } from "../../src/auth/keys.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";
import { createGenerationService, toTaskRecord, type GenerationService } from "../../src/generation/tasks/index.ts";
import { startRecovery, type RecoveryOptions } from "../../src/generation/recovery.ts";
import { UpstreamError, type GenerationUpstream, type UpstreamTaskState } from "../../src/generation/upstream/types.ts";
import { createHttpUpstream } from "../../src/generation/upstream/http.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { DEMO_CATALOG, seedDemoCatalog } from "../../src/cloud/demo-seed.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { createOrderService } from "../../src/cloud/orders/index.ts";

const logger = pino({ level: "silent" });
/** Model 52, 5 s at 720P: 5.000 yuan. */
const PRICE = 5000;
const VIDEO = { prompt: "a kite over dunes", modelId: 52, seconds: 5 };

/** An upstream whose answers the test scripts; counts its calls. */
function scriptedUpstream() {
  const calls = { submit: 0, status: 0 };
  const script = {
    submit: async (taskId: string): Promise<{ upstreamTaskId: string }> => ({ upstreamTaskId: `up-${taskId}` }),
    status: async (_upstreamTaskId: string): Promise<UpstreamTaskState> => ({ status: 0 }),
  };
  const upstream: GenerationUpstream = {
    name: "scripted",
    submit: (_request, taskId) => {
      calls.submit += 1;
      return script.submit(taskId);
    },
    fetchStatus: (id) => {
      calls.status += 1;
      return script.status(id);
    },
  };
  return { upstream, calls, script };
}

let testDb: TestDb;
let db: Db;
let seq = 0;

beforeAll(async () => {
  testDb = await openTestDb("switchyard-recovery-");
  db = testDb.db;
  await migrate(db);
});
afterAll(() => testDb?.close());

async function newCaller(balance = "100"): Promise<Caller> {
  const key = await createKey(db, { name: `recovery ${++seq}`, balance: parseYuan(balance) });
  return authenticate(db, `Bearer ${key.key}`);
}

function serviceWith(upstream: GenerationUpstream, on: Db = db): GenerationService {
  return createGenerationService({ db: on, upstream, checkUrl: async () => true, pollIntervalMs: 0 });
}

/** Submits through a process that "dies" in the upstream call: debit and pending row committed, no answer ever. */
async function crashedSubmission(caller: Caller): Promise<string> {
  let reached!: (taskId: string) => void;
  const called = new Promise<string>((resolve) => (reached = resolve));
  const hanging: GenerationUpstream = {
    name: "hanging",
    submit: (_request, taskId) => {
      reached(taskId);
      return new Promise(() => undefined);
    },
    fetchStatus: () => new Promise(() => undefined),
  };
  void serviceWith(hanging).submit(caller, "video", { ...VIDEO, prompt: `${VIDEO.prompt} ${++seq}` });
  return called;
}

function recovery(upstream: GenerationUpstream, overrides: Partial<RecoveryOptions> = {}) {
  const on = overrides.db ?? db;
  return startRecovery({
    db: on,
    service: serviceWith(upstream, on),
    upstream,
    logger,
    upstreamTimeoutMs: 0,
    marginMs: 0,
    pollIntervalMs: 0,
    background: false,
    ...overrides,
  });
}

const task = (id: string) => db("tasks").where({ id }).first();
const entriesOf = async (taskId: string) => (await db("ledger_entries").where("task_id", taskId).orderBy("id")).map((e: any) => [e.kind, Number(e.amount)]);

describe("interrupted submissions", () => {
  it("resends each exactly once when two processes sweep at the same time", async () => {
    const caller = await newCaller();
    const ids = await Promise.all([1, 2, 3, 4].map(() => crashedSubmission(caller)));
    for (const id of ids) expect(await task(id)).toMatchObject({ submit_state: "pending", status: 0 });
    const { upstream, calls } = scriptedUpstream();
    const other = testDb.openAnother();
    const [a, b] = [recovery(upstream), recovery(upstream, { db: other })];
    const results = await Promise.all([a.sweepOnce(), b.sweepOnce()]);
    expect(results[0].resent + results[1].resent).toBe(4);
    expect(calls.submit).toBe(4);
    for (const id of ids) {
      expect(await task(id)).toMatchObject({ submit_state: "sent", status: 0, upstream_task_id: `up-${id}` });
      expect(await entriesOf(id)).toEqual([["debit", -PRICE]]);
    }
    // Nothing left to do.
    expect(await a.sweepOnce()).toEqual({ adopted: 0, resent: 0, refunded: 0, expired: 0, late: 0 });
    expect(calls.submit).toBe(4);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("leaves a pending task younger than the upstream timeout alone, then refunds it once when the upstream refuses", async () => {
    const caller = await newCaller();
    const id = await crashedSubmission(caller);
    const { upstream, calls, script } = scriptedUpstream();
    script.submit = async () => {
      throw new UpstreamError("failed", "HTTP 500");
    };
    expect(await recovery(upstream, { upstreamTimeoutMs: 60_000 }).sweepOnce()).toMatchObject({ resent: 0, refunded: 0 });
    expect(calls.submit).toBe(0);
    expect((await task(id)).submit_state).toBe("pending");

    const sweeper = recovery(upstream);
    expect(await sweeper.sweepOnce()).toMatchObject({ resent: 0, refunded: 1 });
    expect(await task(id)).toMatchObject({ submit_state: "failed", status: 2, error: "Upstream request failed" });
    expect(Number((await task(id)).refunded)).toBe(PRICE);
    expect(await sweeper.sweepOnce()).toMatchObject({ refunded: 0 });
    expect(calls.submit).toBe(1);
    expect(await entriesOf(id)).toEqual([
      ["debit", -PRICE],
      ["refund", PRICE],
    ]);
    const outbox = await db("outbox").where("aggregate_id", id).orderBy("id");
    expect(outbox.map((row: any) => JSON.parse(row.payload).status)).toEqual([0, 2]);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("takes over a task whose sweeper died (lease run out), never one still leased", async () => {
    const caller = await newCaller();
    const id = await crashedSubmission(caller);
    const { upstream, calls } = scriptedUpstream();
    const leaseUntil = new Date(Date.now() + 60_000).toISOString();
    await db("tasks").where({ id }).update({ submit_state: "resending", next_poll_at: leaseUntil });
    const sweeper = recovery(upstream);
    expect(await sweeper.sweepOnce()).toMatchObject({ resent: 0 });
    expect(calls.submit).toBe(0);
    await db("tasks")
      .where({ id })
      .update({ next_poll_at: new Date(Date.now() - 1).toISOString() });
    expect(await sweeper.sweepOnce()).toMatchObject({ resent: 1 });
    expect(await task(id)).toMatchObject({ submit_state: "sent", upstream_task_id: `up-${id}` });
    expect(calls.submit).toBe(1);
    expect(await verifyLedger(db)).toEqual([]);
  });
});

describe("deadlines and late results", () => {
  /** A task accepted upstream (status 0, sent) whose deadline has passed. */
  async function overdueTask(caller: Caller, upstream: GenerationUpstream): Promise<string> {
    const submitted = await serviceWith(upstream).submit(caller, "video", { ...VIDEO, prompt: `${VIDEO.prompt} ${++seq}` });
    const row = await task(submitted.id);
    expect(row).toMatchObject({ submit_state: "sent", status: 0 });
    expect(Date.parse(row.deadline_at) - Date.parse(row.created_at)).toBe(30 * 60 * 1000); // video: 30 minutes
    await db("tasks")
      .where({ id: submitted.id })
      .update({ deadline_at: new Date(Date.now() - 1).toISOString() });
    return submitted.id;
  }

  it("settles each overdue task exactly once against a poller reporting success at the same moment", async () => {
    const caller = await newCaller();
    const { upstream } = scriptedUpstream();
    const ids = await Promise.all(Array.from({ length: 6 }, () => overdueTask(caller, upstream)));
    const poller = serviceWith(upstream, testDb.openAnother());
    const rows = await Promise.all(ids.map(task));
    const sweeper = recovery(upstream);
    await Promise.all([
      sweeper.sweepOnce(),
      ...rows.map((row) => poller.applyUpstreamState(toTaskRecord(row), { status: 1, result: `https://cdn.example.com/${row.id}.mp4` }, 0)),
    ]);
    for (const id of ids) {
      const row = await task(id);
      if (Number(row.status) === 1) {
        expect(Number(row.refunded)).toBe(0);
        expect(await entriesOf(id)).toEqual([["debit", -PRICE]]);
      } else {
        expect(row).toMatchObject({ status: 2, error: "Generation timed out" });
        expect(Number(row.refunded)).toBe(PRICE);
        expect(await entriesOf(id)).toEqual([
          ["debit", -PRICE],
          ["refund", PRICE],
        ]);
      }
    }
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("fails a silent task at its deadline with a full refund and records a late success without charging", async () => {
    const caller = await newCaller();
    const { upstream, script } = scriptedUpstream();
    const id = await overdueTask(caller, upstream);
    // The sweep covers every task: keep earlier tests' tasks from coming due while this one is counted.
    await db("tasks").whereNot("id", id).update({ next_poll_at: "9999-12-31T00:00:00.000Z" });
    const sweeper = recovery(upstream);
    expect(await sweeper.sweepOnce()).toMatchObject({ expired: 1, late: 0 });
    const expired = await task(id);
    expect(expired).toMatchObject({ status: 2, error: "Generation timed out", late_result: null });
    expect(expired.expired_at).toEqual(expect.any(String));
    const events = await db("outbox").where("aggregate_id", id).orderBy("id");
    expect(JSON.parse(events.at(-1).payload)).toMatchObject({ status: 2, error: "Generation timed out", refunded: PRICE });

    // Still running upstream: asked again later, nothing recorded.
    expect(await sweeper.sweepOnce()).toMatchObject({ late: 0 });
    expect((await task(id)).next_poll_at).not.toBeNull();
    await db("tasks")
      .where({ id })
      .update({ next_poll_at: new Date(Date.now() - 1).toISOString() });
    script.status = async () => ({ status: 1, result: "https://cdn.example.com/late.mp4" });
    expect(await sweeper.sweepOnce()).toMatchObject({ expired: 0, late: 1 });
    const late = await task(id);
    expect(late).toMatchObject({ status: 2, error: "Generation timed out", late_result: "https://cdn.example.com/late.mp4", next_poll_at: null });
    expect(Number(late.refunded)).toBe(PRICE);
    expect(await entriesOf(id)).toEqual([
      ["debit", -PRICE],
      ["refund", PRICE],
    ]);
    expect(await sweeper.sweepOnce()).toEqual({ adopted: 0, resent: 0, refunded: 0, expired: 0, late: 0 });
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("stops watching a task failed by its deadline once the upstream reports it failed too", async () => {
    const caller = await newCaller();
    const { upstream, script } = scriptedUpstream();
    const id = await overdueTask(caller, upstream);
    script.status = async () => ({ status: 2, error: "upstream gave up" });
    const sweeper = recovery(upstream);
    expect(await sweeper.sweepOnce()).toMatchObject({ expired: 1 });
    await db("tasks")
      .where({ id })
      .update({ next_poll_at: new Date(Date.now() - 1).toISOString() });
    expect(await sweeper.sweepOnce()).toMatchObject({ late: 0 });
    expect(await task(id)).toMatchObject({ status: 2, next_poll_at: null, late_result: null, error: "Generation timed out" });
  });
});

describe("interrupted submissions the provider may already have (HTTP adapter, fake provider)", () => {
  let fake: FakeUpstream;
  let http: GenerationUpstream;
  let lost = 0;
  beforeAll(async () => {
    fake = await startFakeUpstream();
    http = createHttpUpstream({ baseUrl: fake.url, apiKey: "upstream-key", timeoutMs: 2_000 });
  });
  afterAll(() => fake?.close());

  const isSubmit = (r: { method: string; path: string }) => r.method === "POST" && r.path.endsWith("/generations");
  /** Submissions the fake received carrying our task id as their reference. */
  const submissionsOf = (taskId: string) => fake.requests.filter((r) => isSubmit(r) && r.body?.client_reference === taskId);
  const lookups = () => fake.requests.filter((r) => r.method === "GET" && r.path === "/api/v1/usage").length;

  /**
   * A submission that reached the provider through the real adapter, which accepted it, and
   * whose answer was never recorded: the process is "cut off" in the call (its promise never
   * settles here, whatever the provider does).
   * @returns our task id and the provider's
   */
  async function lostAnswerSubmission(caller: Caller): Promise<{ id: string; upstreamId: string }> {
    const upstreamId = `up-lost-${++lost}`;
    fake.onSubmit({ kind: "accept_silently", taskId: upstreamId });
    const before = fake.requests.filter(isSubmit).length;
    const cutOff: GenerationUpstream = {
      name: "cut-off",
      submit: (request, taskId) => {
        http.submit(request, taskId).catch(() => undefined);
        return new Promise(() => undefined);
      },
      fetchStatus: () => new Promise(() => undefined),
    };
    void serviceWith(cutOff).submit(caller, "video", { ...VIDEO, prompt: `${VIDEO.prompt} ${++seq}` });
    await fake.waitForRequests(isSubmit, before + 1);
    const row = await db("tasks").where("key_id", caller.keyId).orderBy("created_at", "desc").first();
    expect(row).toMatchObject({ submit_state: "pending", status: 0, upstream_task_id: null });
    expect(fake.accepted.at(-1)).toEqual({ taskId: upstreamId, clientReference: row.id });
    return { id: row.id, upstreamId };
  }

  it("adopts the provider's task for a submission whose answer was lost, sending nothing a second time and charging once", async () => {
    const caller = await newCaller();
    const { id, upstreamId } = await lostAnswerSubmission(caller);
    fake.onSubmit({ kind: "accept", taskId: "up-would-be-duplicate" });
    const sweeper = recovery(http);
    expect(await sweeper.sweepOnce()).toMatchObject({ adopted: 1, resent: 0, refunded: 0 });
    expect(await task(id)).toMatchObject({ submit_state: "sent", status: 0, upstream_task_id: upstreamId });
    expect(submissionsOf(id)).toHaveLength(1);
    expect(fake.accepted.filter((a) => a.clientReference === id)).toHaveLength(1);
    expect(await entriesOf(id)).toEqual([["debit", -PRICE]]);

    // The adopted task is polled as usual and settles once, for the one price.
    fake.setTask(upstreamId, { status: 1, result: "https://cdn.example.com/adopted.mp4" });
    const service = serviceWith(http);
    expect(await service.applyUpstreamState(toTaskRecord(await task(id)), await http.fetchStatus(upstreamId), 0)).toBe(true);
    expect(await task(id)).toMatchObject({ status: 1, result: "https://cdn.example.com/adopted.mp4" });
    expect(Number((await task(id)).refunded)).toBe(0);
    expect(await entriesOf(id)).toEqual([["debit", -PRICE]]);
    expect(await sweeper.sweepOnce()).toMatchObject({ adopted: 0, resent: 0 });
    expect(submissionsOf(id)).toHaveLength(1);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("adopts it once when two processes sweep at the same time", async () => {
    const caller = await newCaller();
    const { id, upstreamId } = await lostAnswerSubmission(caller);
    fake.onSubmit({ kind: "accept" });
    const results = await Promise.all([recovery(http).sweepOnce(), recovery(http, { db: testDb.openAnother() }).sweepOnce()]);
    expect(results[0].adopted + results[1].adopted).toBe(1);
    expect(results[0].resent + results[1].resent).toBe(0);
    expect(await task(id)).toMatchObject({ submit_state: "sent", upstream_task_id: upstreamId });
    expect(submissionsOf(id)).toHaveLength(1);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("resends once, with the same reference and Idempotency-Key, a submission the provider never got", async () => {
    const caller = await newCaller();
    const id = await crashedSubmission(caller); // died before anything reached the provider
    fake.onSubmit({ kind: "accept", taskId: "up-first-arrival" });
    const asked = lookups();
    expect(await recovery(http).sweepOnce()).toMatchObject({ adopted: 0, resent: 1 });
    expect(lookups()).toBe(asked + 1);
    const sent = submissionsOf(id);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      idempotencyKey: id,
      authorization: "Bearer upstream-key",
      body: { client_reference: id, prompt: expect.any(String), model_id: 52 },
    });
    expect(await task(id)).toMatchObject({ submit_state: "sent", upstream_task_id: "up-first-arrival" });
    expect(await entriesOf(id)).toEqual([["debit", -PRICE]]);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it.each([
    ["leaves client_reference out of its task history (a provider that follows only the spec)", "omit_reference" as const],
    ["cannot list its task history (HTTP 500)", "fail" as const],
  ])("resends a lost submission when the provider %s: the case the README names as a possible second send", async (_what, mode) => {
    const caller = await newCaller();
    const { id } = await lostAnswerSubmission(caller);
    fake.onSubmit({ kind: "accept", taskId: `up-second-${mode}` });
    fake.setHistoryMode(mode);
    try {
      expect(await recovery(http).sweepOnce()).toMatchObject({ adopted: 0, resent: 1 });
    } finally {
      fake.setHistoryMode("echo");
    }
    // Sent twice under one reference and one Idempotency-Key: a provider honouring the key would dedupe.
    expect(submissionsOf(id).map((r) => r.idempotencyKey)).toEqual([id, id]);
    expect(await task(id)).toMatchObject({ submit_state: "sent", upstream_task_id: `up-second-${mode}` });
    expect(await entriesOf(id)).toEqual([["debit", -PRICE]]); // the customer still pays once
    expect(await verifyLedger(db)).toEqual([]);
  });
});

describe("switchyard verify: orders and refund causes", () => {
  it("passes clean books and names every broken order invariant", async () => {
    await seedDemoCatalog(db);
    let clock = Date.parse("2025-05-01T00:00:00.000Z");
    const orders = createOrderService({ db, provisionDelayMs: 1000, now: () => clock });
    const caller = await newCaller();
    const body = (customerId: string, extra: Record<string, unknown> = {}) => ({
      clientOrderNo: `V-${++seq}`,
      productId: DEMO_CATALOG.products.compute,
      quantity: 1,
      billingCycle: "monthly",
      customer: { customerId, contact: "ops@example.com" },
      metadata: { region: "cn-east-1" },
      ...extra,
    });
    await topUpCustomer(db, { accountId: caller.accountId, customerId: "rich", amount: parseYuan("1000") });
    const paid = (await orders.create(caller, body("rich"), {})).order;
    const refunded = (await orders.create(caller, body("rich", { metadata: { simulate: "fail" } }), {})).order;
    const unpaid = (await orders.create(caller, body("poor"), {})).order;
    expect([paid.paymentStatus, refunded.paymentStatus, unpaid.paymentStatus]).toEqual(["paid", "paid", "unpaid"]);
    clock += 1000;
    await orders.provisionDue();
    await orders.renew(caller, paid.id, undefined, {});
    expect((await orders.get(caller, refunded.id)).paymentStatus).toBe("refunded");
    expect(await verifyLedger(db)).toEqual([]);

    const entry = (fields: Record<string, unknown>) =>
      db("ledger_entries").insert({
        account_id: caller.accountId,
        customer_id: "rich",
        key_id: caller.keyId,
        balance_after: 0,
        created_at: new Date().toISOString(),
        ...fields,
      });
    // The pay deduction of `paid` no longer matches its amount.
    await db("ledger_entries").where("ref", `order:${paid.id}:pay`).update({ amount: -1 });
    // A second refund of `refunded`.
    await entry({ kind: "refund", amount: 1, order_id: refunded.id, ref: null });
    // Entries on an unpaid order.
    await entry({ kind: "adjustment", amount: 1, order_id: unpaid.id, ref: null });
    // A renewal of an order that does not exist, and refunds with no (existing) cause.
    await entry({ kind: "debit", amount: -1, order_id: "ord_missing", ref: "order:ord_missing:renew:1" });
    await entry({ kind: "refund", amount: 1, ref: "stray-refund" });
    await entry({ kind: "refund", amount: 1, task_id: "task_missing", ref: "stray-task-refund" });

    const problems = await verifyLedger(db);
    const found = problems.map((p) => `${p.kind} ${p.subject}`);
    expect(found).toEqual(
      expect.arrayContaining([
        `order_payment ${paid.id}`,
        `order_refund ${refunded.id}`,
        `unpaid_order_entries ${unpaid.id}`,
        `balance_mismatch ${caller.accountId}/rich`,
      ]),
    );
    const byKind = (kind: string) => problems.filter((p) => p.kind === kind).map((p) => p.detail);
    expect(byKind("order_entry_without_order")).toEqual([expect.stringContaining("order:ord_missing:renew:1")]);
    expect(byKind("refund_without_cause")).toEqual(
      expect.arrayContaining([expect.stringContaining("tied to no task or order (ref stray-refund)"), expect.stringContaining("names task task_missing")]),
    );
    // The clean orders (the renewal of `paid` included) raise nothing else.
    expect(problems.filter((p) => p.kind === "order_renewal")).toEqual([]);
  });
});
