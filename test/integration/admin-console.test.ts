/**
 * The admin reads and writes of the operator console through the router (issue 16 "Operator
 * console"; docs/api/cloud.md "Admin console", docs/api/generation.md "Admin"): keys, wallets,
 * orders, deliveries and the live overview, all behind ADMIN_TOKEN, every write answering its
 * ledger entry, every read bounded by an index.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { startCallbackReceiver, type CallbackReceiver } from "../support/callback-receiver.ts";
import { isSqlite } from "../../src/db/index.ts";
import { overviewMoneyQuery, overviewTasksQuery } from "../../src/generation/overview.ts";
import { verifyLedger } from "../../src/ledger/index.ts";

const ADMIN_TOKEN = "console-admin-token";
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

const KEY_FIELDS = "id name accountId status scopes allowedIps rateLimit callbackUrl balance { amount } spent { amount } taskCount";
const ENTRY_FIELDS = "id accountId customerId keyId kind amount { amount } balanceAfter { amount } orderId reason";
const CREATE_KEY = `mutation($input: AdminCreateApiKeyInput!) { adminCreateApiKey(input: $input) { key id accountId apiKey { ${KEY_FIELDS} } ledgerEntry { ${ENTRY_FIELDS} } } }`;
const TOP_UP = `mutation($input: AdminTopUpAccountInput!) { adminTopUpAccount(input: $input) { balance { amount } ledgerEntry { ${ENTRY_FIELDS} } } }`;
const TOP_UP_CUSTOMER = `mutation($input: AdminTopUpCustomerInput!) { adminTopUpCustomer(input: $input) { customerBalance { available { amount } } ledgerEntry { ${ENTRY_FIELDS} } } }`;
const UPDATE_KEY = `mutation($input: AdminUpdateApiKeyInput!) { adminUpdateApiKey(input: $input) { apiKey { ${KEY_FIELDS} } } }`;
const KEYS = `query($search: String, $first: Int, $after: String) { adminApiKeys(search: $search, first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } nodes { ${KEY_FIELDS} } } }`;
const WALLETS = `query($accountId: ID) { adminCustomerWallets(accountId: $accountId) { totalCount nodes { accountId customerId available { amount } frozen { amount } creditLine { amount } } } }`;
const ORDERS = `query($accountId: ID, $status: OrderStatus) { adminOrders(accountId: $accountId, status: $status) { totalCount nodes { id accountId status paymentStatus failureReason amount { amount } ledgerEntries { kind amount { amount } } } } }`;
const DELIVERIES = `query($accountId: ID) { adminWebhookDeliveries(accountId: $accountId) { totalCount nodes { id event status attemptCount url attempts { status error } } } }`;
const RESEND = `mutation($input: AdminResendDeliveryInput!) { adminResendDelivery(input: $input) { delivery { id status attemptCount } } }`;
const OVERVIEW = `query { adminOverview(minutes: 5) { at tasksPerMinute { minute submitted succeeded failed } window { submitted succeeded failed successRate } today { submitted } revenueToday { amount } refundsToday { amount } topUpsToday { amount } } }`;

let t: TestStack;
let receiver: CallbackReceiver;

const asAdmin = async (query: string, variables: Record<string, unknown> = {}) => {
  const r = await t.graphql(query, variables, undefined, admin);
  expect(r.body.errors).toBeUndefined();
  return r.body.data;
};

beforeAll(async () => {
  receiver = await startCallbackReceiver();
  // Every console field is probed with wrong tokens, more than the throttle's 10 a minute from one
  // address allow (admin-throttle.test.ts tests the throttle).
  t = await startTestStack({ ADMIN_TOKEN, ADMIN_FAILURES_PER_MINUTE: "1000" });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe("admin console authentication", () => {
  const reads: [string, Record<string, unknown>][] = [
    [KEYS, {}],
    [WALLETS, {}],
    [ORDERS, {}],
    [DELIVERIES, {}],
    [OVERVIEW, {}],
    [UPDATE_KEY, { input: { keyId: "key_x", rateLimit: 5 } }],
    [RESEND, { input: { deliveryId: "1" } }],
  ];

  it("refuses every console field with 401 for an absent or wrong token and for an API key", async () => {
    const { key } = await t.createKey("1");
    for (const [query, variables] of reads) {
      const attempts: Record<string, string>[] = [{}, { authorization: "Bearer wrong" }, { authorization: `Bearer ${key}` }];
      for (const headers of attempts) {
        const r = await t.graphql(query, variables, undefined, headers);
        expect(Object.values(r.body.data ?? {}).every((v) => v === null)).toBe(true);
        expect(r.body.errors[0]).toMatchObject({ message: "Invalid or missing admin token", extensions: { code: "unauthorized", http: { status: 401 } } });
      }
    }
  });

  it("answers 403 Admin API is disabled when the server has no ADMIN_TOKEN", async () => {
    const off = await startTestStack();
    try {
      for (const [query, variables] of reads) {
        const r = await off.graphql(query, variables, undefined, admin);
        expect(r.body.errors[0]).toMatchObject({ message: "Admin API is disabled", extensions: { code: "forbidden", http: { status: 403 } } });
      }
    } finally {
      await off.close();
    }
  });
});

describe("API keys", () => {
  it("creates a key answering its opening ledger entry, finds it by name, id and account, and pages with a cursor", async () => {
    const a = (await asAdmin(CREATE_KEY, { input: { name: "Console Alpha", balance: "12.5" } })).adminCreateApiKey;
    const b = (await asAdmin(CREATE_KEY, { input: { name: "console beta", accountId: a.accountId } })).adminCreateApiKey;
    expect(a.apiKey).toMatchObject({ id: a.id, name: "Console Alpha", status: "ACTIVE", balance: { amount: "12.50" }, taskCount: 0 });
    expect(a.ledgerEntry).toMatchObject({
      kind: "topup",
      keyId: a.id,
      accountId: a.accountId,
      customerId: null,
      amount: { amount: "12.50" },
      balanceAfter: { amount: "12.50" },
    });
    expect(b.ledgerEntry).toBeNull();

    const byName = (await asAdmin(KEYS, { search: "CONSOLE" })).adminApiKeys;
    expect(byName.nodes.map((k: any) => k.id)).toEqual([b.id, a.id]);
    expect(byName.totalCount).toBe(2);
    expect((await asAdmin(KEYS, { search: a.id })).adminApiKeys.nodes.map((k: any) => k.id)).toEqual([a.id]);
    expect((await asAdmin(KEYS, { search: a.accountId })).adminApiKeys.nodes.map((k: any) => k.id)).toEqual([b.id, a.id]);
    expect((await asAdmin(KEYS, { search: "50%_" })).adminApiKeys.nodes).toEqual([]);

    const first = (await asAdmin(KEYS, { search: "console", first: 1 })).adminApiKeys;
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = (await asAdmin(KEYS, { search: "console", first: 1, after: first.pageInfo.endCursor })).adminApiKeys;
    expect(second.nodes.map((k: any) => k.id)).toEqual([a.id]);
    expect(second.pageInfo.hasNextPage).toBe(false);
  });

  it("tops up answering the ledger entry, and changes scopes, IP list and rate limit that the REST API then applies", async () => {
    const { key, id } = await t.createKey("1");
    const topped = (await asAdmin(TOP_UP, { input: { keyId: id, amount: "2.125" } })).adminTopUpAccount;
    expect(topped).toMatchObject({
      balance: { amount: "3.125" },
      ledgerEntry: { kind: "topup", keyId: id, amount: { amount: "2.125" }, balanceAfter: { amount: "3.125" } },
    });
    expect((await t.rest("GET", "/api/v1/usage", { key })).body.data.balance).toBe(3.125);

    const scoped = (await asAdmin(UPDATE_KEY, { input: { keyId: id, scopes: ["catalog:read"], rateLimit: 7 } })).adminUpdateApiKey.apiKey;
    expect(scoped).toMatchObject({ scopes: ["catalog:read"], rateLimit: 7, allowedIps: null });
    expect((await t.rest("GET", "/api/v1/usage", { key })).status).toBe(403);
    expect((await t.rest("GET", "/openapi/v1/vendors", { key })).status).toBe(200);

    const fenced = (await asAdmin(UPDATE_KEY, { input: { keyId: id, allowedIps: ["203.0.113.0/24"], rateLimit: null } })).adminUpdateApiKey.apiKey;
    expect(fenced).toMatchObject({ scopes: ["catalog:read"], allowedIps: ["203.0.113.0/24"], rateLimit: null });
    expect((await t.rest("GET", "/openapi/v1/vendors", { key })).status).toBe(403);

    const bad = await t.graphql(UPDATE_KEY, { input: { keyId: id, allowedIps: ["not-an-ip"], scopes: ["nope"] } }, undefined, admin);
    expect(bad.body.errors[0].extensions).toMatchObject({ code: "validation_failed", http: { status: 422 } });
    expect((await asAdmin(KEYS, { search: id })).adminApiKeys.nodes[0].allowedIps).toEqual(["203.0.113.0/24"]);
  });
});

describe("wallets, orders and deliveries", () => {
  it("shows customer wallets, orders with their payments and refunds, and deliveries with attempts that can be re-sent", async () => {
    const created = (await asAdmin(CREATE_KEY, { input: { name: "shop", callbackUrl: receiver.url } })).adminCreateApiKey;
    const topped = (await asAdmin(TOP_UP_CUSTOMER, { input: { accountId: created.accountId, customerId: "cust-9", amount: "500" } })).adminTopUpCustomer;
    expect(topped.ledgerEntry).toMatchObject({ kind: "topup", customerId: "cust-9", amount: { amount: "500.00" }, balanceAfter: { amount: "500.00" } });

    const order = await t.rest("POST", "/openapi/v1/orders", {
      key: created.key,
      body: {
        client_order_no: "SO-F1",
        product_id: "prd_cdn_standard",
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "cust-9" },
        metadata: { domain: "f.example.com", simulate: "fail" },
      },
    });
    expect(order.status).toBe(201);
    const orderId = order.body.data.order_id;
    const failed = await t.waitForAccount(
      created.key,
      () => asAdmin(ORDERS, { accountId: created.accountId, status: "FAILED" }),
      (d) => d.adminOrders.nodes.length === 1,
    );
    expect(failed.adminOrders.nodes[0]).toMatchObject({
      id: orderId,
      accountId: created.accountId,
      status: "FAILED",
      paymentStatus: "REFUNDED",
      amount: { amount: "30.00" },
    });
    expect(failed.adminOrders.nodes[0].failureReason).toBeTruthy();
    expect(failed.adminOrders.nodes[0].ledgerEntries).toEqual([
      { kind: "debit", amount: { amount: "-30.00" } },
      { kind: "refund", amount: { amount: "30.00" } },
    ]);

    const wallets = (await asAdmin(WALLETS, { accountId: created.accountId })).adminCustomerWallets;
    expect(wallets.nodes).toEqual([
      { accountId: created.accountId, customerId: "cust-9", available: { amount: "500.00" }, frozen: { amount: "0.00" }, creditLine: { amount: "0.00" } },
    ]);

    const delivered = await waitUntil(
      () => asAdmin(DELIVERIES, { accountId: created.accountId }),
      (d) => d.adminWebhookDeliveries.nodes.length > 0 && d.adminWebhookDeliveries.nodes.every((n: any) => n.status === "delivered"),
    );
    const delivery = delivered.adminWebhookDeliveries.nodes.at(-1);
    expect(delivery).toMatchObject({ status: "delivered", attemptCount: 1, url: receiver.url, attempts: [{ status: 200, error: null }] });
    const resent = (await asAdmin(RESEND, { input: { deliveryId: delivery.id } })).adminResendDelivery.delivery;
    expect(resent).toMatchObject({ id: delivery.id, status: "pending", attemptCount: 0 });
    await waitUntil(
      () => asAdmin(DELIVERIES, { accountId: created.accountId }),
      (d) => d.adminWebhookDeliveries.nodes.find((n: any) => n.id === delivery.id).attempts.length === 2,
    );
    expect(receiver.received.filter((r) => r.headers["x-service-delivery"] === String(delivery.id))).toHaveLength(2);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });
});

describe("live overview", () => {
  it("counts this minute's tasks, the success rate and today's revenue and refunds", async () => {
    const before = (await asAdmin(OVERVIEW)).adminOverview;
    const { key } = await t.createKey("10");
    const ok = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a fox", model_id: 69, seconds: 6, resolution: "480P" } });
    const bad = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a fox #fail", model_id: 69, seconds: 6, resolution: "480P" } });
    await t.waitForTask(key, ok.body.data.task_id);
    await t.waitForTask(key, bad.body.data.task_id);
    const after = (await asAdmin(OVERVIEW)).adminOverview;
    expect(after.tasksPerMinute).toHaveLength(5);
    expect(after.window.submitted - before.window.submitted).toBe(2);
    expect(after.window.succeeded - before.window.succeeded).toBe(1);
    expect(after.window.failed - before.window.failed).toBe(1);
    expect(after.window.successRate).toBeGreaterThan(0);
    const sum = (points: any[], field: string) => points.reduce((n, p) => n + p[field], 0);
    expect(sum(after.tasksPerMinute, "submitted")).toBe(after.window.submitted);
    const yuan = (m: { amount: string }) => Math.round(Number(m.amount) * 1000);
    expect(yuan(after.revenueToday) - yuan(before.revenueToday)).toBe(2 * 1125);
    expect(yuan(after.refundsToday) - yuan(before.refundsToday)).toBe(1125);
    expect(yuan(after.topUpsToday) - yuan(before.topUpsToday)).toBe(10_000);
    const refused = await t.graphql(`{ adminOverview(minutes: 181) { at } }`, {}, undefined, admin);
    expect(refused.body.errors[0].extensions).toMatchObject({ code: "invalid_request", http: { status: 400 } });
  });

  it("reads tasks and ledger entries as index ranges over their time column, never a scan", async () => {
    const db = t.stack.db!;
    for (const query of [overviewTasksQuery(db, "2026-01-01T00:00:00.000Z").toSQL(), overviewMoneyQuery(db, "2026-01-01T00:00:00.000Z").toSQL()]) {
      if (isSqlite(db)) {
        const plan: { detail: string }[] = await db.raw(`explain query plan ${query.sql}`, query.bindings as any[]);
        const details = plan.map((row) => row.detail).join("\n");
        expect(details).toMatch(
          /SEARCH (tasks|ledger_entries) USING COVERING INDEX (tasks_created_at_status_index \(created_at>\?\)|ledger_entries_kind_created_at_amount_index \(kind=\? AND created_at>\?\))/,
        );
        expect(details).not.toMatch(/\bSCAN (ledger_entries|tasks)\b/);
      } else {
        const plan = await db.transaction(async (trx) => {
          await trx.raw("set local enable_seqscan = off");
          return (await trx.raw(`explain ${query.sql}`, query.bindings as any[])).rows.map((row: Record<string, string>) => row["QUERY PLAN"]).join("\n");
        });
        expect(plan).toMatch(
          /(Index (Only )?Scan using|Bitmap Index Scan on) (tasks_created_at_status_index|ledger_entries_kind_created_at_amount_index)[\s\S]*Index Cond: .*created_at/,
        );
        expect(plan).not.toMatch(/Seq Scan/);
      }
    }
  });
});
