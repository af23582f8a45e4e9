/**
 * Running totals (docs/architecture.md §3.7; ADR 0010), on the database of the run (SQLite by
 * default, PostgreSQL with TEST_DATABASE=postgres): every stored total moves in the transaction of
 * its cause and stays the sum of its rows under concurrent submissions, refunds, order payments and
 * provisioning; `verifyLedger` names a total that is not; migration 009 backfills them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Db } from "../../src/db/index.ts";
import { migrationSource } from "../../src/db/migrations/index.ts";
import { authenticate, createKey, type Caller } from "../../src/auth/keys.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";
import { createGenerationService } from "../../src/generation/tasks/index.ts";
import { usageTotals } from "../../src/generation/usage.ts";
import { UpstreamError, type GenerationUpstream } from "../../src/generation/upstream/types.ts";
import { createOrderService } from "../../src/cloud/orders/index.ts";
import { getCustomerBalance, topUpCustomer } from "../../src/cloud/customers.ts";
import { seedDemoCatalog } from "../../src/cloud/demo-seed.ts";
import { openTestDb, type TestDb } from "../support/db.ts";

/** Refuses every submission whose prompt says so; accepts the others at once. */
const upstream: GenerationUpstream = {
  name: "totals-test",
  async submit(request, taskId) {
    if (request.prompt.startsWith("refuse")) throw new UpstreamError("failed", "refused by the test upstream");
    return { upstreamTaskId: `up.${taskId}` };
  },
  async fetchStatus() {
    return { status: 1, result: "https://media.example/r.mp4" };
  },
};

let testDb: TestDb;
let db: Db;

beforeAll(async () => {
  testDb = await openTestDb("switchyard-totals-");
  db = testDb.db;
  await migrate(db);
  await seedDemoCatalog(db);
});

afterAll(async () => {
  await testDb?.close();
});

/** Runs `work` over 0..n-1 all at once. */
const all = <T>(n: number, work: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => work(i)));

