/**
 * Strict input at every door (issue 20, findings 7 and 9 and two of its "Also" items; README
 * "Input limits"): a cursor is read as the types its keyset needs or refused with 400
 * `cursor is not valid` (never a database error, never a page of something else); a page size in a
 * query string is decimal digits only; a money string is a plain decimal; a delivery id beyond
 * the serial range is not found; an Idempotency-Key is scoped per account and operation; a prompt
 * of only invisible characters is blank. Runs on SQLite and (TEST_DATABASE=postgres) PostgreSQL,
 * where a wrongly typed cursor used to be a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { startCallbackReceiver, type CallbackReceiver } from "../support/callback-receiver.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { DEMO_CATALOG } from "../../src/cloud/demo-seed.ts";
import { parseYuan } from "../../src/money.ts";
import { CONNECTIONS, REST_LISTS } from "../support/connections.ts";
import { INVISIBLE_TEXTS } from "../support/invisible.ts";

const ADMIN_TOKEN = "strict-input-admin-token";
const b64 = (json: string) => Buffer.from(json).toString("base64url");

/** Cursors no list ever issued, each of a shape some keyset used to read (the first three: the issue's). */
const BAD_CURSORS: Record<string, string> = {
  'the text ["abc"]': "WyJhYmMiXQ",
  "a fraction": b64("[1.5]"),
  "1e400": b64("[1e400]"),
  "a number beyond the serial range": b64("[99999999999999999999]"),
  "a negative serial": b64("[-1]"),
  "a time and a fraction": b64('["2026-01-01T00:00:00.000Z",1.5]'),
  "text and a number": b64('["abc",5]'),
  "numbers where a time and an id go": b64("[1e400,5]"),
  "an id with NUL": b64('["2026-01-01T00:00:00.000Z","a\\u0000b"]'),
  "an id of 65 characters": b64(`["2026-01-01T00:00:00.000Z","${"x".repeat(65)}"]`),
  "an empty id": b64('["acc_1",""]'),
  "null values": b64("[null,null]"),
  "an object": b64('{"id":1}'),
  "not JSON": b64("nope"),
  "not base64url": "!!!",
  "over-long": "A".repeat(10_000),
};

let t: TestStack;
let receiver: CallbackReceiver;
let key: string;
let accountId: string;

/** A GraphQL call as the admin. */
const asAdmin = (query: string, variables: Record<string, unknown> = {}) => t.graphql(query, variables, ADMIN_TOKEN);

beforeAll(async () => {
  t = await startTestStack({ ADMIN_TOKEN });
  receiver = await startCallbackReceiver();
  const created = await t.createKey("100", { callbackUrl: receiver.url });
  key = created.key;
  accountId = created.account_id;
  await t.createKey("1");
  // Two of everything, so every list has a second page.
  for (const customerId of ["cust-a", "cust-b"]) await topUpCustomer(t.stack.db!, { accountId, customerId, amount: parseYuan("1000") });
  for (const n of [1, 2]) {
    const order = await t.rest("POST", "/openapi/v1/orders", {
      key,
      body: {
        client_order_no: `strict-${n}`,
        product_id: DEMO_CATALOG.products.compute,
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "cust-a", contact: "ops@example.com" },
      },
    });
    expect(order.status, JSON.stringify(order.body)).toBe(201);
    const submitted = await t.rest("POST", "/api/v1/images/generations", { key, body: { prompt: `strict ${n}`, model_id: 45 } });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
  }
  await t.waitForAccount(
    key,
    () => t.rest("GET", "/openapi/v1/resources?limit=100", { key }),
    (r) => r.body?.data?.items?.length === 2,
  );
  // A delivery row is written by the dispatcher after it published the event: nothing announces it.
  await waitUntil(
    () => asAdmin("{ adminWebhookDeliveries(first: 1) { totalCount } }"),
    (r) => r.body.data?.adminWebhookDeliveries?.totalCount >= 2,
  );
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const runConnection = (c: (typeof CONNECTIONS)[number], after?: string) =>
  t.graphql(c.query, after === undefined ? {} : { after }, c.admin ? ADMIN_TOKEN : key);

describe("cursors: read as their keyset's types, else 400 cursor is not valid", () => {
  it.each(REST_LISTS)("GET /openapi/v1%s refuses every cursor it never issued with 400 invalid_request", async (path) => {
    const separator = path.includes("?") ? "&" : "?";
    for (const [shape, cursor] of Object.entries(BAD_CURSORS)) {
      const answer = await t.rest("GET", `/openapi/v1${path}${separator}cursor=${encodeURIComponent(cursor)}`, { key });
      expect({ shape, status: answer.status, error: answer.body.error }).toEqual({
        shape,
        status: 400,
        error: { code: "invalid_request", message: "cursor is not valid", details: { field: "cursor" } },
      });
    }
  });

  it.each(REST_LISTS)("GET /openapi/v1%s still pages with the cursor it issued", async (path) => {
    const separator = path.includes("?") ? "&" : "?";
    const first = await t.rest("GET", `/openapi/v1${path}${separator}limit=1`, { key });
    expect(first.status).toBe(200);
    const cursor = first.body.data.next_cursor;
    expect(cursor).toEqual(expect.any(String));
    const second = await t.rest("GET", `/openapi/v1${path}${separator}limit=1&cursor=${cursor}`, { key });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.data.items).toHaveLength(1);
    expect(second.body.data.items[0]).not.toEqual(first.body.data.items[0]);
  });

  it.each(CONNECTIONS.map((c) => [c.name, c] as const))("GraphQL %s(after:) refuses every cursor it never issued with 400 invalid_request", async (_, c) => {
    for (const [shape, cursor] of Object.entries(BAD_CURSORS)) {
      const answer = await runConnection(c, cursor);
      const error = answer.body.errors?.[0];
      expect({ shape, message: error?.message, code: error?.extensions?.code, status: error?.extensions?.http?.status }).toEqual({
        shape,
        message: "cursor is not valid",
        code: "invalid_request",
        status: 400,
      });
    }
  });

  it.each(CONNECTIONS.map((c) => [c.name, c] as const))("GraphQL %s(after:) still pages with the cursor it issued", async (_, c) => {
    const first = await runConnection(c);
    expect(first.body.errors).toBeUndefined();
    const cursor = c.pick(first.body.data).edges[0]?.cursor;
    expect(cursor).toEqual(expect.any(String));
    const second = await runConnection(c, cursor);
    expect(second.body.errors).toBeUndefined();
    expect(c.pick(second.body.data).edges[0]?.cursor).not.toBe(cursor);
  });
});

