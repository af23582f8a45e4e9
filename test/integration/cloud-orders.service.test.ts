/**
 * The cloud order service against a real SQLite database (docs/api/cloud.md §2-6; issue 3
 * "Orders", "Idempotency"; docs/architecture.md §3 money, §4 errors, §6 events, §8 names). Provisioning is
 * driven by calling provisionDue() with a controlled clock, never by sleeping.
 */
import { appErrorOf as errorOf } from "../support/errors.ts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Db } from "../../src/db/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { authenticate, createKey, type Caller } from "../../src/auth/keys.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";
import { getProduct, getProductsByIds, getVendorsByIds, listProducts, listVendors, upsertProduct, upsertVendor } from "../../src/cloud/catalog.ts";
import { DEMO_CATALOG, seedDemoCatalog } from "../../src/cloud/demo-seed.ts";
import { adjustCustomer, getCustomerBalance, setCreditLine, topUpCustomer } from "../../src/cloud/customers.ts";
import { listTransactions } from "../../src/cloud/billing.ts";
import { createOrderService, type OrderService } from "../../src/cloud/orders/index.ts";
import type { CreateOrderInput, RenewOrderInput } from "../../src/cloud/order-request.ts";
import { SIMULATED_FAILURE_REASON } from "../../src/cloud/provisioning.ts";
import { addMonthsUtc } from "../../src/cloud/resources.ts";
import { normalizeHostname } from "../../src/cloud/validation.ts";

const PROVISION_DELAY_MS = 2000;
const P = DEMO_CATALOG.products;

let db: Db;
let testDb: TestDb;
let clock: number;
let svc: OrderService;
let seq = 0;

/** A fresh account with one key, as the caller of the service. */
async function newCaller(): Promise<Caller> {
  const key = await createKey(db, { name: `test ${++seq}` });
  return authenticate(db, `Bearer ${key.key}`);
}

/** A unique customer id. */
const customer = () => `cust-${++seq}`;

/** A valid input for the compute product (no required metadata), 99 yuan a month. */
function computeBody(customerId: string, extra: Record<string, unknown> = {}) {
  return {
    clientOrderNo: `CO-${++seq}`,
    productId: P.compute,
    quantity: 1,
    billingCycle: "monthly",
    customer: { customerId, contact: "ops@example.com" },
    metadata: { region: "cn-east-1" },
    ...extra,
  };
}

/** A valid input for the CDN product (requires metadata.domain), 30 yuan a month. */
function cdnBody(customerId: string, extra: Record<string, unknown> = {}) {
  return {
    clientOrderNo: `CDN-${++seq}`,
    productId: P.cdn,
    quantity: 1,
    billingCycle: "monthly",
    customer: { customerId, contact: "ops@example.com" },
    metadata: { domain: "static.example.com" },
    ...extra,
  };
}

/** Settles whatever earlier scenarios left provisioning, so counts below are this scenario's own. */
async function settleLeftovers(): Promise<void> {
  clock += PROVISION_DELAY_MS;
  await svc.provisionDue();
}

/** The AppError a promise rejects with. */

/** Outbox topics written about one aggregate, in order. */
async function topicsOf(aggregateId: string): Promise<string[]> {
  const rows = await db("outbox").where("aggregate_id", aggregateId).orderBy("id");
  return rows.map((r: any) => r.topic);
}

async function stockOf(productId: string): Promise<number | null> {
  return (await getProduct(db, productId))!.stock;
}

/** Some authenticated caller, re-targeted at another account by the books check (reads only). */
let template: Caller | null = null;
async function anyCaller(): Promise<Caller> {
  template ??= await newCaller();
  return template;
}

/**
 * The money invariants after every scenario: the ledger verifies, each customer's balance equals
 * the sum of its transactions (read through the billing API) and the last balance_after, and each
 * order's entries match its payment status.
 */
async function expectBooksBalanced(): Promise<void> {
  expect(await verifyLedger(db)).toEqual([]);
  const customers = await db("customers").select("account_id", "customer_id", "balance");
  for (const c of customers) {
    const caller: Caller = { ...(await anyCaller()), accountId: c.account_id };
    let after: string | null = null;
    let sum = 0;
    const seen: number[] = [];
    do {
      const page = await listTransactions(db, caller, { customerId: c.customer_id }, { first: 100, after });
      for (const t of page.items) {
        sum += t.amount;
        seen.push(t.balanceAfter);
      }
      after = page.hasNextPage ? page.cursors.at(-1)! : null;
    } while (after);
    const balance = await getCustomerBalance(db, c.account_id, c.customer_id);
    expect(balance.available).toBe(Number(c.balance));
    expect(sum).toBe(balance.available);
    if (seen.length) expect(seen[0]).toBe(balance.available); // newest first
  }
  const orders = await db("orders").select("*");
  for (const o of orders) {
    const entries = await db("ledger_entries").where("order_id", o.id);
    const pay = entries.filter((e: any) => e.ref === `order:${o.id}:pay`);
    const refunds = entries.filter((e: any) => e.kind === "refund");
    expect(pay.length).toBe(o.payment_status === "unpaid" ? 0 : 1);
    if (pay.length) expect(Number(pay[0].amount)).toBe(-Number(o.amount));
    expect(refunds.length).toBe(o.payment_status === "refunded" ? 1 : 0);
    if (refunds.length) expect(Number(refunds[0].amount)).toBe(Number(o.amount));
  }
}

