/**
 * Cloud billing against a real SQLite database (docs/api/cloud.md §2 "Balance", "Transaction",
 * "Statement"; §4 `/billing/*`; issue 3 "Billing"; docs/architecture.md §3 money, §8 names): balances,
 * transactions with filters and ranges, monthly statements and their CSV export.
 */
import { appErrorOf as errorOf } from "../support/errors.ts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Db } from "../../src/db/index.ts";
import { migrationSource } from "../../src/db/migrations/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { authenticate, createKey, type Caller } from "../../src/auth/keys.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";
import { DEMO_CATALOG, seedDemoCatalog } from "../../src/cloud/demo-seed.ts";
import { adjustCustomer, getCustomerBalance, setCreditLine, topUpCustomer } from "../../src/cloud/customers.ts";
import { createOrderService, type OrderService } from "../../src/cloud/orders/index.ts";
import {
  getStatement,
  getStatementCsv,
  listTransactions,
  parseIsoTime,
  processStatementExports,
  STATEMENT_CSV_HEADER,
  type TransactionRecord,
} from "../../src/cloud/billing.ts";

const PROVISION_DELAY_MS = 2000;
const EXPORT_DELAY_MS = 60_000;

let db: Db;
let testDb: TestDb;
let clock: number;
let svc: OrderService;
let seq = 0;

async function newCaller(options: { callbackUrl?: string } = {}): Promise<Caller> {
  const key = await createKey(db, { name: `billing ${++seq}`, ...options });
  return authenticate(db, `Bearer ${key.key}`);
}

const customer = () => `cust-${++seq}`;

function computeBody(customerId: string, extra: Record<string, unknown> = {}) {
  return {
    clientOrderNo: `B-${++seq}`,
    productId: DEMO_CATALOG.products.compute,
    quantity: 1,
    billingCycle: "monthly",
    customer: { customerId, contact: "billing@example.com" },
    metadata: {},
    ...extra,
  };
}

/** Every transaction of a filter, following cursors. */
async function allTransactions(caller: Caller, filter: Parameters<typeof listTransactions>[2] = {}): Promise<TransactionRecord[]> {
  const out: TransactionRecord[] = [];
  let after: string | null = null;
  do {
    const page = await listTransactions(db, caller, filter, { first: 2, after });
    out.push(...page.items);
    after = page.hasNextPage ? page.cursors.at(-1)! : null;
  } while (after);
  return out;
}

/** The current statement id, `stm_YYYY-MM` of the UTC month. */
const currentStatementId = () => `stm_${new Date().toISOString().slice(0, 7)}`;

/** Some authenticated caller, re-targeted at another account by the books check (reads only). */
let template: Caller | null = null;
async function anyCaller(): Promise<Caller> {
  template ??= await newCaller();
  return template;
}

/** After every scenario: the ledger verifies and each customer's balance is the sum of its transactions. */
async function expectBooksBalanced(): Promise<void> {
  expect(await verifyLedger(db)).toEqual([]);
  for (const c of await db("customers").select("account_id", "customer_id", "balance")) {
    const caller: Caller = { ...(await anyCaller()), accountId: c.account_id };
    const txns = await allTransactions(caller, { customerId: c.customer_id });
    const balance = await getCustomerBalance(db, c.account_id, c.customer_id);
    expect(txns.reduce((sum, t) => sum + t.amount, 0)).toBe(balance.available);
    expect(balance.available).toBe(Number(c.balance));
    if (txns.length) expect(txns[0]!.balanceAfter).toBe(balance.available);
  }
}

beforeAll(async () => {
  testDb = await openTestDb("switchyard-billing-");
  db = testDb.db;
  await migrate(db);
  await seedDemoCatalog(db);
  clock = Date.now();
  svc = createOrderService({ db, provisionDelayMs: PROVISION_DELAY_MS, now: () => clock });
});

afterAll(async () => {
  await testDb?.close();
});

afterEach(async () => {
  await expectBooksBalanced();
});

/** One customer with a top-up, a paid order that fails (deduction + refund) and an adjustment. */
async function busyCustomer(caller: Caller) {
  const customerId = customer();
  await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("100"), keyId: caller.keyId, requestId: "req-topup" });
  const { order } = await svc.create(caller, computeBody(customerId, { metadata: { simulate: "fail" } }));
  clock += PROVISION_DELAY_MS;
  await svc.provisionDue();
  await adjustCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("-0.5"), reason: "rounding" });
  return { customerId, order };
}

