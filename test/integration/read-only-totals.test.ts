/**
 * The key's totals read with the key (bench/README.md "Round 3 step I"): a request whose
 * operations are all queries reads the key, its running totals and its account's balance in one
 * statement, and each list's first page with its stored count in one; once an operation that may
 * write starts in the request, the totals read with the key are refused and read again, so a
 * balance, spent or count asked for after a write is the one after it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { measureStatements } from "../support/sql-count.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { migrate } from "../../src/db/index.ts";
import { createKey } from "../../src/auth/keys.ts";
import { createRateLimiter } from "../../src/auth/rate-limit.ts";
import { credit } from "../../src/ledger/index.ts";
import { usageReader } from "../../src/generation/usage.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { DEMO_CATALOG } from "../../src/cloud/demo-seed.ts";
import { parseYuan, toMoney } from "../../src/money.ts";
import { callerAccess } from "../../subgraphs/shared/auth.ts";

const VIEWER = `query Viewer { viewer { balance { amount } spent { amount } tasks(first: 5) { totalCount nodes { id } } orders(first: 5) { totalCount nodes { id } } } }`;
const SUBMIT = `mutation Submit { submitVideoGeneration(input: { prompt: "a heron", modelId: 52, seconds: 5 }) { task { id price { amount } } } }`;

describe("through the router, in-process", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it("answers a read-only dashboard with the key and its totals in one statement and each first page with its count", async () => {
    const { key, account_id: accountId } = await t.createKey("100");
    await topUpCustomer(t.stack.db!, { accountId, customerId: "cust-ro", amount: parseYuan("1000") });
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a fox", model_id: 52, seconds: 5 } });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
    await t.waitForTask(key, submitted.body.data.task_id, (task: { status: number }) => task.status === 1);
    const ordered = await t.rest("POST", "/openapi/v1/orders", {
      key,
      body: { client_order_no: "ro-1", product_id: DEMO_CATALOG.products.compute, quantity: 1, billing_cycle: "monthly", customer: { customer_id: "cust-ro" } },
    });
    expect(ordered.status, JSON.stringify(ordered.body)).toBe(201);

    const { result, statements } = await measureStatements(t.stack.db!, () => t.graphql(VIEWER, {}, key));
    expect(result.body.errors).toBeUndefined();
    const viewer = result.body.data.viewer;
    const stored = await t.stack.db!("api_keys as k")
      .join("accounts as a", "a.id", "k.account_id")
      .where("k.account_id", accountId)
      .first("a.balance", "k.spent", "k.task_count", "a.order_count");
    expect(viewer.balance.amount).toBe(toMoney(Number(stored.balance)).amount);
    expect(viewer.spent.amount).toBe(toMoney(Number(stored.spent)).amount);
    expect(viewer.tasks.totalCount).toBe(1);
    expect(viewer.orders.totalCount).toBe(1);
    expect(Number(stored.task_count)).toBe(1);
    expect(Number(stored.order_count)).toBe(1);
    // The key with its totals, the tasks' first page with its count, the orders' with theirs.
    expect(
      statements.map((s) => s.sql),
      statements.map((s) => s.sql).join("\n"),
    ).toHaveLength(3);
    expect(statements.filter((s) => /"key_hash" = (\?|\$1)/.test(s.sql))).toHaveLength(1);
    expect(statements.some((s) => /^select "(task|order)_count"/.test(s.sql))).toBe(false);
  });

  it("answers the balance, spent and task count after a submission earlier in the same batch", async () => {
    const { key } = await t.createKey("100");
    const response = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify([{ query: VIEWER }, { query: SUBMIT }, { query: VIEWER }]),
    });
    expect(response.status).toBe(200);
    const [before, submit, after] = (await response.json()) as { data: any; errors?: unknown }[];
    for (const element of [before, submit, after]) expect(element!.errors).toBeUndefined();
    const price = parseYuan(submit!.data.submitVideoGeneration.task.price.amount);
    expect(price).toBeGreaterThan(0);
    expect(parseYuan(after!.data.viewer.balance.amount)).toBe(parseYuan(before!.data.viewer.balance.amount) - price);
    expect(parseYuan(after!.data.viewer.spent.amount)).toBe(parseYuan(before!.data.viewer.spent.amount) + price);
    expect(after!.data.viewer.tasks.totalCount).toBe(before!.data.viewer.tasks.totalCount + 1);
    expect(after!.data.viewer.tasks.nodes[0].id).toBe(submit!.data.submitVideoGeneration.task.id);
  });
});

describe("under one request scope (the router's in-process contract)", () => {
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await openTestDb("switchyard-read-only-totals-");
    await migrate(testDb.db);
  });
  afterAll(async () => {
    await testDb?.close();
  });

  const rateLimiter = createRateLimiter();
  const access = (authorization: string, requestScope: object | undefined, operationType: string | undefined) =>
    callerAccess(testDb.db, rateLimiter, { headers: { authorization }, requestScope, operationType });

  it("hands out the totals read with the key while every operation is a query", async () => {
    const { key } = await createKey(testDb.db, { name: "ro", balance: parseYuan("12.5") });
    const scope = {};
    const generation = access(`Bearer ${key}`, scope, "query");
    const cloud = access(`Bearer ${key}`, scope, "query");
    await generation.caller();
    await cloud.caller();
    expect(await generation.totals()).toEqual({ balance: parseYuan("12.5"), spent: 0, billedSeconds: 0, billedImages: 0 });
    expect(await cloud.totals()).toEqual(await generation.totals());
  });

  it("refuses them once a mutation starts in the request, so a read after its write answers the new balance", async () => {
    const { id: keyId, key, account_id: accountId } = await createKey(testDb.db, { name: "rw", balance: parseYuan("10") });
    const scope = {};
    const first = access(`Bearer ${key}`, scope, "query");
    expect((await first.totals())?.balance).toBe(parseYuan("10"));
    // A mutation of the same client request starts, then writes.
    const mutation = access(`Bearer ${key}`, scope, "mutation");
    await mutation.caller();
    await testDb.db.transaction((trx) => credit(trx, "topup", { accountId, keyId, amount: parseYuan("5"), reason: "test" }));
    const after = access(`Bearer ${key}`, scope, "query");
    expect(await after.totals()).toBeNull();
    expect(await first.totals()).toBeNull();
    expect(await usageReader(testDb.db, () => after.caller(), after.totals).balance()).toBe(parseYuan("15"));
  });

  it("refuses them over HTTP (no scope) and for an operation of unknown kind", async () => {
    const { key } = await createKey(testDb.db, { name: "none", balance: parseYuan("1") });
    const overHttp = access(`Bearer ${key}`, undefined, "query");
    await overHttp.caller();
    expect(await overHttp.totals()).toBeNull();
    const unknown = access(`Bearer ${key}`, {}, undefined);
    await unknown.caller();
    expect(await unknown.totals()).toBeNull();
  });
});