beforeAll(async () => {
  testDb = await openTestDb("switchyard-orders-");
  db = testDb.db;
  await migrate(db);
  await seedDemoCatalog(db);
  clock = Date.parse("2025-01-31T12:00:00.000Z");
  svc = createOrderService({ db, provisionDelayMs: PROVISION_DELAY_MS, now: () => clock });
});

afterAll(async () => {
  await testDb?.close();
});

afterEach(async () => {
  await expectBooksBalanced();
});

describe("the demo catalog", () => {
  it("holds two vendors, a CDN product requiring metadata.domain, a compute product, a sold-out and an offline product", async () => {
    await seedDemoCatalog(db); // idempotent
    const vendors = await listVendors(db, { first: 100 });
    expect(vendors.items.map((v) => v.id).sort()).toEqual([DEMO_CATALOG.vendors.nimbus, DEMO_CATALOG.vendors.stratus].sort());
    const cdn = await listProducts(db, { category: "cdn", status: "available" }, { first: 100 });
    expect(cdn.items.map((p) => p.id)).toContain(P.cdn);
    const product = (await getProduct(db, P.cdn))!;
    expect(product.requiredFields).toEqual(["domain"]);
    expect(product.billingCycles.map((c) => c.cycle)).toEqual(["monthly", "quarterly", "yearly"]);
    expect((await getProduct(db, P.soldOut))!).toMatchObject({ status: "sold_out", stock: 0 });
    expect((await getProduct(db, P.offline))!.status).toBe("offline");
    expect((await getProduct(db, P.compute))!.category).toBe("compute");
    const byVendor = await listProducts(db, { vendorId: DEMO_CATALOG.vendors.stratus }, { first: 100 });
    expect(byVendor.items.every((p) => p.vendorId === DEMO_CATALOG.vendors.stratus)).toBe(true);
    expect(await getProductsByIds(db, [P.offline, "nope", P.cdn])).toMatchObject([{ id: P.offline }, null, { id: P.cdn }]);
    expect(await getVendorsByIds(db, ["nope", DEMO_CATALOG.vendors.nimbus])).toMatchObject([null, { id: DEMO_CATALOG.vendors.nimbus }]);
    expect((await errorOf(listProducts(db, { status: "gone" }, { first: 10 }))).details).toEqual({ field: "status" });
  });

  it("pages products with opaque cursors without skipping or repeating", async () => {
    const first = await listProducts(db, {}, { first: 2 });
    expect(first.items).toHaveLength(2);
    expect(first.hasNextPage).toBe(true);
    const second = await listProducts(db, {}, { first: 100, after: first.cursors.at(-1) });
    const ids = [...first.items, ...second.items].map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(first.totalCount);
  });

  it("lets an admin upsert vendors and products and rejects bad product fields with the field named", async () => {
    const vendor = await upsertVendor(db, { id: "vnd_test", name: "Test Vendor" });
    expect(vendor).toMatchObject({ id: "vnd_test", status: "active" });
    const product = await upsertProduct(db, {
      id: "prd_test",
      vendorId: "vnd_test",
      category: "storage",
      name: "Object storage",
      billingCycles: [{ cycle: "monthly", months: 1, price: 1500 }],
      stock: 3,
      requiredFields: ["bucket"],
    });
    expect(product).toMatchObject({ id: "prd_test", status: "available", stock: 3, requiredFields: ["bucket"] });
    const updated = await upsertProduct(db, { ...product, name: "Object storage v2", stock: null });
    expect(updated).toMatchObject({ name: "Object storage v2", stock: null, createdAt: product.createdAt });
    const bad = async (input: any) => (await errorOf(upsertProduct(db, { ...product, ...input }))).details?.field;
    expect(await bad({ vendorId: "vnd_missing" })).toBe("vendorId");
    expect(await bad({ category: "Bad Category" })).toBe("category");
    expect(await bad({ billingCycles: [] })).toBe("billingCycles");
    expect(await bad({ billingCycles: [{ cycle: "monthly", months: 1, price: 0 }] })).toBe("billingCycles[0].price");
    expect(await bad({ billingCycles: [{ cycle: "monthly", months: 0, price: 1 }] })).toBe("billingCycles[0].months");
    expect(
      await bad({
        billingCycles: [
          { cycle: "monthly", months: 1, price: 1 },
          { cycle: "monthly", months: 1, price: 1 },
        ],
      }),
    ).toBe("billingCycles[1].cycle");
    expect(await bad({ stock: -1 })).toBe("stock");
    expect(await bad({ status: "gone" })).toBe("status");
    expect(await bad({ requiredFields: ["a b"] })).toBe("requiredFields[0]");
    expect((await errorOf(upsertVendor(db, { name: "" }))).details).toEqual({ field: "name" });
  });
});

