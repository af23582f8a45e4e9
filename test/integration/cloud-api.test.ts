/**
 * The cloud open API through the router (docs/api/cloud.md §4): every endpoint's happy path, every
 * error code of §7, the order state machine, idempotency, tenant isolation and the books.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { topUpCustomer, setCreditLine } from "../../src/cloud/customers.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";
import { parseCsvLikeASpreadsheet } from "../support/spreadsheet-csv.ts";

let t: TestStack;
let key: string;
let accountId: string;
let cdnProductId: string;
let soldOutProductId: string;
let orderSeq = 0;

/** The fields of the REST list items these tests read (docs/api/cloud.md). */
type ProductItem = { category: string; vendor_id: string; status: string };
type ResourceItem = { resource_id: string; order_id: string; status: string; expires_at: string };
type TransactionItem = { type: string; amount: number };

const api = (method: string, path: string, options: { body?: unknown; rawBody?: string; headers?: Record<string, string>; key?: string } = {}) =>
  t.rest(method, `/openapi/v1${path}`, { key: options.key ?? key, body: options.body, rawBody: options.rawBody, headers: options.headers });

function orderBody(overrides: Record<string, unknown> = {}) {
  return {
    client_order_no: `co-${++orderSeq}-${Date.now()}`,
    product_id: cdnProductId,
    quantity: 1,
    billing_cycle: "monthly",
    customer: { customer_id: "cust-1", contact: "ops@example.com" },
    metadata: { domain: `site${orderSeq}.example.com` },
    ...overrides,
  };
}

async function activeOrder(body = orderBody()) {
  const created = await api("POST", "/orders", { body });
  expect(created.status).toBe(201);
  return t
    .waitForAccount(
      key,
      () => api("GET", `/orders/${created.body.data.order_id}`),
      (r) => r.body.data.status === "active",
    )
    .then((r) => r.body.data);
}

beforeAll(async () => {
  t = await startTestStack();
  const created = await t.createKey("0");
  key = created.key;
  accountId = created.account_id;
  await topUpCustomer(t.stack.db!, { accountId, customerId: "cust-1", amount: parseYuan("1000") });
  const products = await api("GET", "/products?category=cdn&status=available");
  cdnProductId = products.body.data.items[0].product_id;
  const soldOut = await api("GET", "/products?status=sold_out");
  soldOutProductId = soldOut.body.data.items[0].product_id;
});
afterAll(() => t.close());

describe("catalog", () => {
  it("lists vendors in the envelope and pages them with limit and cursor", async () => {
    const all = await api("GET", "/vendors");
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ success: true, request_id: expect.any(String) });
    expect(all.body.request_id).toBe(all.headers.get("x-request-id"));
    expect(all.body.data.items.length).toBeGreaterThanOrEqual(2);
    expect(all.body.data.items[0]).toEqual({ vendor_id: expect.any(String), name: expect.any(String), status: expect.any(String) });
    const first = await api("GET", "/vendors?limit=1");
    expect(first.body.data.items).toHaveLength(1);
    expect(first.body.data.next_cursor).toEqual(expect.any(String));
    const second = await api("GET", `/vendors?limit=1&cursor=${first.body.data.next_cursor}`);
    expect(second.body.data.items[0].vendor_id).not.toBe(first.body.data.items[0].vendor_id);
    const last = await api("GET", `/vendors?limit=100`);
    expect(last.body.data.next_cursor).toBeNull();
  });

  it("filters products by category, vendor and sale status and shows a product's detail", async () => {
    const cdn = await api("GET", "/products?category=cdn");
    expect((cdn.body.data.items as ProductItem[]).every((p) => p.category === "cdn")).toBe(true);
    const product = cdn.body.data.items[0];
    expect(product.required_fields).toContain("domain");
    expect(product.billing_cycles[0]).toEqual({ cycle: expect.any(String), months: expect.any(Number), price: expect.any(Number) });
    const byVendor = await api("GET", `/products?vendor_id=${product.vendor_id}`);
    expect((byVendor.body.data.items as ProductItem[]).every((p) => p.vendor_id === product.vendor_id)).toBe(true);
    const detail = await api("GET", `/products/${product.product_id}`);
    expect(detail.body.data).toEqual(product);
    expect(((await api("GET", "/products?status=available")).body.data.items as ProductItem[]).every((p) => p.status === "available")).toBe(true);
  });

  it("answers 404 not_found for an unknown product and an unknown path", async () => {
    const missing = await api("GET", "/products/prd_nope");
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ success: false, error: { code: "not_found" } });
    const path = await api("GET", "/nowhere");
    expect(path.status).toBe(404);
    expect(path.body.error.code).toBe("not_found");
  });

  it("answers 400 invalid_request for a bad limit or status filter", async () => {
    expect((await api("GET", "/vendors?limit=0")).body.error).toMatchObject({ code: "invalid_request", details: { field: "limit" } });
    expect((await api("GET", "/products?status=gone")).status).toBe(400);
  });
});

