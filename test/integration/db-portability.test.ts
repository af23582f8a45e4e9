/**
 * What differs between SQLite and PostgreSQL (issue 6 item 1), checked on the database of the run
 * (SQLite by default, PostgreSQL with TEST_DATABASE=postgres): unique violations, numbers from
 * bigint columns and aggregates, booleans, column limits that only PostgreSQL enforces.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isUniqueViolation, migrate, type Db } from "../../src/db/index.ts";
import { authenticate, createKey } from "../../src/auth/keys.ts";
import { balanceOf, credit, verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";
import { createGenerationService } from "../../src/generation/tasks/index.ts";
import type { GenerationUpstream } from "../../src/generation/upstream/types.ts";
import { upsertProduct, upsertVendor } from "../../src/cloud/catalog.ts";
import { usageTotals } from "../../src/generation/usage.ts";
import { parseOrderInput } from "../../src/cloud/order-request.ts";
import { openTestDb, type TestDb } from "../support/db.ts";

/** The error parseOrderInput throws for an otherwise valid input with `overrides`. */
function parseOrderInputError(overrides: Record<string, unknown>): unknown {
  try {
    parseOrderInput({ clientOrderNo: "SO-1", productId: "prd_x", quantity: 1, billingCycle: "monthly", customer: { customerId: "c1" }, ...overrides });
  } catch (error) {
    return error;
  }
  return null;
}

let testDb: TestDb;
let db: Db;

beforeAll(async () => {
  testDb = await openTestDb("switchyard-portability-");
  db = testDb.db;
  await migrate(db);
});

afterAll(async () => {
  await testDb?.close();
});

describe("database portability", () => {
  it("recognises unique and primary-key violations, and only those", async () => {
    const key = await createKey(db, { name: "unique", balance: parseYuan("1") });
    const entry = { accountId: key.account_id, amount: 1, ref: `portability:${key.id}` };
    await db.transaction((trx) => credit(trx, "adjustment", entry));
    const duplicateRef = await db.transaction((trx) => credit(trx, "adjustment", entry)).catch((e) => e);
    expect(isUniqueViolation(duplicateRef)).toBe(true);
    const row = await db("accounts").where("id", key.account_id).first();
    const duplicatePrimaryKey = await db("accounts")
      .insert(row)
      .catch((e) => e);
    expect(isUniqueViolation(duplicatePrimaryKey)).toBe(true);
    const notNull = await db("accounts")
      .insert({ id: "acc_no_name", balance: 0, credit_line: 0, created_at: "x" })
      .catch((e) => e);
    expect(notNull).toBeInstanceOf(Error);
    expect(isUniqueViolation(notNull)).toBe(false);
    expect(isUniqueViolation(new Error("UNIQUE constraint failed: but not from the database"))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
    // The failed duplicate changed nothing.
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("returns bigint columns, counts and sums as numbers", async () => {
    const key = await createKey(db, { name: "numbers", balance: parseYuan("12.345"), requireSignature: true });
    const account = await db("accounts").where("id", key.account_id).first();
    expect(account.balance).toBe(12_345);
    const [{ n }] = await db("ledger_entries").where("account_id", key.account_id).count({ n: "*" });
    expect(Number(n)).toBe(1);
    const [{ total }] = await db("ledger_entries").where("account_id", key.account_id).sum({ total: "amount" });
    expect(Number(total)).toBe(12_345);
    expect(typeof total).toBe("number");
    // Booleans read back as true/false whatever the database stores.
    const caller = await authenticate(db, key.key);
    expect(caller.requireSignature).toBe(true);
    expect(await usageTotals(db, caller)).toEqual({ balance: 12_345, spent: 0, billedSeconds: 0, billedImages: 0 });
  });

  it("refunds a task whose upstream failed with a long, unicode-heavy error", async () => {
    const created = await createKey(db, { name: "long-error", balance: parseYuan("10") });
    const caller = await authenticate(db, created.key);
    const longError = "失败 ".repeat(150) + "🎬".repeat(50);
    const upstream: GenerationUpstream = {
      name: "stub",
      submit: async (_request, taskId) => ({ upstreamTaskId: `up_${taskId}` }),
      fetchStatus: async () => ({ status: 2, error: longError }),
    };
    const service = createGenerationService({ db, upstream, checkUrl: async () => true, pollIntervalMs: 0 });
    const task = await service.submit(caller, "video", { prompt: "a long failure", modelId: 52, seconds: 5 });
    expect(await service.applyUpstreamState(task, await upstream.fetchStatus("x"), 1_000)).toBe(true);
    const settled = await service.getTask(caller, task.id);
    expect(settled).toMatchObject({ status: 2, error: longError, refunded: task.price });
    const refund = await db("ledger_entries").where({ task_id: task.id, kind: "refund" }).first();
    expect(refund.amount).toBe(task.price);
    expect([...refund.reason].length).toBeLessThanOrEqual(200);
    expect(longError.startsWith(refund.reason)).toBe(true);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("rejects text with U+0000 (which PostgreSQL text cannot hold) as invalid input, on every database", async () => {
    const created = await createKey(db, { name: "nul", balance: parseYuan("10") });
    const caller = await authenticate(db, created.key);
    const upstream: GenerationUpstream = {
      name: "stub",
      submit: async (_request, taskId) => ({ upstreamTaskId: `up_${taskId}` }),
      fetchStatus: async () => ({ status: 0 }),
    };
    const service = createGenerationService({ db, upstream, checkUrl: async () => true, pollIntervalMs: 0 });
    await expect(service.submit(caller, "video", { prompt: "a\u0000b", modelId: 52, seconds: 5 })).rejects.toMatchObject({ status: 400 });
    await expect(createKey(db, { name: "nul\u0000name" })).rejects.toMatchObject({ code: "validation_failed", details: { field: "name" } });
    await expect(createKey(db, { name: "nul", callbackUrl: "https://hooks.example/a\u0000b" })).rejects.toMatchObject({
      code: "validation_failed",
      details: { field: "callbackUrl" },
    });
    await expect(upsertVendor(db, { name: "Nul\u0000 Cloud" })).rejects.toMatchObject({ code: "validation_failed", details: { field: "name" } });
    expect(parseOrderInputError({ customer: { customerId: "c1", contact: "ops\u0000@shop.example" } })).toMatchObject({
      code: "validation_failed",
      details: { field: "customer.contact" },
    });
    expect(await balanceOf(db, created.account_id)).toBe(parseYuan("10"));
  });

  it("rejects integers beyond the columns' range with 422 instead of failing in the database", async () => {
    await upsertVendor(db, { id: "vnd_portable", name: "Portable" });
    const product = { id: "prd_portable", vendorId: "vnd_portable", category: "compute", name: "Big", billingCycles: [{ cycle: "monthly", price: 1_000 }] };
    await expect(upsertProduct(db, { ...product, stock: 3_000_000_000 })).rejects.toMatchObject({ code: "validation_failed", details: { field: "stock" } });
    expect((await upsertProduct(db, { ...product, stock: 2_147_483_647 })).stock).toBe(2_147_483_647);
    await expect(createKey(db, { name: "fast", rateLimit: 3_000_000_000 })).rejects.toMatchObject({
      code: "validation_failed",
      details: { field: "rateLimit" },
    });
  });
});