describe("the order state machine", () => {
  it("stores an order the wallet cannot cover as unpaid and takes nothing", async () => {
    const caller = await newCaller();
    const customerId = customer();
    const stock = await stockOf(P.compute);
    const { order, replayed } = await svc.create(caller, computeBody(customerId), {});
    expect(replayed).toBe(false);
    expect(order).toMatchObject({
      status: "unpaid",
      paymentStatus: "unpaid",
      provisioningStatus: "pending",
      resourceId: null,
      amount: 99_000,
      customerId,
      contact: "ops@example.com",
    });
    expect(await db("ledger_entries").where({ account_id: caller.accountId, customer_id: customerId })).toEqual([]);
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toEqual({ customerId, available: 0, frozen: 0, creditLine: 0 });
    expect(await stockOf(P.compute)).toBe(stock);
    expect(await topicsOf(order.id)).toEqual(["order.created"]);
    // Nothing to provision: the order is not paid.
    clock += PROVISION_DELAY_MS * 10;
    expect(await svc.provisionDue()).toBe(0);
    expect((await svc.get(caller, order.id)).status).toBe("unpaid");
  });

  it("pays, provisions and activates an order: resource, expiry one cycle later, events in order", async () => {
    const caller = await newCaller();
    const customerId = customer();
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("200") });
    await settleLeftovers();
    const stock = (await stockOf(P.compute))!;
    clock = Date.parse("2025-01-31T12:00:00.000Z");
    const { order } = await svc.create(caller, computeBody(customerId, { quantity: 2 }), { requestId: "req-1" });
    expect(order).toMatchObject({ status: "provisioning", paymentStatus: "paid", provisioningStatus: "provisioning", amount: 198_000 });
    expect(await stockOf(P.compute)).toBe(stock - 2);
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toMatchObject({ available: 2000, frozen: 198_000 });

    const events = await db("outbox").where("account_id", caller.accountId).orderBy("id");
    const orderEvents = events.filter((e: any) => e.aggregate_id === order.id);
    expect(orderEvents.map((e: any) => e.topic)).toEqual(["order.created", "order.paid"]);
    for (const e of orderEvents) expect(e).toMatchObject({ key_id: caller.keyId, request_id: "req-1" });
    expect(JSON.parse(orderEvents[1].payload)).toMatchObject({
      order_id: order.id,
      client_order_no: order.clientOrderNo,
      status: "provisioning",
      payment_status: "paid",
      amount: "198.00",
    });
    const txnEvent = events.find((e: any) => e.topic === "billing.transaction.created" && JSON.parse(e.payload).order_id === order.id);
    expect(JSON.parse(txnEvent.payload)).toMatchObject({ customer_id: customerId, type: "deduction", amount: "-198.00", balance_after: "2.00" });
    expect(txnEvent.aggregate_id).toBe(JSON.parse(txnEvent.payload).transaction_id);

    // Not yet due.
    clock += PROVISION_DELAY_MS - 1;
    expect(await svc.provisionDue()).toBe(0);
    clock += 1;
    expect(await svc.provisionDue()).toBe(1);
    expect(await svc.provisionDue()).toBe(0);

    const active = await svc.get(caller, order.id);
    expect(active).toMatchObject({ status: "active", paymentStatus: "paid", provisioningStatus: "active", failureReason: null });
    expect(active.resourceId).toMatch(/^res_/);
    const resource = await svc.getResource(caller, active.resourceId!);
    // One monthly cycle from 2025-01-31T12:00:02Z, clamped to the end of February.
    expect(resource).toMatchObject({ orderId: order.id, productId: P.compute, customerId, status: "active", expiresAt: "2025-02-28T12:00:02.000Z" });
    expect(await topicsOf(order.id)).toEqual(["order.created", "order.paid", "order.provisioned"]);
    const provisioned = await db("outbox").where({ aggregate_id: order.id, topic: "order.provisioned" }).first();
    expect(JSON.parse(provisioned.payload)).toMatchObject({
      order_id: order.id,
      client_order_no: order.clientOrderNo,
      resource_id: active.resourceId,
      status: "active",
    });
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toMatchObject({ available: 2000, frozen: 0 });
    expect(await stockOf(P.compute)).toBe(stock - 2);
  });

  it('fails an order whose metadata.simulate is "fail", refunds it in full and restores the stock', async () => {
    const caller = await newCaller();
    const customerId = customer();
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("300") });
    await settleLeftovers();
    const stock = (await stockOf(P.compute))!;
    const { order } = await svc.create(caller, computeBody(customerId, { quantity: 3, metadata: { simulate: "fail" } }), {});
    expect(order.status).toBe("provisioning");
    expect(await stockOf(P.compute)).toBe(stock - 3);
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toMatchObject({ available: 3000, frozen: 297_000 });

    clock += PROVISION_DELAY_MS;
    expect(await svc.provisionDue()).toBe(1);
    const failed = await svc.get(caller, order.id);
    expect(failed).toMatchObject({
      status: "failed",
      paymentStatus: "refunded",
      provisioningStatus: "failed",
      failureReason: SIMULATED_FAILURE_REASON,
      resourceId: null,
    });
    expect(await stockOf(P.compute)).toBe(stock);
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toMatchObject({ available: 300_000, frozen: 0 });
    expect(await topicsOf(order.id)).toEqual(["order.created", "order.paid", "order.failed"]);
    const refund = await listTransactions(db, caller, { orderId: order.id, type: "refund" }, { first: 10 });
    expect(refund.items).toHaveLength(1);
    expect(refund.items[0]).toMatchObject({ amount: 297_000, balanceAfter: 300_000, customerId });
    const refundEvent = await db("outbox").where({ aggregate_id: refund.items[0]!.id }).first();
    expect(JSON.parse(refundEvent.payload)).toMatchObject({ type: "refund", amount: "297.00", order_id: order.id });
    // Settled once: a second pass changes nothing.
    clock += PROVISION_DELAY_MS;
    expect(await svc.provisionDue()).toBe(0);
  });

  it("settles each due order once when two workers run at the same time", async () => {
    const caller = await newCaller();
    const customerId = customer();
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("1000") });
    await settleLeftovers();
    const orders = [];
    for (let i = 0; i < 4; i++) orders.push((await svc.create(caller, computeBody(customerId, i % 2 ? { metadata: { simulate: "fail" } } : {}))).order);
    clock += PROVISION_DELAY_MS;
    const [a, b] = await Promise.all([svc.provisionDue(), svc.provisionDue()]);
    expect(a + b).toBe(4);
    expect(
      await db("resources").whereIn(
        "order_id",
        orders.map((o) => o.id),
      ),
    ).toHaveLength(2);
    for (const o of orders) expect((await db("ledger_entries").where({ order_id: o.id, kind: "refund" })).length).toBe(orders.indexOf(o) % 2);
  });

  it("lets a customer with a credit line go negative down to minus the line and no further", async () => {
    const caller = await newCaller();
    const customerId = customer();
    await setCreditLine(db, caller.accountId, customerId, parseYuan("50"));
    const first = await svc.create(caller, cdnBody(customerId), {});
    expect(first.order.status).toBe("provisioning");
    expect(await getCustomerBalance(db, caller.accountId, customerId)).toMatchObject({ available: -30_000, creditLine: 50_000, frozen: 30_000 });
    // -30 - 30 = -60 < -50: stays unpaid, nothing taken.
    const second = await svc.create(caller, cdnBody(customerId, { metadata: { domain: "img.example.com" } }), {});
    expect(second.order.status).toBe("unpaid");
    expect((await getCustomerBalance(db, caller.accountId, customerId)).available).toBe(-30_000);
    // A negative adjustment may use the rest of the line exactly, not a milli-yuan more.
    expect(await adjustCustomer(db, { accountId: caller.accountId, customerId, amount: -20_000, reason: "late fee" })).toBe(-50_000);
    expect((await errorOf(adjustCustomer(db, { accountId: caller.accountId, customerId, amount: -1 }))).code).toBe("insufficient_balance");
    // The line cannot be lowered below what the customer owes.
    expect((await errorOf(setCreditLine(db, caller.accountId, customerId, parseYuan("49.999")))).code).toBe("conflict");
    expect(await adjustCustomer(db, { accountId: caller.accountId, customerId, amount: 5_000 })).toBe(-45_000);
    const adjustments = await listTransactions(db, caller, { customerId, type: "adjustment" }, { first: 10 });
    expect(adjustments.items.map((t) => t.amount)).toEqual([5_000, -20_000]);
  });

  it("pays an unpaid order on request once the wallet covers it, and refuses to pay it twice", async () => {
    const caller = await newCaller();
    const customerId = customer();
    const { order } = await svc.create(caller, cdnBody(customerId), {});
    expect(order.status).toBe("unpaid");
    // Still short: 402 and nothing written.
    expect((await errorOf(svc.pay(caller, order.id))).code).toBe("insufficient_balance");
    expect(await topicsOf(order.id)).toEqual(["order.created"]);
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("30") });
    const paid = await svc.pay(caller, order.id);
    expect(paid).toMatchObject({ status: "provisioning", paymentStatus: "paid" });
    expect((await getCustomerBalance(db, caller.accountId, customerId)).available).toBe(0);
    const again = await errorOf(svc.pay(caller, order.id));
    expect(again.code).toBe("conflict");
    expect(again.status).toBe(409);
    expect(await topicsOf(order.id)).toEqual(["order.created", "order.paid"]);
  });

  it("computes calendar-month expiry in UTC", () => {
    expect(new Date(addMonthsUtc(Date.parse("2024-01-31T08:00:00Z"), 1)).toISOString()).toBe("2024-02-29T08:00:00.000Z");
    expect(new Date(addMonthsUtc(Date.parse("2024-11-30T00:00:00Z"), 3)).toISOString()).toBe("2025-02-28T00:00:00.000Z");
    expect(new Date(addMonthsUtc(Date.parse("2024-05-15T10:30:00Z"), 12)).toISOString()).toBe("2025-05-15T10:30:00.000Z");
  });
});