describe("balances", () => {
  it("shows available, frozen (paid and provisioning) and the credit line; unknown customers are 404", async () => {
    const caller = await newCaller();
    const customerId = customer();
    expect(await errorOf(getCustomerBalance(db, caller.accountId, customerId))).toMatchObject({
      code: "not_found",
      status: 404,
      message: "Customer not found",
    });
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("150") });
    await setCreditLine(db, caller.accountId, customerId, parseYuan("20"));
    await svc.create(caller, computeBody(customerId));
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toEqual({ customerId, available: 51_000, frozen: 99_000, creditLine: 20_000 });
    clock += PROVISION_DELAY_MS;
    await svc.provisionDue();
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toEqual({ customerId, available: 51_000, frozen: 0, creditLine: 20_000 });
  });

  it("validates top-ups and adjustments", async () => {
    const caller = await newCaller();
    expect((await errorOf(topUpCustomer(db, { accountId: caller.accountId, customerId: customer(), amount: 0 }))).details).toEqual({ field: "amount" });
    expect((await errorOf(topUpCustomer(db, { accountId: caller.accountId, customerId: customer(), amount: 1.5 }))).details).toEqual({ field: "amount" });
    expect((await errorOf(topUpCustomer(db, { accountId: caller.accountId, customerId: "has space", amount: 1 }))).details).toEqual({ field: "customer_id" });
    expect((await errorOf(topUpCustomer(db, { accountId: "acc_missing", customerId: customer(), amount: 1 }))).message).toBe("Account not found");
    expect((await errorOf(adjustCustomer(db, { accountId: caller.accountId, customerId: customer(), amount: 5 }))).code).toBe("not_found");
    expect((await errorOf(setCreditLine(db, caller.accountId, customer(), -1))).details).toEqual({ field: "limit" });
    expect(await db("customers").where("account_id", caller.accountId)).toEqual([]);
  });

  it("writes billing.transaction.created for a top-up, to the given key or else the account's callback key", async () => {
    const caller = await newCaller({ callbackUrl: "https://hooks.example.com/cb" });
    const customerId = customer();
    const after = await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("12.5"), requestId: "req-t" });
    expect(after.balanceAfter).toBe(12_500);
    const [txn] = await allTransactions(caller, { customerId });
    const event = await db("outbox").where({ aggregate_id: txn!.id }).first();
    expect(event).toMatchObject({ topic: "billing.transaction.created", account_id: caller.accountId, key_id: caller.keyId, request_id: "req-t" });
    expect(JSON.parse(event.payload)).toMatchObject({
      transaction_id: txn!.id,
      customer_id: customerId,
      order_id: null,
      type: "topup",
      amount: "12.50",
      balance_after: "12.50",
    });
  });
});

