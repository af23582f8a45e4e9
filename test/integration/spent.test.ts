/**
 * A key's `spent` (issue 20 finding 5; docs/api/generation.md §2.5): what its generation tasks took
 * from the account's own prepaid balance minus what was refunded. Cloud orders paid from a
 * customer's wallet are the cloud API's to report, per customer, even when the key made them.
 * Checked on every surface that shows it (REST usage, GraphQL `viewer.spent` and `usageByDay`, the
 * console's `adminApiKeys`; the /client page reads `viewer`), on SQLite and (TEST_DATABASE=postgres)
 * PostgreSQL, and `verify` holds the stored total to the rule.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { topUpKey } from "../../src/auth/keys.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";

const ADMIN_TOKEN = "spent-admin-token-0123456789abcdef";
const VIEWER = `{ viewer { balance { amount } spent { amount } usageByDay(days: 1) { spent { amount } billedSeconds } } }`;
const ADMIN_KEYS = `query($search: String) { adminApiKeys(search: $search) { nodes { id spent { amount } } } }`;

let t: TestStack;

beforeAll(async () => {
  t = await startTestStack({ ADMIN_TOKEN });
});
afterAll(() => t?.close());

/** `spent` as each surface shows it, in yuan strings (REST's number written with two decimals). */
async function spentEverywhere(key: { key: string; id: string }) {
  const usage = await t.rest("GET", "/api/v1/usage", { key: key.key });
  expect(usage.status).toBe(200);
  const viewer = await t.graphql(VIEWER, {}, key.key);
  expect(viewer.body.errors).toBeUndefined();
  const admin = await t.graphql(ADMIN_KEYS, { search: key.id }, undefined, { authorization: `Bearer ${ADMIN_TOKEN}` });
  expect(admin.body.errors).toBeUndefined();
  return {
    rest: { balance: usage.body.data.balance.toFixed(2), spent: usage.body.data.spent.toFixed(2) },
    viewer: { balance: viewer.body.data.viewer.balance.amount, spent: viewer.body.data.viewer.spent.amount },
    today: viewer.body.data.viewer.usageByDay[0].spent.amount,
    admin: admin.body.data.adminApiKeys.nodes.map((n: any) => n.spent.amount),
  };
}

/** Orders a monthly CDN plan (30.00) for a customer and waits until it has settled. */
async function order(key: string, customerId: string, n: number, metadata: Record<string, unknown> = {}) {
  const created = await t.rest("POST", "/openapi/v1/orders", {
    key,
    body: {
      client_order_no: `spent-${customerId}-${n}`,
      product_id: "prd_cdn_standard",
      quantity: 1,
      billing_cycle: "monthly",
      customer: { customer_id: customerId },
      metadata: { domain: `spent${n}.example.com`, ...metadata },
    },
  });
  expect(created.status).toBe(201);
  await t.waitForAccount(
    key,
    () => t.rest("GET", `/openapi/v1/orders/${created.body.data.order_id}`, { key }),
    (r) => r.body.data.status === "active" || r.body.data.status === "failed",
  );
}

describe("a key's spent", () => {
  it("is 0 on every surface for a key whose account has only cloud customer deductions, which the cloud API reports per customer", async () => {
    const key = await t.createKey("0");
    await topUpCustomer(t.stack.db!, { accountId: key.account_id, customerId: "cust-cloud", amount: parseYuan("100") });
    await order(key.key, "cust-cloud", 1);
    await order(key.key, "cust-cloud", 2);
    await order(key.key, "cust-cloud", 3, { simulate: "fail" }); // deducted, then refunded
    expect(await spentEverywhere(key)).toEqual({
      rest: { balance: "0.00", spent: "0.00" },
      viewer: { balance: "0.00", spent: "0.00" },
      today: "0.00",
      admin: ["0.00"],
    });
    const deductions = await t.rest("GET", "/openapi/v1/billing/transactions?customer_id=cust-cloud&type=deduction", { key: key.key });
    expect(deductions.body.data.items.map((i: any) => i.amount)).toEqual([-30, -30, -30]);
    expect((await t.rest("GET", "/openapi/v1/billing/balance?customer_id=cust-cloud", { key: key.key })).body.data.available).toBe(40);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });

  it("is the key's task debits minus their refunds when it also has tasks, whatever its orders", async () => {
    const key = await t.createKey("0");
    await topUpCustomer(t.stack.db!, { accountId: key.account_id, customerId: "cust-mixed", amount: parseYuan("100") });
    await order(key.key, "cust-mixed", 4);
    await topUpKey(t.stack.db!, key.id, parseYuan("20"));
    const submit = async (prompt: string) => {
      const r = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: { prompt, model_id: 52, seconds: 5 } });
      expect(r.status).toBe(200);
      return t.waitForTask(key.key, r.body.data.task_id);
    };
    expect((await submit("a heron")).status).toBe(1); // 5.00, kept
    expect((await submit("a storm #fail")).status).toBe(2); // 5.00, refunded
    await order(key.key, "cust-mixed", 5, { simulate: "fail" });
    expect(await spentEverywhere(key)).toEqual({
      rest: { balance: "15.00", spent: "5.00" },
      viewer: { balance: "15.00", spent: "5.00" },
      today: "5.00",
      admin: ["5.00"],
    });
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });

  it("is held to the ledger by verify: a stored total that counts the key's cloud orders is named", async () => {
    const key = await t.createKey("10");
    await topUpCustomer(t.stack.db!, { accountId: key.account_id, customerId: "cust-verify", amount: parseYuan("30") });
    await order(key.key, "cust-verify", 6);
    const r = await t.rest("POST", "/api/v1/images/generations", { key: key.key, body: { prompt: "a kite", model_id: 45, count: 1 } });
    await t.waitForTask(key.key, r.body.data.task_id);
    const db = t.stack.db!;
    expect(await verifyLedger(db)).toEqual([]);
    // What the key's total was before the rule: its image (0.30) and its order (30.00).
    await db("api_keys").where("id", key.id).update({ spent: 30_300 });
    expect(await verifyLedger(db)).toEqual([{ kind: "total_mismatch", subject: key.id, detail: "api_keys.spent: stored 30300 != sum of its rows 300" }]);
    await db("api_keys").where("id", key.id).update({ spent: 300 });
    expect(await verifyLedger(db)).toEqual([]);
  });
});