describe("order validation", () => {
  const cases: [string, (b: any) => void, string][] = [
    ["client_order_no missing", (b) => delete b.clientOrderNo, "client_order_no"],
    ["client_order_no not a string", (b) => (b.clientOrderNo = 42), "client_order_no"],
    ["client_order_no too long", (b) => (b.clientOrderNo = "x".repeat(65)), "client_order_no"],
    ["client_order_no with spaces", (b) => (b.clientOrderNo = "a b"), "client_order_no"],
    ["product_id missing", (b) => delete b.productId, "product_id"],
    ["product_id not a string", (b) => (b.productId = 7), "product_id"],
    ["product_id unknown", (b) => (b.productId = "prd_nope"), "product_id"],
    ["product sold out", (b) => (b.productId = P.soldOut), "product_id"],
    ["product offline", (b) => (b.productId = P.offline), "product_id"],
    ["quantity missing", (b) => delete b.quantity, "quantity"],
    ["quantity zero", (b) => (b.quantity = 0), "quantity"],
    ["quantity above 1000", (b) => (b.quantity = 1001), "quantity"],
    ["quantity fractional", (b) => (b.quantity = 1.5), "quantity"],
    ["quantity a string", (b) => (b.quantity = "1"), "quantity"],
    ["billing_cycle missing", (b) => delete b.billingCycle, "billing_cycle"],
    ["billing_cycle not offered", (b) => (b.billingCycle = "weekly"), "billing_cycle"],
    ["billing_cycle not a string", (b) => (b.billingCycle = 1), "billing_cycle"],
    ["customer missing", (b) => delete b.customer, "customer"],
    ["customer not an object", (b) => (b.customer = ["c"]), "customer"],
    ["customer.customer_id missing", (b) => delete b.customer.customerId, "customer.customer_id"],
    ["customer.customer_id not a string", (b) => (b.customer.customerId = 5), "customer.customer_id"],
    ["customer.customer_id too long", (b) => (b.customer.customerId = "c".repeat(65)), "customer.customer_id"],
    ["customer.contact not a string", (b) => (b.customer.contact = 5), "customer.contact"],
    ["metadata an array", (b) => (b.metadata = ["x"]), "metadata"],
    ["metadata too large", (b) => (b.metadata = { domain: "a.example.com", blob: "x".repeat(9000) }), "metadata"],
    ["metadata.domain missing", (b) => (b.metadata = {}), "metadata.domain"],
    ["metadata absent on a product requiring domain", (b) => delete b.metadata, "metadata.domain"],
    ["metadata.domain empty", (b) => (b.metadata.domain = "  "), "metadata.domain"],
    ["metadata.domain not a string", (b) => (b.metadata.domain = 12), "metadata.domain"],
    ["metadata.domain not a host name", (b) => (b.metadata.domain = "not a host"), "metadata.domain"],
    ["metadata.domain a URL", (b) => (b.metadata.domain = "https://www.example.com"), "metadata.domain"],
    ["metadata.domain a wildcard", (b) => (b.metadata.domain = "*.example.com"), "metadata.domain"],
    ["metadata.domain a single label", (b) => (b.metadata.domain = "localhost"), "metadata.domain"],
    ["metadata.domain an IP address", (b) => (b.metadata.domain = "10.0.0.1"), "metadata.domain"],
  ];

  it.each(cases)("rejects %s with 422 validation_failed naming the field, and writes nothing", async (_name, mutate, field) => {
    const caller = await newCaller();
    const key = `k-${++seq}`;
    const body: any = cdnBody(customer());
    mutate(body);
    const error = await errorOf(svc.create(caller, body, { idempotencyKey: key }));
    expect(error.code).toBe("validation_failed");
    expect(error.status).toBe(422);
    expect(error.details).toMatchObject({ field });
    expect(error.message.length).toBeGreaterThan(5);
    expect(await db("orders").where("account_id", caller.accountId)).toEqual([]);
    expect(await db("outbox").where("account_id", caller.accountId)).toEqual([]);
    // The key was released: a corrected retry with it succeeds.
    const fixed = await svc.create(caller, cdnBody(customer()), { idempotencyKey: key });
    expect(fixed.replayed).toBe(false);
  });

  it.each([null, [], "order", 42])("rejects a body that is not a JSON object (%j) with 400 invalid_request", async (body) => {
    const caller = await newCaller();
    // Typed for callers, checked at run time: a JSON body may be anything.
    const error = await errorOf(svc.create(caller, body as unknown as CreateOrderInput, {}));
    expect(error.code).toBe("invalid_request");
    expect(error.status).toBe(400);
  });

  it("accepts a mixed-case host name and stores it in lower case; validates host names", async () => {
    const caller = await newCaller();
    const { order } = await svc.create(caller, cdnBody(customer(), { metadata: { domain: "CDN.Example.COM", note: 1 } }), {});
    expect(order.metadata).toEqual({ domain: "cdn.example.com", note: 1 });
    expect(normalizeHostname("a-b.example.co.uk")).toBe("a-b.example.co.uk");
    expect(normalizeHostname("xn--fiqs8s.cn")).toBe("xn--fiqs8s.cn");
    expect(normalizeHostname("-bad.example.com")).toBeNull();
    expect(normalizeHostname(`${"a".repeat(64)}.com`)).toBeNull();
  });

  it("takes metadata.domain by the CDN domain rule: a trailing root dot is dropped, a top label that is not alphabetic is 422", async () => {
    const caller = await newCaller();
    const { order } = await svc.create(caller, cdnBody(customer(), { metadata: { domain: " www.Example.com. " } }), {});
    expect(order.metadata).toEqual({ domain: "www.example.com" });
    for (const domain of ["example.c0m", "example.c", "example.a-b"]) {
      const error = await errorOf(svc.create(caller, cdnBody(customer(), { metadata: { domain } }), {}));
      expect(error.code).toBe("validation_failed");
      expect(error.details).toEqual({ field: "metadata.domain" });
    }
  });

  it("refuses more than the stock left with 409 conflict and takes nothing", async () => {
    const caller = await newCaller();
    const customerId = customer();
    await upsertProduct(db, {
      id: "prd_scarce",
      vendorId: DEMO_CATALOG.vendors.stratus,
      category: "compute",
      name: "Scarce",
      billingCycles: [{ cycle: "monthly", months: 1, price: 1000 }],
      stock: 2,
    });
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: 10_000 });
    const error = await errorOf(svc.create(caller, computeBody(customerId, { productId: "prd_scarce", quantity: 3 })));
    expect(error).toMatchObject({ code: "conflict", status: 409, details: { field: "quantity" } });
    expect(error.message).toBe("insufficient stock");
    const ok = await svc.create(caller, computeBody(customerId, { productId: "prd_scarce", quantity: 2 }));
    expect(ok.order.status).toBe("provisioning");
    expect(await stockOf("prd_scarce")).toBe(0);
    expect((await errorOf(svc.create(caller, computeBody(customerId, { productId: "prd_scarce", quantity: 1 })))).code).toBe("conflict");
    expect((await getCustomerBalance(db, caller.accountId, customerId)).available).toBe(8000);
  });

  it("refuses a duplicate client_order_no in the same account with 409, and allows it in another account", async () => {
    const caller = await newCaller();
    const body = computeBody(customer());
    await svc.create(caller, body);
    const error = await errorOf(svc.create(caller, { ...body, quantity: 2 }));
    expect(error).toMatchObject({ code: "conflict", status: 409, details: { field: "client_order_no" } });
    // Same body without an idempotency key is a duplicate too.
    expect((await errorOf(svc.create(caller, body))).code).toBe("conflict");
    expect(await db("orders").where({ account_id: caller.accountId })).toHaveLength(1);
    const other = await newCaller();
    expect((await svc.create(other, body)).order.clientOrderNo).toBe(body.clientOrderNo);
  });
});