describe("orders", () => {
  it("creates an order, pays it from the customer's balance and provisions it to active with a resource and an expiry", async () => {
    const before = (await api("GET", "/billing/balance?customer_id=cust-1")).body.data.available;
    const created = await api("POST", "/orders", { body: orderBody() });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ payment_status: "paid", provisioning_status: "provisioning", status: "provisioning" });
    const amount = created.body.data.amount;
    const active = await t.waitForAccount(
      key,
      () => api("GET", `/orders/${created.body.data.order_id}`),
      (r) => r.body.data.status === "active",
    );
    expect(active.body.data.resource_id).toEqual(expect.any(String));
    const after = (await api("GET", "/billing/balance?customer_id=cust-1")).body.data.available;
    expect(Math.round((before - after) * 1000)).toBe(Math.round(amount * 1000));
    const resources = await api("GET", "/resources?customer_id=cust-1");
    const resource = (resources.body.data.items as ResourceItem[]).find((r) => r.resource_id === active.body.data.resource_id)!;
    expect(resource).toMatchObject({ order_id: created.body.data.order_id, status: "active" });
    expect(Date.parse(resource.expires_at)).toBeGreaterThan(Date.now());
  });

  it("leaves an order unpaid and takes nothing when the balance and credit line do not cover it", async () => {
    const created = await api("POST", "/orders", { body: orderBody({ customer: { customer_id: "broke", contact: "x@example.com" } }) });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ payment_status: "unpaid", status: "unpaid" });
    const txns = await api("GET", "/billing/transactions?customer_id=broke");
    expect(txns.body.data.items).toEqual([]);
  });

  it("fails provisioning with metadata.simulate fail and refunds in full", async () => {
    const created = await api("POST", "/orders", { body: orderBody({ metadata: { domain: "fail.example.com", simulate: "fail" } }) });
    const failed = await t.waitForAccount(
      key,
      () => api("GET", `/orders/${created.body.data.order_id}`),
      (r) => r.body.data.status === "failed",
    );
    expect(failed.body.data).toMatchObject({ payment_status: "refunded", provisioning_status: "failed", failure_reason: expect.any(String) });
    const txns = await api("GET", `/billing/transactions?order_id=${created.body.data.order_id}`);
    const types = (txns.body.data.items as TransactionItem[]).map((i) => i.type).sort();
    expect(types).toEqual(["deduction", "refund"]);
    expect((txns.body.data.items as TransactionItem[]).reduce((sum, i) => sum + Math.round(i.amount * 1000), 0)).toBe(0);
  });

  it("answers 422 validation_failed naming the field for each invalid field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ client_order_no: "" }, "client_order_no"],
      [{ product_id: "prd_nope" }, "product_id"],
      [{ quantity: 0 }, "quantity"],
      [{ quantity: "1" }, "quantity"],
      [{ billing_cycle: "fortnight" }, "billing_cycle"],
      [{ customer: { contact: "x" } }, "customer.customer_id"],
      [{ metadata: {} }, "metadata.domain"],
    ];
    for (const [override, field] of cases) {
      const r = await api("POST", "/orders", { body: orderBody(override) });
      expect(r.status, field).toBe(422);
      expect(r.body.error.code).toBe("validation_failed");
      expect(r.body.error.details.field).toBe(field);
    }
  });

  it("refuses a product that is not available", async () => {
    const r = await api("POST", "/orders", { body: orderBody({ product_id: soldOutProductId }) });
    expect([409, 422]).toContain(r.status);
    expect(r.body.success).toBe(false);
  });

  it("answers 400 invalid_request for a body that is not JSON", async () => {
    const r = await api("POST", "/orders", { rawBody: "{nope" });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("invalid_request");
  });

  it("answers 409 conflict for a duplicate client_order_no", async () => {
    const body = orderBody();
    expect((await api("POST", "/orders", { body })).status).toBe(201);
    const again = await api("POST", "/orders", { body });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("conflict");
  });

  it("replays the first answer for the same Idempotency-Key and body, and answers 409 for another body", async () => {
    const body = orderBody();
    const headers = { "idempotency-key": `idem-${Date.now()}` };
    const first = await api("POST", "/orders", { body, headers });
    const replay = await api("POST", "/orders", { body, headers });
    expect(replay.status).toBe(first.status);
    expect(replay.body.data).toEqual(first.body.data);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const other = await api("POST", "/orders", { body: { ...body, quantity: 2 }, headers });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("conflict");
  });

  it("creates exactly one order and one deduction for 20 concurrent retries with one Idempotency-Key", async () => {
    const body = orderBody({ customer: { customer_id: "cust-race", contact: "r@example.com" } });
    await topUpCustomer(t.stack.db!, { accountId, customerId: "cust-race", amount: parseYuan("1000") });
    const headers = { "idempotency-key": `race-${Date.now()}` };
    const answers = await Promise.all(Array.from({ length: 20 }, () => api("POST", "/orders", { body, headers })));
    const ok = answers.filter((a) => a.status === 201);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((a) => a.body.data.order_id)).size).toBe(1);
    for (const a of answers) expect([201, 409]).toContain(a.status);
    const txns = await api("GET", "/billing/transactions?customer_id=cust-race&type=deduction");
    expect(txns.body.data.items).toHaveLength(1);
  });

  it("renews an active order, charging for it and extending the resource's expiry", async () => {
    const order = await activeOrder();
    const resourceBefore = ((await api("GET", "/resources?customer_id=cust-1&limit=100")).body.data.items as ResourceItem[]).find(
      (r) => r.resource_id === order.resource_id,
    )!;
    const renewed = await api("POST", `/orders/${order.order_id}/renew`, { body: { periods: 2 } });
    expect(renewed.status).toBe(200);
    const resourceAfter = ((await api("GET", "/resources?customer_id=cust-1&limit=100")).body.data.items as ResourceItem[]).find(
      (r) => r.resource_id === order.resource_id,
    )!;
    expect(Date.parse(resourceAfter.expires_at)).toBeGreaterThan(Date.parse(resourceBefore.expires_at));
    const txns = await api("GET", `/billing/transactions?order_id=${order.order_id}&type=deduction`);
    expect(txns.body.data.items).toHaveLength(2);
  });

  it("answers 409 conflict when renewing an order that is not active", async () => {
    const created = await api("POST", "/orders", { body: orderBody({ metadata: { domain: "f2.example.com", simulate: "fail" } }) });
    await t.waitForAccount(
      key,
      () => api("GET", `/orders/${created.body.data.order_id}`),
      (r) => r.body.data.status === "failed",
    );
    const r = await api("POST", `/orders/${created.body.data.order_id}/renew`, { body: {} });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("conflict");
  });
});

