/**
 * Real clients against the router's `/graphql` (issue 4 items 4 and 8): Apollo Client (core, its
 * HTTP link and its normalized cache) runs the dashboard query and agrees with the REST views; and
 * `viewer` joins both subgraphs for the caller's own account while another account's fields stay
 * null.
 */
import { signSubgraphRequest } from "../../subgraphs/shared/internal-context.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { DEMO_CATALOG } from "../../src/cloud/demo-seed.ts";
import { parseYuan } from "../../src/money.ts";

const DASHBOARD = gql`
  query Dashboard {
    viewer {
      id
      balance { amount }
      spent { amount }
      tasks(first: 100) { totalCount nodes { id status price { amount } model { id name } } }
      orders(first: 100) {
        totalCount
        nodes { id status amount { amount } product { id name vendor { id name } } resource { id expiresAt } customer { customerId } }
      }
    }
  }
`;

const BOTH_SUBGRAPHS = `query Both($customerId: String!) { viewer {
  id
  balance { amount }
  tasks(first: 10) { totalCount nodes { id } }
  orders(first: 10) { totalCount nodes { id customer { customerId } } }
  customerBalance(customerId: $customerId) { customerId available { amount } }
} }`;

let t: TestStack;

interface Seeded {
  key: string;
  keyId: string;
  accountId: string;
  taskIds: string[];
  orderIds: string[];
}