describe("idempotency", () => {
  it("replays the first snapshot with replayed true, even after the order moved on", async () => {
    const caller = await newCaller();
    const customerId = customer();
    const body = cdnBody(customerId);
    const first = await svc.create(caller, body, { idempotencyKey: "idem-1" });
    expect(first.order.status).toBe("unpaid");
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("30") });
    await svc.pay(caller, first.order.id);
    const replay = await svc.create(caller, JSON.parse(JSON.stringify(body)), { idempotencyKey: "idem-1" });
    expect(replay.replayed).toBe(true);
    expect(replay.order).toEqual(first.order);
    expect(await db("orders").where("account_id", caller.accountId)).toHaveLength(1);
    expect(await topicsOf(first.order.id)).toEqual(["order.created", "order.paid"]);
  });

  it("answers 409 conflict for the same key with another body", async () => {
    const caller = await newCaller();
    const body = computeBody(customer());
    await svc.create(caller, body, { idempotencyKey: "idem-2" });
    const error = await errorOf(svc.create(caller, { ...body, quantity: 2 }, { idempotencyKey: "idem-2" }));
    expect(error).toMatchObject({ code: "conflict", status: 409 });
    expect(await db("orders").where("account_id", caller.accountId)).toHaveLength(1);
    // Keys are per account: another account may use the same key.
    const other = await newCaller();
    expect((await svc.create(other, body, { idempotencyKey: "idem-2" })).replayed).toBe(false);
  });

  it("creates exactly one order and one deduction from 20 concurrent requests with one key", async () => {
    const caller = await newCaller();
    const customerId = customer();
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("1000") });
    const body = computeBody(customerId);
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => svc.create(caller, body, { idempotencyKey: "idem-race" })));
    const fulfilled = results.filter((r): r is PromiseFulfilledResult<{ order: any; replayed: boolean }> => r.status === "fulfilled");
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(fulfilled.filter((r) => !r.value.replayed)).toHaveLength(1);
    for (const r of rejected) expect(r.reason).toMatchObject({ code: "conflict", status: 409 });
    expect(new Set(fulfilled.map((r) => r.value.order.id)).size).toBe(1);
    expect(await db("orders").where("account_id", caller.accountId)).toHaveLength(1);
    const deductions = await listTransactions(db, caller, { customerId, type: "deduction" }, { first: 100 });
    expect(deductions.items).toHaveLength(1);
    expect(deductions.items[0]!.amount).toBe(-99_000);
    // Once settled, every retry replays.
    const late = await svc.create(caller, body, { idempotencyKey: "idem-race" });
    expect(late).toMatchObject({ replayed: true, order: { id: fulfilled[0]!.value.order.id } });
  });
});

