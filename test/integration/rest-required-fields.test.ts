/**
 * Required input fields are non-null in the schema (issue 21 §1), so GraphQL refuses an input
 * that lacks one before the service sees it. The REST shims run GraphQL operations, yet a REST
 * body lacking a required field must keep the spec's status and message (docs/api/generation.md
 * §7, docs/api/cloud.md §7), in the service's order of checks: key and scope first, then the
 * service's first validation error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";

const MODEL_ID = "model_id must be one of: 52, 51, 67, 69, 39, 45";
const PROMPT = "prompt must be a non-empty string";

describe("REST bodies lacking a required field", () => {
  let t: TestStack;
  let key: string;
  let accountId: string;
  beforeAll(async () => {
    t = await startTestStack();
    const created = await t.createKey("100");
    key = created.key;
    accountId = created.account_id;
    // A CDN order, so the purge paths below name a domain of a real shape.
    const order = await t.rest("POST", "/openapi/v1/orders", {
      key,
      body: {
        client_order_no: "req-1",
        product_id: "prd_cdn_standard",
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "c1" },
        metadata: { domain: "req.example.com" },
      },
    });
    expect(order.status).toBe(201);
  });
  afterAll(() => t?.close());

  async function balance(): Promise<number> {
    return (await t.rest("GET", "/api/v1/usage", { key })).body.data.balance;
  }

  it.each([
    ["a video body without prompt", "/api/v1/video/generations", {}, PROMPT],
    ["a video body with a null prompt", "/api/v1/video/generations", { prompt: null, model_id: 52 }, PROMPT],
    ["an image body without prompt", "/api/v1/images/generations", { model_id: 45 }, PROMPT],
    ["an image body without model_id", "/api/v1/images/generations", { prompt: "a lighthouse" }, MODEL_ID],
    ["an image body with a null model_id", "/api/v1/images/generations", { prompt: "a lighthouse", model_id: null }, MODEL_ID],
    ["an image body with a blank prompt and no model_id (prompt is checked first)", "/api/v1/images/generations", { prompt: " " }, PROMPT],
    ['an image body with model_id "abc" and no prompt (a wrong JSON type comes first)', "/api/v1/images/generations", { model_id: "abc" }, MODEL_ID],
  ])("answers %s with the spec's 400 and charges nothing", async (_, path, body, message) => {
    const answer = await t.rest("POST", path, { key, body });
    expect([answer.status, answer.body]).toEqual([400, { code: 400, message }]);
    expect(await balance()).toBe(100);
  });

  it("checks the key and the generation scope before a missing prompt, as the service does", async () => {
    const noKey = await t.rest("POST", "/api/v1/video/generations", { body: {} });
    expect([noKey.status, noKey.body]).toEqual([401, { code: 401, message: "Invalid or missing API key" }]);
    const { key: cloudOnly } = await t.createKey("10", { scopes: ["orders:read"] });
    const noScope = await t.rest("POST", "/api/v1/video/generations", { key: cloudOnly, body: {} });
    expect([noScope.status, noScope.body]).toEqual([403, { code: 403, message: "API key lacks the generation scope" }]);
  });

  const order = { client_order_no: "req-2", product_id: "prd_cdn_standard", quantity: 1, billing_cycle: "monthly", customer: { customer_id: "c1" } };
  it.each([
    ["an empty order", "/openapi/v1/orders", {}, "client_order_no", "client_order_no is required"],
    ["an order without product_id", "/openapi/v1/orders", { ...order, product_id: undefined }, "product_id", "product_id is required"],
    ["an order with a null quantity", "/openapi/v1/orders", { ...order, quantity: null }, "quantity", "quantity is required"],
    ["an order without customer", "/openapi/v1/orders", { ...order, customer: undefined }, "customer", "customer is required"],
    ["an order without customer.customer_id", "/openapi/v1/orders", { ...order, customer: {} }, "customer.customer_id", "customer.customer_id is required"],
    [
      "an order with a blank client_order_no and no billing_cycle",
      "/openapi/v1/orders",
      { ...order, client_order_no: "", billing_cycle: undefined },
      "client_order_no",
      "client_order_no is required",
    ],
    [
      "an order with quantity 0 and no billing_cycle",
      "/openapi/v1/orders",
      { ...order, quantity: 0, billing_cycle: undefined },
      "quantity",
      "quantity must be an integer from 1 to 1000",
    ],
    ["an empty domain body", "/openapi/v1/domains", {}, "domain", "domain must be a fully qualified domain name of at most 230 characters, without wildcards"],
    [
      "a domain body with an empty origin",
      "/openapi/v1/domains",
      { domain: "new.example.com", origin: {}, protocol: "https", order_id: "ord_x", customer_id: "c1" },
      "origin.type",
      'origin.type must be "ip" or "domain"',
    ],
    ["an empty purge body", "/openapi/v1/domains/req.example.com/purge", {}, "type", 'type must be "url" or "directory"'],
    ["a purge body without targets", "/openapi/v1/domains/req.example.com/purge", { type: "url" }, "targets", "targets must be an array of 1 to 100 items"],
  ])("answers %s with the spec's 422 naming the field", async (_, path, body, field, message) => {
    const answer = await t.rest("POST", path, { key, body: JSON.parse(JSON.stringify(body)) });
    expect(answer.status).toBe(422);
    expect(answer.body.error).toEqual({ code: "validation_failed", message, details: { field } });
  });

  it("answers a purge of a malformed domain name 404 before its missing fields, as the service does", async () => {
    const answer = await t.rest("POST", "/openapi/v1/domains/not_a_host!/purge", { key, body: {} });
    expect(answer.status).toBe(404);
    expect(answer.body.error).toEqual({ code: "not_found", message: "Domain not found", details: {} });
  });

  it("checks the write scope before a missing field, as the service does (403 first)", async () => {
    const { key: readOnly } = await t.createKey("0", { scopes: ["orders:read", "domains:read"], accountId });
    const create = await t.rest("POST", "/openapi/v1/orders", { key: readOnly, body: {} });
    expect(create.status).toBe(403);
    expect(create.body.error).toEqual({ code: "forbidden", message: "API key lacks the orders:write scope", details: { scope: "orders:write" } });
    const purge = await t.rest("POST", "/openapi/v1/domains/req.example.com/purge", { key: readOnly, body: {} });
    expect(purge.body.error).toEqual({ code: "forbidden", message: "API key lacks the domains:write scope", details: { scope: "domains:write" } });
  });

  it("refuses the same input through GraphQL with a validation error naming the required field", async () => {
    const answer = await t.graphql(
      `mutation ($input: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $input) { task { id } } }`,
      { input: {} },
      key,
    );
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toHaveLength(1);
    expect(answer.body.errors[0].message).toContain('Field "prompt" of required type "String!" was not provided.');
    expect(answer.body.errors[0].extensions).toMatchObject({ code: "bad_user_input", http: { status: 400 } });
  });
});