/** An account with settled image tasks and active orders for customer `cust-1`. */
async function seedAccount(tasks: number, orders: number, customerYuan: string): Promise<Seeded> {
  const created = await t.createKey("50");
  await topUpCustomer(t.stack.db!, { accountId: created.account_id, customerId: "cust-1", amount: parseYuan(customerYuan) });
  const taskIds: string[] = [];
  for (let i = 0; i < tasks; i++) {
    const r = await t.rest("POST", "/api/v1/images/generations", { key: created.key, body: { prompt: `client image ${i}`, model_id: 45, count: 2 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    taskIds.push(r.body.data.task_id);
  }
  const orderIds: string[] = [];
  for (let i = 0; i < orders; i++) {
    const r = await t.rest("POST", "/openapi/v1/orders", {
      key: created.key,
      body: {
        client_order_no: `client-${i}`,
        product_id: DEMO_CATALOG.products.cdn,
        quantity: 1,
        billing_cycle: i % 2 ? "quarterly" : "monthly",
        customer: { customer_id: "cust-1" },
        metadata: { domain: `client${i}.example.com` },
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    orderIds.push(r.body.data.order_id);
  }
  for (const id of taskIds) await t.waitForTask(created.key, id);
  for (const id of orderIds) {
    await t.waitForAccount(
      created.key,
      () => t.rest("GET", `/openapi/v1/orders/${id}`, { key: created.key }),
      (r) => r.body?.data?.status === "active",
    );
  }
  return { key: created.key, keyId: created.id, accountId: created.account_id, taskIds, orderIds };
}

let alice: Seeded;
let bob: Seeded;

beforeAll(async () => {
  t = await startTestStack();
  alice = await seedAccount(3, 3, "500");
  bob = await seedAccount(1, 1, "77");
}, 60_000);
afterAll(() => t?.close());

describe("Apollo Client", () => {
  it("runs the dashboard query through its HTTP link, matches the REST views and serves a repeat from its cache", async () => {
    let httpRequests = 0;
    const client = new ApolloClient({
      link: new HttpLink({
        uri: `${t.url}/graphql`,
        headers: { authorization: `Bearer ${alice.key}` },
        fetch: (input: RequestInfo | URL, init?: RequestInit) => {
          httpRequests++;
          return fetch(input, init);
        },
      }),
      cache: new InMemoryCache(),
    });

    const first = await client.query({ query: DASHBOARD });
    expect(first.error).toBeUndefined();
    expect(httpRequests).toBe(1);
    const viewer = (first.data as any).viewer;
    expect(viewer.id).toBe(alice.accountId);
    expect(viewer.tasks.totalCount).toBe(3);
    expect(viewer.tasks.nodes.map((n: any) => n.id).sort()).toEqual([...alice.taskIds].sort());
    expect(viewer.orders.totalCount).toBe(3);
    expect(viewer.orders.nodes.map((n: any) => n.id).sort()).toEqual([...alice.orderIds].sort());

    // The generation REST view of the same key agrees on money and tasks.
    const usage = await t.rest("GET", "/api/v1/usage", { key: alice.key });
    expect(usage.status).toBe(200);
    expect(Number(viewer.balance.amount)).toBe(usage.body.data.balance);
    expect(Number(viewer.spent.amount)).toBe(usage.body.data.spent);
    expect(viewer.tasks.nodes.map((n: any) => n.id)).toEqual(usage.body.data.tasks.map((task: any) => task.task_id));
    for (const node of viewer.tasks.nodes) {
      const rest = usage.body.data.tasks.find((task: any) => task.task_id === node.id);
      expect(Number(node.price.amount)).toBe(rest.price);
      expect(node.model).toMatchObject({ __typename: "Model", id: rest.model_id, name: rest.model_name });
    }

    // The cloud REST view of one order agrees.
    const order = viewer.orders.nodes[0];
    const rest = await t.rest("GET", `/openapi/v1/orders/${order.id}`, { key: alice.key });
    expect(rest.status).toBe(200);
    expect(rest.body.data).toMatchObject({
      order_id: order.id,
      status: order.status.toLowerCase(),
      amount: Number(order.amount.amount),
      product_id: order.product.id,
      resource_id: order.resource.id,
      customer: { customer_id: order.customer.customerId },
    });
    expect(order.product).toMatchObject({ id: DEMO_CATALOG.products.cdn, vendor: { id: DEMO_CATALOG.vendors.nimbus } });

    // The cache normalized the entities by id: one Product and one Vendor however many orders.
    const cached = client.cache.extract() as Record<string, any>;
    expect(cached[`Account:${alice.accountId}`]).toBeDefined();
    for (const id of alice.orderIds) expect(cached[`Order:${id}`]).toBeDefined();
    expect(Object.keys(cached).filter((k) => k.startsWith("Product:"))).toEqual([`Product:${DEMO_CATALOG.products.cdn}`]);
    expect(Object.keys(cached).filter((k) => k.startsWith("Vendor:"))).toEqual([`Vendor:${DEMO_CATALOG.vendors.nimbus}`]);

    // A second query with cache-first is answered from the cache: no HTTP request.
    const second = await client.query({ query: DASHBOARD, fetchPolicy: "cache-first" });
    expect(httpRequests).toBe(1);
    expect(second.data).toEqual(first.data);

    // network-only goes to the router again and finds the same data.
    const third = await client.query({ query: DASHBOARD, fetchPolicy: "network-only" });
    expect(httpRequests).toBe(2);
    expect(third.data).toEqual(first.data);
    client.stop();
  });
});

describe("viewer across both subgraphs", () => {
  it("returns the generation and cloud fields of the caller's own account in one request", async () => {
    const { status, body } = await t.graphql(BOTH_SUBGRAPHS, { customerId: "cust-1" }, alice.key);
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    const viewer = body.data.viewer;
    expect(viewer.id).toBe(alice.accountId);
    // Generation subgraph: the account's balance and the key's tasks.
    const usage = await t.rest("GET", "/api/v1/usage", { key: alice.key });
    expect(Number(viewer.balance.amount)).toBe(usage.body.data.balance);
    expect(viewer.tasks.totalCount).toBe(alice.taskIds.length);
    expect(viewer.tasks.nodes.map((n: any) => n.id).sort()).toEqual([...alice.taskIds].sort());
    // Cloud subgraph: the account's orders and its customer's balance.
    expect(viewer.orders.totalCount).toBe(alice.orderIds.length);
    expect(viewer.orders.nodes.map((n: any) => n.id).sort()).toEqual([...alice.orderIds].sort());
    const balance = await t.rest("GET", "/openapi/v1/billing/balance?customer_id=cust-1", { key: alice.key });
    expect(balance.status).toBe(200);
    expect(viewer.customerBalance).toEqual({ customerId: "cust-1", available: { amount: expect.any(String) } });
    expect(Number(viewer.customerBalance.available.amount)).toBe(balance.body.data.available);
  });

  it("never shows one account's fields to another account's key", async () => {
    // Bob's viewer is Bob's account: his tasks, his orders, his own customer `cust-1`.
    const { body } = await t.graphql(BOTH_SUBGRAPHS, { customerId: "cust-1" }, bob.key);
    expect(body.errors).toBeUndefined();
    const viewer = body.data.viewer;
    expect(viewer.id).toBe(bob.accountId);
    expect(viewer.tasks.nodes.map((n: any) => n.id)).toEqual(bob.taskIds);
    expect(viewer.orders.nodes.map((n: any) => n.id)).toEqual(bob.orderIds);
    const all = JSON.stringify(body);
    for (const id of [alice.accountId, ...alice.taskIds, ...alice.orderIds]) expect(all).not.toContain(id);
    // Same customer id, different account: Bob sees his customer's 77 yuan less one order, not Alice's.
    const aliceView = await t.graphql(BOTH_SUBGRAPHS, { customerId: "cust-1" }, alice.key);
    expect(viewer.customerBalance.available.amount).not.toBe(aliceView.body.data.viewer.customerBalance.available.amount);
    expect(Number(viewer.customerBalance.available.amount)).toBe(77 - 30);

    // Asking each subgraph (as the router would, signed) for Alice's Account entity with Bob's key yields nulls.
    const entities = async (audience: "generation" | "cloud", fields: string) => {
      const url = audience === "generation" ? t.stack.generationUrl! : t.stack.cloudUrl!;
      const params = signSubgraphRequest(t.stack.subgraphSecret!, {
        audience,
        query: `query($r: [_Any!]!) { _entities(representations: $r) { ... on Account { id ${fields} } } }`,
        variables: { r: [{ __typename: "Account", id: alice.accountId }] },
        headers: { authorization: `Bearer ${bob.key}`, "x-switchyard-client-ip": "127.0.0.1" },
      });
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params) });
      return response.json() as Promise<any>;
    };
    const generation = await entities(
      "generation",
      "balance { amount } spent { amount } billedSeconds billedImages tasks(first: 10) { totalCount } recentRequests(first: 5) { path }",
    );
    expect(generation.errors).toBeUndefined();
    expect(generation.data._entities).toEqual([
      { id: alice.accountId, balance: null, spent: null, billedSeconds: null, billedImages: null, tasks: null, recentRequests: null },
    ]);
    const cloud = await entities(
      "cloud",
      'orders(first: 10) { totalCount } resources(first: 10) { totalCount } customerBalance(customerId: "cust-1") { customerId }',
    );
    expect(cloud.errors).toBeUndefined();
    expect(cloud.data._entities).toEqual([{ id: alice.accountId, orders: null, resources: null, customerBalance: null }]);

    // Without a key the router gives no viewer at all.
    const anonymous = await t.graphql(BOTH_SUBGRAPHS, { customerId: "cust-1" });
    expect(anonymous.body.data?.viewer ?? null).toBeNull();
    expect(JSON.stringify(anonymous.body)).not.toContain(alice.accountId);
  });
});