describe("transactions", () => {
  it("lists top-up, deduction, refund and adjustment newest first, each with balance_after", async () => {
    const caller = await newCaller();
    const { customerId, order } = await busyCustomer(caller);
    const txns = await allTransactions(caller, { customerId });
    expect(txns.map((t) => [t.type, t.amount, t.balanceAfter])).toEqual([
      ["adjustment", -500, 99_500],
      ["refund", 99_000, 100_000],
      ["deduction", -99_000, 1_000],
      ["topup", 100_000, 100_000],
    ]);
    for (const t of txns) expect(t.id).toMatch(/^txn_\d+$/);
    expect(txns.filter((t) => t.orderId === order.id)).toHaveLength(2);
  });

  it("filters by customer, order and type, and shows only the caller's account's customer wallets", async () => {
    const caller = await newCaller();
    const a = await busyCustomer(caller);
    const b = await busyCustomer(caller);
    // Another account's and the account's own wallet (no customer) never appear.
    const stranger = await newCaller();
    await busyCustomer(stranger);
    const withBalance = await createKey(db, { name: "own wallet", accountId: caller.accountId, balance: parseYuan("5") });
    expect(withBalance.account_id).toBe(caller.accountId);

    const all = await allTransactions(caller);
    expect(all).toHaveLength(8);
    expect(new Set(all.map((t) => t.customerId))).toEqual(new Set([a.customerId, b.customerId]));
    expect((await allTransactions(caller, { customerId: a.customerId })).every((t) => t.customerId === a.customerId)).toBe(true);
    expect((await allTransactions(caller, { orderId: b.order.id })).map((t) => t.type)).toEqual(["refund", "deduction"]);
    for (const type of ["topup", "deduction", "refund", "adjustment"] as const) {
      const typed = await allTransactions(caller, { type });
      expect(typed).toHaveLength(2);
      expect(typed.every((t) => t.type === type)).toBe(true);
    }
    expect(await allTransactions(stranger, { orderId: a.order.id })).toEqual([]);
    const ids = all.map((t) => Number(t.id.slice(4)));
    expect(ids).toEqual([...ids].sort((x, y) => y - x));
  });

  it("filters by an ISO 8601 time range: dates cover whole UTC days, date-times are inclusive", async () => {
    const caller = await newCaller();
    await busyCustomer(caller);
    const all = await allTransactions(caller);
    const today = new Date().toISOString().slice(0, 10);
    const day = 86_400_000;
    const tomorrow = new Date(Date.now() + day).toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - day).toISOString().slice(0, 10);
    expect(await allTransactions(caller, { start: today, end: today })).toHaveLength(all.length);
    expect(await allTransactions(caller, { start: tomorrow })).toEqual([]);
    expect(await allTransactions(caller, { end: yesterday })).toEqual([]);
    const oldest = all.at(-1)!;
    const newest = all[0]!;
    expect((await allTransactions(caller, { start: oldest.createdAt, end: oldest.createdAt })).map((t) => t.id)).toContain(oldest.id);
    const before = new Date(Date.parse(oldest.createdAt) - 1).toISOString();
    expect((await allTransactions(caller, { end: before })).map((t) => t.id)).not.toContain(oldest.id);
    expect((await allTransactions(caller, { start: newest.createdAt })).map((t) => t.id)).toContain(newest.id);
    // An offset names the same instant.
    const instant = Date.parse(newest.createdAt);
    const plus8 = new Date(instant + 8 * 3600_000).toISOString().replace("Z", "+08:00");
    expect((await allTransactions(caller, { start: plus8 })).map((t) => t.id)).toContain(newest.id);
  });

  it.each([
    [{ start: "yesterday" }, "start"],
    [{ start: "2024-13-01" }, "start"],
    [{ end: "2024-02-30" }, "end"],
    [{ end: "2024-05-01T25:00:00Z" }, "end"],
    [{ start: "2024-05-01T10:00:00+15:00" }, "start"],
    [{ start: "2024-05-02", end: "2024-05-01" }, "start"],
    [{ start: "2024-05-01T10:00:00.001Z", end: "2024-05-01T10:00:00Z" }, "start"],
    [{ type: "debit" }, "type"],
  ])("rejects %j with 400 invalid_request naming the field", async (filter, field) => {
    const caller = await newCaller();
    const error = await errorOf(listTransactions(db, caller, filter, { first: 10 }));
    expect(error).toMatchObject({ code: "invalid_request", status: 400, details: { field } });
  });

  it("accepts a one-day range and a bad cursor is 400", async () => {
    const caller = await newCaller();
    expect((await listTransactions(db, caller, { start: "2024-05-01", end: "2024-05-01" }, { first: 10 })).items).toEqual([]);
    expect((await errorOf(listTransactions(db, caller, {}, { first: 10, after: "nope" }))).details).toEqual({ field: "cursor" });
    expect(parseIsoTime("2024-02-29")).toEqual({ ms: Date.parse("2024-02-29T00:00:00Z"), dateOnly: true });
    expect(parseIsoTime("2024-05-01T08:00:00+08:00")!.ms).toBe(Date.parse("2024-05-01T00:00:00Z"));
    expect(parseIsoTime("2023-02-29")).toBeNull();
  });
});