describe("domains, purge and usage", () => {
  it("adds a domain to an active CDN order, shows its status, and purges it with a task whose state GraphQL can read", async () => {
    const order = await activeOrder();
    const domain = `www${Date.now()}.example.com`;
    const created = await api("POST", "/domains", {
      body: { domain, origin: { type: "ip", address: "93.184.216.34", port: 443 }, protocol: "https", order_id: order.order_id, customer_id: "cust-1" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data).toMatchObject({ domain, order_id: order.order_id, cname: expect.any(String) });
    const status = await api("GET", `/domains/${domain}/status`);
    expect(status.status).toBe(200);
    expect(Object.keys(status.body.data)).toEqual(
      expect.arrayContaining(["review_status", "resolution_status", "certificate_status", "acceleration_status", "error_status", "origin", "protocol"]),
    );
    const duplicate = await api("POST", "/domains", {
      body: { domain, origin: { type: "ip", address: "93.184.216.34" }, protocol: "https", order_id: order.order_id, customer_id: "cust-1" },
    });
    expect(duplicate.status).toBe(409);
    const purge = await api("POST", `/domains/${domain}/purge`, { body: { type: "url", targets: [`https://${domain}/index.html`] } });
    expect(purge.status).toBe(201);
    const taskId = purge.body.data.task_id;
    const gql = await t.graphql(`query($id: ID!) { purgeTask(id: $id) { id status targets } }`, { id: taskId }, key);
    expect(gql.body.data.purgeTask).toMatchObject({ id: taskId, targets: [`https://${domain}/index.html`] });
  });

  it("pulls a bandwidth curve and a traffic summary whose total is the sum of its days", async () => {
    const order = await activeOrder();
    const now = new Date();
    const start = new Date(now.getTime() - 6 * 3600_000).toISOString();
    const bw = await api("GET", `/usage/bandwidth?resource_id=${order.resource_id}&start=${start}&end=${now.toISOString()}`);
    expect(bw.status).toBe(200);
    expect(bw.body.data).toMatchObject({ resource_id: order.resource_id, interval_seconds: expect.any(Number), peak_bps: expect.any(Number) });
    expect(bw.body.data.peak_bps).toBe(Math.max(...(bw.body.data.points as { bps: number }[]).map((p) => p.bps)));
    const day = now.toISOString().slice(0, 10);
    const traffic = await api("GET", `/usage/traffic?resource_id=${order.resource_id}&start=${day}&end=${day}`);
    expect(traffic.status).toBe(200);
    expect(traffic.body.data.total_bytes).toBe((traffic.body.data.items as { bytes: number }[]).reduce((s, i) => s + i.bytes, 0));
  });

  it("answers 400 invalid_request for a range that ends before it starts, is unparsable, or is longer than 31 days", async () => {
    const order = await activeOrder();
    for (const [start, end] of [
      ["2026-11-10T00:00:00Z", "2026-11-09T00:00:00Z"],
      ["yesterday", "2026-11-09T00:00:00Z"],
      ["2026-09-01T00:00:00Z", "2026-11-09T00:00:00Z"],
    ]) {
      const r = await api("GET", `/usage/bandwidth?resource_id=${order.resource_id}&start=${start}&end=${end}`);
      expect(r.status, `${start}..${end}`).toBe(400);
      expect(r.body.error.code).toBe("invalid_request");
    }
  });
});

describe("billing", () => {
  it("shows balance, credit line and frozen, and transactions with balance_after", async () => {
    await setCreditLine(t.stack.db!, accountId, "cust-1", parseYuan("50"));
    const balance = await api("GET", "/billing/balance?customer_id=cust-1");
    expect(balance.body.data).toMatchObject({ customer_id: "cust-1", credit_line: 50, currency: "CNY" });
    const txns = await api("GET", "/billing/transactions?customer_id=cust-1&type=topup");
    expect(txns.body.data.items[0]).toMatchObject({ type: "topup", customer_id: "cust-1", balance_after: expect.any(Number) });
  });

  it("shows this month's statement with its items and an export that becomes ready", async () => {
    const id = `stm_${new Date().toISOString().slice(0, 7)}`;
    const statement = await api("GET", `/billing/statements/${id}`);
    expect(statement.status).toBe(200);
    expect(statement.body.data.items.length).toBeGreaterThan(0);
    const ready = await waitUntil(
      () => api("GET", `/billing/statements/${id}`),
      (r) => r.body.data.export_status === "ready",
    );
    const csv = await fetch(`${t.url}${ready.body.data.export_url}`, { headers: { authorization: `Bearer ${key}` } });
    expect(csv.headers.get("content-type")).toMatch(/text\/csv/);
    expect((await csv.text()).split("\n")[0]).toMatch(/^transaction_id,/);
  });

  it("writes a customer_id of =1+2 into the statement export as text a spreadsheet will not run, and every other cell as it is", async () => {
    const own = await t.createKey("0");
    const customers = ["=1+2", "@SUM(1+1)", 'acme,"west"'];
    for (const customerId of customers) await topUpCustomer(t.stack.db!, { accountId: own.account_id, customerId, amount: parseYuan("100") });
    const order = await api("POST", "/orders", { key: own.key, body: orderBody({ customer: { customer_id: "=1+2", contact: "ops@example.com" } }) });
    expect(order.status).toBe(201);
    const id = `stm_${new Date().toISOString().slice(0, 7)}`;
    const ready = await waitUntil(
      () => api("GET", `/billing/statements/${id}`, { key: own.key }),
      (r) => r.body.data.export_status === "ready",
    );
    const exported = await fetch(`${t.url}${ready.body.data.export_url}`, { headers: { authorization: `Bearer ${own.key}` } });
    expect(exported.status).toBe(200);
    const [records] = parseCsvLikeASpreadsheet([await exported.text()]);
    const [header, ...rows] = records!;
    expect(header).toEqual(["transaction_id", "customer_id", "order_id", "type", "amount", "balance_after", "created_at"]);
    const items = ready.body.data.items;
    expect((items as TransactionItem[]).map((i) => i.type)).toEqual(["topup", "topup", "topup", "deduction"]);
    expect(rows).toHaveLength(items.length);
    rows.forEach((row, i) => {
      const item = items[i];
      const [transactionId, customerId, orderId, type, amount, , createdAt] = row;
      // The dangerous cells start with ' (shown as text); everything else reads back as the API gave it.
      expect(customerId).toBe(item.customer_id.startsWith("=") || item.customer_id.startsWith("@") ? `'${item.customer_id}` : item.customer_id);
      expect([transactionId, orderId || null, type, Number(amount), createdAt]).toEqual([
        item.transaction_id,
        item.order_id,
        item.type,
        item.amount,
        item.created_at,
      ]);
    });
    expect(rows.map((r) => r[1])).toEqual(["'=1+2", "'@SUM(1+1)", 'acme,"west"', "'=1+2"]);
    expect(rows[3]![4]).toBe("-30.00");
  });

  it("keeps every customer's balance equal to the sum of its transactions, and the ledger verifies clean", async () => {
    for (const customer of ["cust-1", "cust-race"]) {
      const balance = (await api("GET", `/billing/balance?customer_id=${customer}`)).body.data.available;
      const items = (await api("GET", `/billing/transactions?customer_id=${customer}&limit=100`)).body.data.items;
      expect(Math.round(balance * 1000)).toBe((items as TransactionItem[]).reduce((s, i) => s + Math.round(i.amount * 1000), 0));
    }
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });
});

describe("keys and tenancy", () => {
  it("answers 401 unauthorized without a key or with an unknown key", async () => {
    for (const k of ["", "sy_unknown"]) {
      const r = await t.rest("GET", "/openapi/v1/vendors", { key: k || undefined });
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ success: false, error: { code: "unauthorized" } });
    }
  });

  it("answers 403 forbidden for a key without the scope and for a source IP outside the allow-list", async () => {
    const readOnly = await t.createKey("0", { scopes: ["catalog:read"] });
    const denied = await api("POST", "/orders", { key: readOnly.key, body: orderBody() });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("forbidden");
    expect((await api("GET", "/vendors", { key: readOnly.key })).status).toBe(200);
    const fenced = await t.createKey("0", { allowIps: ["10.0.0.0/8"] });
    const r = await api("GET", "/vendors", { key: fenced.key });
    expect(r.status).toBe(403);
    const open = await t.createKey("0", { allowIps: ["127.0.0.0/8", "::1/128"] });
    expect((await api("GET", "/vendors", { key: open.key })).status).toBe(200);
  });

  it("answers 429 rate_limited with Retry-After past the key's rate limit", async () => {
    const limited = await t.createKey("0", { rateLimit: 2 });
    const answers = await Promise.all(Array.from({ length: 6 }, () => api("GET", "/vendors", { key: limited.key })));
    const limitedAnswers = answers.filter((a) => a.status === 429);
    expect(limitedAnswers.length).toBeGreaterThan(0);
    expect(limitedAnswers[0]!.body.error.code).toBe("rate_limited");
    expect(Number(limitedAnswers[0]!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("answers 404 for another account's order, domain and resource", async () => {
    const order = await activeOrder();
    const stranger = await t.createKey("0");
    expect((await api("GET", `/orders/${order.order_id}`, { key: stranger.key })).status).toBe(404);
    expect((await api("POST", `/orders/${order.order_id}/renew`, { key: stranger.key, body: {} })).status).toBe(404);
    expect((await api("GET", `/usage/traffic?resource_id=${order.resource_id}&start=2026-11-01&end=2026-11-02`, { key: stranger.key })).status).toBe(404);
    const gql = await t.graphql(`query($id: ID!) { order(id: $id) { id } }`, { id: order.order_id }, stranger.key);
    expect(gql.body.errors[0].extensions.code).toBe("not_found");
  });
});