describe("page sizes in a query string: decimal digits only", () => {
  const LENIENT = ["1e2", "0x10", "%205", "5%20", "+5", "5.0", "1_0", "%EF%BC%95" /* fullwidth 5 */, "Infinity"];

  it.each(LENIENT)("GET /api/v1/usage?limit=%s is 400 limit must be an integer from 1 to 100", async (limit) => {
    const answer = await t.rest("GET", `/api/v1/usage?limit=${limit}`, { key });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ code: 400, message: "limit must be an integer from 1 to 100" });
  });

  it.each(LENIENT)("GET /openapi/v1/vendors?limit=%s is 400 invalid_request naming limit", async (limit) => {
    const answer = await t.rest("GET", `/openapi/v1/vendors?limit=${limit}`, { key });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toEqual({ code: "invalid_request", message: "limit must be an integer from 1 to 100", details: { field: "limit", limit: 100 } });
  });

  it("serves limit=5 and limit=005, and refuses 101 and digits beyond any safe integer as too large", async () => {
    for (const limit of ["5", "005"]) expect((await t.rest("GET", `/api/v1/usage?limit=${limit}`, { key })).status).toBe(200);
    for (const limit of ["101", "99999999999999999999"]) {
      const answer = await t.rest("GET", `/openapi/v1/orders?limit=${limit}`, { key });
      expect(answer.status).toBe(400);
      expect(answer.body.error.message).toBe("limit must be an integer from 1 to 100");
    }
  });
});

