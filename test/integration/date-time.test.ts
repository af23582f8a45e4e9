/**
 * Timestamps became `DateTime` (issue 21 §1) without changing a byte on the wire: through the
 * router, GraphQL and the REST shims answer exactly the text each row stores.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { parseYuan } from "../../src/money.ts";

const RFC3339_UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("DateTime on the wire", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t?.close());

  it("answers a task's and a request's times as stored, through GraphQL and REST", async () => {
    const { key } = await t.createKey("100");
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a heron", model_id: 52 } });
    expect(submitted.status).toBe(200);
    const id = submitted.body.data.task_id;
    await t.waitForTask(key, id); // a finished task: its times no longer move between the reads below
    const gql = await t.graphql(`query ($id: ID!) { task(id: $id) { createdAt updatedAt } viewer { recentRequests(first: 1) { at } } }`, { id }, key);
    expect(gql.body.errors).toBeUndefined();
    const row = await t.stack.db!("tasks").where({ id }).first("created_at", "updated_at");
    expect(gql.body.data.task).toEqual({ createdAt: row.created_at, updatedAt: row.updated_at });
    expect(gql.body.data.task.createdAt).toMatch(RFC3339_UTC_MS);
    const rest = await t.rest("GET", `/api/v1/tasks/${id}`, { key });
    expect([rest.body.data.created_at, rest.body.data.updated_at]).toEqual([row.created_at, row.updated_at]);
    // The request log is written in batches: its time is checked for its form.
    expect(gql.body.data.viewer.recentRequests[0].at).toMatch(RFC3339_UTC_MS);
  });

  it("answers an order's times as stored, through GraphQL and REST", async () => {
    const { key, account_id } = await t.createKey("0");
    await topUpCustomer(t.stack.db!, { accountId: account_id, customerId: "c1", amount: parseYuan("100") });
    const created = await t.rest("POST", "/openapi/v1/orders", {
      key,
      body: {
        client_order_no: "dt-1",
        product_id: "prd_cdn_standard",
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "c1" },
        metadata: { domain: "dt.example.com" },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.order_id;
    await t.waitForAccount(
      key,
      () => t.rest("GET", `/openapi/v1/orders/${id}`, { key }),
      (answer) => answer.body.data.status === "active",
    );
    const gql = await t.graphql(`query ($id: ID!) { order(id: $id) { createdAt updatedAt resource { expiresAt } } }`, { id }, key);
    expect(gql.body.errors).toBeUndefined();
    const order = await t.stack.db!("orders").where({ id }).first("created_at", "updated_at", "resource_id");
    const resource = await t.stack.db!("resources").where({ id: order.resource_id }).first("expires_at");
    expect(gql.body.data.order).toEqual({ createdAt: order.created_at, updatedAt: order.updated_at, resource: { expiresAt: resource.expires_at } });
    const rest = await t.rest("GET", `/openapi/v1/orders/${id}`, { key });
    expect([rest.body.data.created_at, rest.body.data.updated_at]).toEqual([order.created_at, order.updated_at]);
  });
});