describe("renewal", () => {
  async function activeOrder(caller: Caller, customerId: string, topUp = "1000", extra: Record<string, unknown> = {}) {
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan(topUp) });
    const { order } = await svc.create(caller, cdnBody(customerId, extra));
    clock += PROVISION_DELAY_MS;
    await svc.provisionDue();
    return svc.get(caller, order.id);
  }

  it("charges cycle price x quantity x periods and extends the expiry by calendar months", async () => {
    clock = Date.parse("2025-03-10T00:00:00.000Z");
    const caller = await newCaller();
    const customerId = customer();
    const order = await activeOrder(caller, customerId, "1000", { quantity: 2 });
    expect(order.status).toBe("active");
    const before = await svc.getResource(caller, order.resourceId!);
    expect(before.expiresAt).toBe("2025-04-10T00:00:02.000Z");

    const renewed = await svc.renew(caller, order.id, { periods: 2, billingCycle: "quarterly" }, { idempotencyKey: "renew-1", requestId: "req-r" });
    expect(renewed.replayed).toBe(false);
    // 85 yuan x 2 units x 2 quarters
    expect(renewed.renewal).toMatchObject({
      number: 1,
      periods: 2,
      billingCycle: "quarterly",
      amount: 340_000,
      previousExpiresAt: before.expiresAt,
      expiresAt: "2025-10-10T00:00:02.000Z",
    });
    expect(renewed.resource.expiresAt).toBe("2025-10-10T00:00:02.000Z");
    expect((await svc.getResource(caller, order.resourceId!)).expiresAt).toBe("2025-10-10T00:00:02.000Z");
    expect((await svc.get(caller, order.id)).status).toBe("active");
    expect((await getCustomerBalance(db, caller.accountId, customerId)).available).toBe(1_000_000 - 60_000 - 340_000);
    expect(await db("ledger_entries").where("ref", `order:${order.id}:renew:1`).first()).toBeTruthy();
    const paidEvents = await db("outbox").where({ aggregate_id: order.id, topic: "order.paid" }).orderBy("id");
    expect(paidEvents).toHaveLength(2);
    expect(JSON.parse(paidEvents[1].payload)).toMatchObject({
      order_id: order.id,
      status: "active",
      renewal: { periods: 2, billing_cycle: "quarterly", amount: "340.00", expires_at: "2025-10-10T00:00:02.000Z" },
    });
    expect(paidEvents[1].request_id).toBe("req-r");
    const txn = await db("outbox").where({ aggregate_id: renewed.renewal.transactionId, topic: "billing.transaction.created" }).first();
    expect(JSON.parse(txn.payload)).toMatchObject({ type: "deduction", amount: "-340.00", order_id: order.id });

    // Replay: the same snapshot, nothing charged again.
    const replay = await svc.renew(caller, order.id, { periods: 2, billingCycle: "quarterly" }, { idempotencyKey: "renew-1" });
    expect(replay).toEqual({ ...renewed, replayed: true });
    expect((await errorOf(svc.renew(caller, order.id, { periods: 3 }, { idempotencyKey: "renew-1" }))).code).toBe("conflict");

    // A second renewal with the defaults (1 period of the order's own cycle) is numbered 2.
    const second = await svc.renew(caller, order.id, undefined, {});
    expect(second.renewal).toMatchObject({ number: 2, periods: 1, billingCycle: "monthly", amount: 60_000, expiresAt: "2025-11-10T00:00:02.000Z" });
  });

  it("refuses a renewal the wallet cannot cover with 402 and changes nothing", async () => {
    const caller = await newCaller();
    const customerId = customer();
    const order = await activeOrder(caller, customerId, "30");
    const before = await svc.getResource(caller, order.resourceId!);
    const error = await errorOf(svc.renew(caller, order.id, { periods: 1 }, { idempotencyKey: "renew-poor" }));
    expect(error).toMatchObject({ code: "insufficient_balance", status: 402 });
    expect((await svc.getResource(caller, order.resourceId!)).expiresAt).toBe(before.expiresAt);
    expect(await topicsOf(order.id)).toEqual(["order.created", "order.paid", "order.provisioned"]);
  });

  it("refuses to renew an unpaid, provisioning or failed order with 409 conflict", async () => {
    const caller = await newCaller();
    const customerId = customer();
    const unpaid = (await svc.create(caller, cdnBody(customerId))).order;
    expect((await errorOf(svc.renew(caller, unpaid.id, {}))).code).toBe("conflict");
    await topUpCustomer(db, { accountId: caller.accountId, customerId, amount: parseYuan("100") });
    const provisioning = (await svc.create(caller, cdnBody(customerId, { metadata: { domain: "f.example.com", simulate: "fail" } }))).order;
    expect((await errorOf(svc.renew(caller, provisioning.id, {}))).status).toBe(409);
    clock += PROVISION_DELAY_MS;
    await svc.provisionDue();
    expect((await svc.get(caller, provisioning.id)).status).toBe("failed");
    const error = await errorOf(svc.renew(caller, provisioning.id, { periods: 1 }, { idempotencyKey: "renew-failed" }));
    expect(error).toMatchObject({ code: "conflict", status: 409 });
    // The failed request released its key.
    expect(await db("idempotency_keys").where({ account_id: caller.accountId, idempotency_key: "renew-failed" })).toEqual([]);
    expect(await db("ledger_entries").where("ref", "like", `order:${provisioning.id}:renew:%`)).toEqual([]);
  });

  it("validates the renew body: 400 for a non-object, 422 for periods and billing_cycle, 404 for an unknown order", async () => {
    const caller = await newCaller();
    const order = await activeOrder(caller, customer(), "100");
    expect((await errorOf(svc.renew(caller, order.id, "twice" as RenewOrderInput))).code).toBe("invalid_request");
    for (const periods of [0, 37, 1.5, "2"]) {
      expect((await errorOf(svc.renew(caller, order.id, { periods } as RenewOrderInput))).details).toEqual({ field: "periods" });
    }
    expect((await errorOf(svc.renew(caller, order.id, { billingCycle: "weekly" }))).details).toEqual({ field: "billing_cycle" });
    expect((await errorOf(svc.renew(caller, "ord_missing", {}))).code).toBe("not_found");
  });
});