describe("money strings of admin inputs: a plain decimal with at most three decimals", () => {
  const LENIENT = [" 5", "5\n", "5 ", "\t5", "+5", "5e1", "0x10", ".5", "5.", "5.0000", "1,000", "５"];
  const MESSAGE = (field: string) => `${field} must be an amount in yuan as a decimal string with at most three decimals, for example "30.00"`;

  it.each(LENIENT.map((v) => [JSON.stringify(v), v]))("adminTopUpAccount refuses amount %s with 422 and adds nothing", async (_, amount) => {
    const { id } = await t.createKey("1");
    const answer = await asAdmin("mutation($input: AdminTopUpAccountInput!) { adminTopUpAccount(input: $input) { balance { amount } } }", {
      input: { keyId: id, amount },
    });
    expect(answer.body.data.adminTopUpAccount).toBeNull();
    expect(answer.body.errors[0]).toMatchObject({ message: MESSAGE("amount"), extensions: { code: "validation_failed", field: "amount" } });
    const key = await asAdmin("query($id: ID!) { adminApiKey(id: $id) { balance { amount } } }", { id });
    expect(key.body.data.adminApiKey.balance.amount).toBe("1.00");
  });

  it("refuses a lenient amount in every admin money input: top-up of a customer, credit line, key balance, product price", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      [
        "mutation($input: AdminTopUpCustomerInput!) { adminTopUpCustomer(input: $input) { customerBalance { available { amount } } } }",
        { accountId, customerId: "cust-money", amount: " 5" },
        "amount",
      ],
      [
        "mutation($input: AdminSetCustomerCreditLineInput!) { adminSetCustomerCreditLine(input: $input) { customerBalance { creditLine { amount } } } }",
        { accountId, customerId: "cust-money", limit: "5\n" },
        "limit",
      ],
      ["mutation($input: AdminCreateApiKeyInput!) { adminCreateApiKey(input: $input) { id } }", { name: "money", balance: "1e3" }, "balance"],
      [
        "mutation($input: AdminUpsertProductInput!) { adminUpsertProduct(input: $input) { product { id } } }",
        {
          vendorId: DEMO_CATALOG.vendors.nimbus,
          category: "cdn",
          name: "strict price",
          billingCycles: [{ cycle: "monthly", price: "30.00 " }],
        },
        "billingCycles[0].price",
      ],
    ];
    for (const [query, input, field] of cases) {
      const answer = await asAdmin(query, { input });
      expect(answer.body.errors?.[0], field).toMatchObject({ message: MESSAGE(field), extensions: { code: "validation_failed", field } });
    }
    const wallets = await asAdmin('{ adminCustomerWallets(search: "cust-money") { totalCount } }');
    expect(wallets.body.data.adminCustomerWallets.totalCount).toBe(0);
  });

  it('still takes "5", "5.5", "0.125" and "30.00"', async () => {
    const { id } = await t.createKey("0");
    for (const amount of ["5", "5.5", "0.125", "30.00"]) {
      const answer = await asAdmin("mutation($input: AdminTopUpAccountInput!) { adminTopUpAccount(input: $input) { balance { amount } } }", {
        input: { keyId: id, amount },
      });
      expect(answer.body.errors).toBeUndefined();
    }
    const key = await asAdmin("query($id: ID!) { adminApiKey(id: $id) { balance { amount } } }", { id });
    expect(key.body.data.adminApiKey.balance.amount).toBe("40.625");
  });
});

describe("integer ids: beyond the serial range is not found, never a database error", () => {
  it.each(["99999999999999", "2147483648", " 1", "1e0", "0x1", "-1", "1.0"])("resendDelivery and adminResendDelivery of %j answer 404", async (deliveryId) => {
    const own = await t.graphql("mutation($input: ResendDeliveryInput!) { resendDelivery(input: $input) { delivery { id } } }", { input: { deliveryId } }, key);
    expect(own.body.errors?.[0]).toMatchObject({ message: "Webhook delivery not found", extensions: { code: "not_found" } });
    const admin = await asAdmin("mutation($input: AdminResendDeliveryInput!) { adminResendDelivery(input: $input) { delivery { id } } }", {
      input: { deliveryId },
    });
    expect(admin.body.errors?.[0]).toMatchObject({ message: "Webhook delivery not found", extensions: { code: "not_found" } });
  });
});

describe("Idempotency-Key: per account and operation (docs/api/cloud.md §5.3)", () => {
  const orderBody = (n: string) => ({
    client_order_no: `idem-${n}`,
    product_id: DEMO_CATALOG.products.compute,
    quantity: 1,
    billing_cycle: "monthly",
    customer: { customer_id: "cust-b", contact: "ops@example.com" },
  });

  /** An active order created with `idempotencyKey`. */
  async function activeOrder(n: string, idempotencyKey: string): Promise<string> {
    const created = await t.rest("POST", "/openapi/v1/orders", { key, body: orderBody(n), headers: { "idempotency-key": idempotencyKey } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.order_id;
    await t.waitForAccount(
      key,
      () => t.rest("GET", `/openapi/v1/orders/${id}`, { key }),
      (r) => r.body.data?.status === "active",
    );
    return id;
  }

  it("takes the key of an order's creation for its renewal: both succeed, each replays its own answer", async () => {
    const orderId = await activeOrder("create-then-renew", "shared-key-1");
    const renew = () => t.rest("POST", `/openapi/v1/orders/${orderId}/renew`, { key, body: { periods: 1 }, headers: { "idempotency-key": "shared-key-1" } });
    const renewed = await renew();
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    expect(renewed.headers.get("idempotent-replayed")).toBeNull();
    const replayed = await renew();
    expect(replayed.status).toBe(200);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expect(replayed.body.data).toEqual(renewed.body.data);
    const again = await t.rest("POST", "/openapi/v1/orders", { key, body: orderBody("create-then-renew"), headers: { "idempotency-key": "shared-key-1" } });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.data.order_id).toBe(orderId);
    // One payment and one renewal were charged: 99 + 99 yuan.
    const transactions = await t.rest("GET", `/openapi/v1/billing/transactions?order_id=${orderId}`, { key });
    expect(transactions.body.data.items.map((i: any) => i.amount).sort()).toEqual([-99, -99]);
  });

  it("still answers 409 for the same key on the same operation with another body", async () => {
    const orderId = await activeOrder("renew-conflict", "create-key-2");
    const headers = { "idempotency-key": "renew-key-2" };
    expect((await t.rest("POST", `/openapi/v1/orders/${orderId}/renew`, { key, body: { periods: 1 }, headers })).status).toBe(200);
    const conflict = await t.rest("POST", `/openapi/v1/orders/${orderId}/renew`, { key, body: { periods: 2 }, headers });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.message).toBe("Idempotency-Key was already used with a different request");
    const other = await t.rest("POST", "/openapi/v1/orders", { key, body: orderBody("other-body"), headers: { "idempotency-key": "create-key-2" } });
    expect(other.status).toBe(409);
    expect(other.body.error.message).toBe("Idempotency-Key was already used with a different request");
  });
});