describe("running totals", () => {
  let caller: Caller;
  let other: Caller;

  it("stay exact under concurrent submissions, refunds, order payments and provisioning", async () => {
    const key = await createKey(db, { name: "totals", balance: parseYuan("1000") });
    const second = await createKey(db, { name: "totals second key", accountId: key.account_id });
    caller = await authenticate(db, key.key);
    other = await authenticate(db, second.key);
    const generation = createGenerationService({ db, upstream, checkUrl: async () => true, pollIntervalMs: 60_000 });
    const orders = createOrderService({ db, provisionDelayMs: 0 });
    await topUpCustomer(db, { accountId: key.account_id, customerId: "cust-totals", amount: parseYuan("1000") });

    // 12 videos (5 s, 5.00 each) and 12 images (4 × 0.30) on the first key, 6 videos on the second;
    // every third video refused by the upstream (full refund at once).
    const videos = await all(12, (i) =>
      generation.submit(caller, "video", { prompt: `${i % 3 === 0 ? "refuse" : "ok"} video ${i}`, modelId: 52, seconds: 5 }).catch((e) => e),
    );
    const images = await all(12, (i) => generation.submit(caller, "image", { prompt: `image ${i}`, modelId: 45, count: 4 }));
    const others = await all(6, (i) => generation.submit(other, "video", { prompt: `ok other ${i}`, modelId: 52, seconds: 5 }));
    // Concurrent settlements: half the accepted videos fail upstream (full refund), the others
    // succeed; images deliver 1-4 of their 4 (partial refunds); the second key's expire.
    const accepted = videos.filter((v) => !(v instanceof Error));
    expect(accepted).toHaveLength(8);
    await Promise.all([
      ...accepted.map((task, i) =>
        generation.applyUpstreamState(task, i % 2 ? { status: 2, error: "upstream failed" } : { status: 1, result: "https://media.example/v.mp4" }, 60_000),
      ),
      ...images.map((task, i) =>
        generation.applyUpstreamState(task, { status: 1, images: Array.from({ length: (i % 4) + 1 }, (_, n) => `https://media.example/${n}.png`) }, 60_000),
      ),
      ...others.map((task) => generation.expireTask(task, 60_000)),
      // 10 orders of 30.00 (demo CDN product, monthly): every fifth one fails provisioning.
      all(10, (i) =>
        orders.create(caller, {
          clientOrderNo: `tot-${i}`,
          productId: "prd_cdn_standard",
          quantity: 1,
          billingCycle: "monthly",
          customer: { customerId: "cust-totals" },
          metadata: { domain: `t${i}.example.com`, ...(i % 5 === 0 ? { simulate: "fail" } : {}) },
        }),
      ),
    ]);

    // The first key: 4 videos succeeded (20 s billed), 4 failed and 4 refused (refunded);
    // images: 12 tasks delivering 1, 2, 3, 4 images three times over = 30 images of 0.30. Its
    // spent does not count the 10 orders of 30.00 it paid from the customer's wallet: spent is
    // what the account's own balance paid for generation (docs/api/generation.md §2.5).
    const generationSpent = 4 * 5000 + 30 * 300;
    const first = await usageTotals(db, caller);
    expect(first).toEqual({ balance: parseYuan("1000") - generationSpent, spent: generationSpent, billedSeconds: 20, billedImages: 30 });
    expect(await usageTotals(db, other)).toEqual({ balance: first.balance, spent: 0, billedSeconds: 0, billedImages: 0 });
    expect(Number((await db("api_keys").where("id", caller.keyId).first("task_count")).task_count)).toBe(24);
    expect(Number((await db("api_keys").where("id", other.keyId).first("task_count")).task_count)).toBe(6);
    expect(Number((await db("accounts").where("id", caller.accountId).first("order_count")).order_count)).toBe(10);
    // All 10 orders are paid and still provisioning: frozen is their sum; provisioning unfreezes them.
    const customerId = "cust-totals";
    expect((await getCustomerBalance(db, caller.accountId, customerId)).frozen).toBe(10 * 30_000);
    await all(3, () => orders.provisionDue());
    while ((await orders.provisionDue()) > 0);
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toMatchObject({ frozen: 0, available: parseYuan("1000") - 8 * 30_000 });
    // The two failed provisionings were refunded to the customer's wallet: the key's spent does not move.
    expect((await usageTotals(db, caller)).spent).toBe(generationSpent);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("verify names every stored total that is not the sum of its rows", async () => {
    const corruptions: [string, Record<string, string>, string, string][] = [
      ["api_keys", { id: caller.keyId }, "spent", caller.keyId],
      ["api_keys", { id: caller.keyId }, "billed_seconds", caller.keyId],
      ["api_keys", { id: caller.keyId }, "billed_images", caller.keyId],
      ["api_keys", { id: other.keyId }, "task_count", other.keyId],
      ["accounts", { id: caller.accountId }, "order_count", caller.accountId],
      ["customers", { account_id: caller.accountId, customer_id: "cust-totals" }, "frozen", `${caller.accountId}/cust-totals`],
    ];
    for (const [table, where, column, subject] of corruptions) {
      const stored = Number((await db(table).where(where).first(column))[column]);
      await db(table).where(where).increment(column, 7);
      expect(await verifyLedger(db)).toEqual([
        { kind: "total_mismatch", subject, detail: `${table}.${column}: stored ${stored + 7} != sum of its rows ${stored}` },
      ]);
      await db(table).where(where).decrement(column, 7);
    }
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("recomputes by migration 012 a spent that counted cloud order payments, leaving the others as they were", async () => {
    const before = await db("api_keys").orderBy("id").select("id", "spent");
    // As the ledger moved it before: the key's debits and refunds on every wallet, its orders included.
    const oldRule = `select coalesce(0 - sum(amount), 0) from ledger_entries where key_id = api_keys.id and kind in ('debit', 'refund')`;
    await db("api_keys").update({ spent: db.raw(`(${oldRule})`) });
    expect(Number((await db("api_keys").where("id", caller.keyId).first("spent")).spent)).toBe(4 * 5000 + 30 * 300 + 8 * 30_000);
    expect(await verifyLedger(db)).toEqual([
      {
        kind: "total_mismatch",
        subject: caller.keyId,
        detail: `api_keys.spent: stored ${4 * 5000 + 30 * 300 + 8 * 30_000} != sum of its rows ${4 * 5000 + 30 * 300}`,
      },
    ]);
    let undone: string[] = [];
    do [, undone] = await db.migrate.down({ migrationSource });
    while (undone.length > 0 && !undone.includes("012_generation_spent"));
    expect(undone).toEqual(["012_generation_spent"]);
    await migrate(db);
    expect(await db("api_keys").orderBy("id").select("id", "spent")).toEqual(before);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("are backfilled from the existing rows by migration 009", async () => {
    const before = await db("api_keys").orderBy("id").select("id", "spent", "billed_seconds", "billed_images", "task_count");
    // Later migrations first, down to 009.
    let undone: string[] = [];
    do [, undone] = await db.migrate.down({ migrationSource });
    while (undone.length > 0 && !undone.includes("009_running_totals"));
    expect(undone).toEqual(["009_running_totals"]);
    await migrate(db);
    expect(await db("api_keys").orderBy("id").select("id", "spent", "billed_seconds", "billed_images", "task_count")).toEqual(before);
    expect(Number((await db("accounts").where("id", caller.accountId).first("order_count")).order_count)).toBe(10);
    expect(await verifyLedger(db)).toEqual([]);
  });
});