describe("tenant isolation and reads", () => {
  it("hides another account's orders and resources as 404 and leaves them out of lists", async () => {
    const owner = await newCaller();
    const stranger = await newCaller();
    const customerId = customer();
    await topUpCustomer(db, { accountId: owner.accountId, customerId, amount: parseYuan("100") });
    const { order } = await svc.create(owner, cdnBody(customerId));
    clock += PROVISION_DELAY_MS;
    await svc.provisionDue();
    const active = await svc.get(owner, order.id);

    const notFound = await errorOf(svc.get(stranger, order.id));
    expect(notFound).toMatchObject({ code: "not_found", status: 404, message: "Order not found" });
    expect((await errorOf(svc.getResource(stranger, active.resourceId!))).message).toBe("Resource not found");
    expect((await errorOf(svc.renew(stranger, order.id, {}))).code).toBe("not_found");
    expect((await errorOf(svc.pay(stranger, order.id))).code).toBe("not_found");
    expect(await svc.getByIds(stranger, [order.id])).toEqual([null]);
    expect(await svc.getResourcesByIds(stranger, [active.resourceId!])).toEqual([null]);
    expect((await svc.list(stranger, { first: 100 })).items).toEqual([]);
    expect((await svc.listResources(stranger, { first: 100 })).items).toEqual([]);
    expect((await errorOf(getCustomerBalance(db, stranger.accountId, customerId))).message).toBe("Customer not found");

    expect(await svc.getByIds(owner, [active.resourceId!, order.id])).toEqual([null, active]);
    expect((await svc.getResourcesByIds(owner, [active.resourceId!]))[0]).toMatchObject({ orderId: order.id });
  });

  it("lists orders newest first and resources by customer, with cursors", async () => {
    const caller = await newCaller();
    const alice = customer();
    const bob = customer();
    await topUpCustomer(db, { accountId: caller.accountId, customerId: alice, amount: parseYuan("1000") });
    await topUpCustomer(db, { accountId: caller.accountId, customerId: bob, amount: parseYuan("1000") });
    await settleLeftovers();
    const ids: string[] = [];
    for (const c of [alice, bob, alice]) {
      clock += 1000;
      ids.push((await svc.create(caller, computeBody(c))).order.id);
    }
    const page1 = await svc.list(caller, { first: 2 });
    expect(page1.items.map((o) => o.id)).toEqual([ids[2], ids[1]]);
    expect(page1).toMatchObject({ hasNextPage: true, totalCount: 3 });
    const page2 = await svc.list(caller, { first: 2, after: page1.cursors[1] });
    expect(page2.items.map((o) => o.id)).toEqual([ids[0]]);
    expect(page2.hasNextPage).toBe(false);
    expect((await errorOf(svc.list(caller, { first: 2, after: "garbage" }))).code).toBe("invalid_request");

    clock += PROVISION_DELAY_MS;
    expect(await svc.provisionDue()).toBe(3);
    const aliceResources = await svc.listResources(caller, { first: 10 }, alice);
    expect(aliceResources.items).toHaveLength(2);
    expect(aliceResources.items.every((r) => r.customerId === alice)).toBe(true);
    expect((await svc.listResources(caller, { first: 10 })).totalCount).toBe(3);
  });
});