describe("blank prompts: only white space and invisible characters", () => {
  it.each(INVISIBLE_TEXTS.map((p) => [JSON.stringify(p), p]))(
    "REST refuses prompt %s with 400 prompt must be a non-empty string and charges nothing",
    async (_, prompt) => {
      const { key } = await t.createKey("10");
      for (const [path, body] of [
        ["/api/v1/video/generations", { prompt, model_id: 52 }],
        ["/api/v1/images/generations", { prompt, model_id: 45 }],
      ] as const) {
        const answer = await t.rest("POST", path, { key, body });
        expect(answer.status).toBe(400);
        expect(answer.body).toEqual({ code: 400, message: "prompt must be a non-empty string" });
      }
      const usage = await t.rest("GET", "/api/v1/usage", { key });
      expect(usage.body.data.balance).toBe(10);
    },
  );

  it.each(INVISIBLE_TEXTS.map((p) => [JSON.stringify(p), p]))("GraphQL refuses prompt %s with invalid_request naming prompt", async (_, prompt) => {
    const video = await t.graphql(
      "mutation($input: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $input) { task { id } } }",
      { input: { prompt, modelId: 52 } },
      key,
    );
    expect(video.body.errors?.[0]).toMatchObject({ message: "prompt must be a non-empty string", extensions: { code: "invalid_request", field: "prompt" } });
    const image = await t.graphql(
      "mutation($input: SubmitImageGenerationInput!) { submitImageGeneration(input: $input) { task { id } } }",
      { input: { prompt, modelId: 45 } },
      key,
    );
    expect(image.body.errors?.[0]).toMatchObject({ message: "prompt must be a non-empty string", extensions: { code: "invalid_request", field: "prompt" } });
  });

  it("refuses a customer id or client_order_no holding an invisible character with 422, so two ids that look alike are not two customers", async () => {
    const base = {
      client_order_no: "visible-1",
      product_id: DEMO_CATALOG.products.compute,
      quantity: 1,
      billing_cycle: "monthly",
      customer: { customer_id: "cust-a", contact: "ops@example.com" },
    };
    for (const [body, field] of [
      [{ ...base, customer: { ...base.customer, customer_id: "\u200B" } }, "customer.customer_id"],
      [{ ...base, customer: { ...base.customer, customer_id: "cust\u2060a" } }, "customer.customer_id"],
      [{ ...base, client_order_no: "\uFEFF" }, "client_order_no"],
      [{ ...base, customer: { ...base.customer, contact: "\u200B\u00AD" } }, "customer.contact"],
    ] as const) {
      const answer = await t.rest("POST", "/openapi/v1/orders", { key, body });
      expect({ status: answer.status, code: answer.body.error?.code, field: answer.body.error?.details?.field }).toEqual({
        status: 422,
        code: "validation_failed",
        field,
      });
    }
  });

  it("still takes a prompt with one visible character among invisible ones, and emoji joined by U+200D", async () => {
    for (const prompt of ["\u200Ba\u200B", "👨\u200D👩\u200D👧", "\u00A0x", "e\u0301"]) {
      const answer = await t.rest("POST", "/api/v1/images/generations", { key, body: { prompt, model_id: 45 } });
      expect(answer.status, prompt).toBe(200);
    }
  });
});