describe("statements", () => {
  it("totals the month's transactions, lists them oldest first and moves its export from pending to ready", async () => {
    const caller = await newCaller();
    const { customerId } = await busyCustomer(caller);
    const id = currentStatementId();
    const statement = await getStatement(db, caller, id);
    expect(statement).toMatchObject({ id, period: id.slice(4), exportStatus: "pending", exportReady: false, csv: null });
    expect(statement.items.map((t) => t.type)).toEqual(["topup", "deduction", "refund", "adjustment"]);
    expect(statement.totalAmount).toBe(99_500);
    expect(statement.totalAmount).toBe((await getCustomerBalance(db, caller.accountId, customerId)).available);
    expect((await errorOf(getStatementCsv(db, caller, id))).code).toBe("conflict");

    // Not old enough yet, then ready.
    const requested = await db("statement_exports").where({ account_id: caller.accountId }).first();
    expect(requested.status).toBe("pending");
    await processStatementExports(db, { delayMs: EXPORT_DELAY_MS, now: Date.parse(requested.requested_at) + EXPORT_DELAY_MS - 1 });
    expect((await getStatement(db, caller, id)).exportStatus).toBe("pending");
    expect(await processStatementExports(db, { delayMs: EXPORT_DELAY_MS, now: Date.parse(requested.requested_at) + EXPORT_DELAY_MS })).toBeGreaterThanOrEqual(
      1,
    );
    const ready = await getStatement(db, caller, id);
    expect(ready).toMatchObject({ exportStatus: "ready", exportReady: true });
    const csv = await getStatementCsv(db, caller, id);
    expect(ready.csv).toBe(csv);
    const lines = csv.trim().split("\n");
    expect(lines[0]).toBe(STATEMENT_CSV_HEADER);
    expect(lines).toHaveLength(5);
    const [topup, deduction] = statement.items;
    expect(lines[1]).toBe(`${topup!.id},${customerId},,topup,100.00,100.00,${topup!.createdAt}`);
    expect(lines[2]).toBe(`${deduction!.id},${customerId},${deduction!.orderId},deduction,-99.00,1.00,${deduction!.createdAt}`);
    expect(lines[4]).toContain(",adjustment,-0.50,99.50,");

    // A new transaction in the open month makes the export stale: pending again, then regenerated.
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: 1 });
    const stale = await getStatement(db, caller, id);
    expect(stale).toMatchObject({ exportStatus: "pending", totalAmount: 99_501, csv: null });
    expect((await errorOf(getStatementCsv(db, caller, id))).status).toBe(409);
    await processStatementExports(db, { delayMs: 0 });
    expect((await getStatementCsv(db, caller, id)).trim().split("\n")).toHaveLength(6);
  });

  it("quotes CSV fields that hold commas or quotes", async () => {
    const caller = await newCaller();
    const customerId = 'acme,"west"';
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: 2000 });
    const id = currentStatementId();
    await getStatement(db, caller, id);
    await processStatementExports(db, { delayMs: 0 });
    const csv = await getStatementCsv(db, caller, id);
    expect(csv.trim().split("\n")[1]).toContain(`,"acme,""west""",,topup,2.00,2.00,`);
  });

  it("writes again, escaped, by migration 013 an export stored before formulas were neutralised", async () => {
    const caller = await newCaller();
    await topUpCustomer(db, { accountId: caller.accountId, customerId: "=1+2", amount: 2000 });
    const id = currentStatementId();
    await getStatement(db, caller, id);
    await processStatementExports(db, { delayMs: 0 });
    expect((await getStatementCsv(db, caller, id)).split("\n")[1]).toContain(`,"'=1+2",,topup,2.00,2.00,`);
    // As an older version stored it: the customer id raw.
    const where = { account_id: caller.accountId, period: id.slice(4) };
    const raw = (await db("statement_exports").where(where).first()).csv.replace(`"'=1+2"`, "=1+2");
    await db("statement_exports").where(where).update({ csv: raw });
    let undone: string[] = [];
    do [, undone] = await db.migrate.down({ migrationSource });
    while (undone.length > 0 && !undone.includes("013_statement_csv_escaping"));
    expect(undone).toEqual(["013_statement_csv_escaping"]);
    await migrate(db);
    expect(await db("statement_exports").where(where).first("status", "csv")).toEqual({ status: "pending", csv: null });
    expect((await errorOf(getStatementCsv(db, caller, id))).code).toBe("conflict");
    await processStatementExports(db, { delayMs: 0 });
    expect((await getStatementCsv(db, caller, id)).split("\n")[1]).toContain(`,"'=1+2",,topup,2.00,2.00,`);
  });

  it("answers 404 for a malformed id or a month that has not begun, and an empty statement for a quiet past month", async () => {
    const caller = await newCaller();
    const now = new Date();
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 7);
    for (const id of ["stm_2024-13", "stm_2024-1", "2024-05", "stm_2024-05-01", "stm_1969-12", `stm_${next}`, ""]) {
      expect(await errorOf(getStatement(db, caller, id))).toMatchObject({ code: "not_found", status: 404, message: "Statement not found" });
    }
    expect((await errorOf(getStatementCsv(db, caller, "stm_x"))).code).toBe("not_found");
    const quiet = await getStatement(db, caller, "stm_2020-01");
    expect(quiet).toMatchObject({ id: "stm_2020-01", period: "2020-01", totalAmount: 0, items: [], exportStatus: "pending" });
  });

  it("shows each account only its own customers' transactions", async () => {
    const owner = await newCaller();
    await busyCustomer(owner);
    const stranger = await newCaller();
    const id = currentStatementId();
    const theirs = await getStatement(db, stranger, id);
    expect(theirs.items).toEqual([]);
    expect(theirs.totalAmount).toBe(0);
    expect((await getStatement(db, owner, id)).items).toHaveLength(4);
  });
});
