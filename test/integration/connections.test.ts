/**
 * Relay connections page both ways (issue 21 §1; docs/api/generation.md and cloud.md "Pagination"):
 * every keyset connection takes `first`/`after` and `last`/`before`, and `pageInfo` says whether
 * items lie on either side of the page. Walked through the router over GraphQL HTTP, with data
 * on every list; `Vendor.products` pages forward only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/auth/keys.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { upsertVendor } from "../../src/cloud/catalog.ts";
import { parseYuan } from "../../src/money.ts";
import { startCallbackReceiver, type CallbackReceiver } from "../support/callback-receiver.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const ADMIN_TOKEN = "admin-token-for-the-connection-tests";
let t: TestStack;
let receiver: CallbackReceiver;
let key = "";
let accountId = "";

beforeAll(async () => {
  t = await startTestStack({ ADMIN_TOKEN });
  receiver = await startCallbackReceiver();
  const owner = await t.createKey("100", { callbackUrl: receiver.url });
  key = owner.key;
  accountId = owner.account_id;
  // Two more vendors, and other accounts' keys and wallets, for the admin lists.
  for (const id of ["vnd_conn_a", "vnd_conn_b"]) await upsertVendor(t.stack.db!, { id, name: id });
  for (let i = 0; i < 3; i++) await createKey(t.stack.db!, { name: `extra ${i}` });
  for (const customer of ["c1", "c2", "c3", "c4", "c5"]) await topUpCustomer(t.stack.db!, { accountId, customerId: customer, amount: parseYuan("500") });
  for (let i = 0; i < 5; i++) {
    const task = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: `a fox ${i}`, model_id: 52 } });
    expect(task.status).toBe(200);
  }
  const orders: string[] = [];
  for (let i = 0; i < 5; i++) {
    const created = await t.rest("POST", "/openapi/v1/orders", {
      key,
      body: {
        client_order_no: `conn-${i}`,
        product_id: "prd_cdn_standard",
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: `c${i + 1}` },
        metadata: { domain: `o${i}.conn.example` },
      },
    });
    expect(created.status).toBe(201);
    orders.push(created.body.data.order_id);
  }
  for (const id of orders) {
    await t.waitForAccount(
      key,
      () => t.rest("GET", `/openapi/v1/orders/${id}`, { key }),
      (r) => r.body.data?.status === "active",
    );
  }
});

afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

/** One connection: how to ask for a page of it and where the connection is in the answer. */
interface List {
  name: string;
  /** A query taking the page arguments as `$first`, `$after`, `$last`, `$before`. */
  query: string;
  at: (data: any) => any;
  admin?: boolean;
  /** Least items the setup made. */
  atLeast: number;
}

const PAGE = `totalCount edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }`;
const ARGS = `first: $first, after: $after, last: $last, before: $before`;
const VARS = `($first: Int, $after: String, $last: Int, $before: String)`;

const LISTS: List[] = [
  { name: "Query.tasks", query: `query${VARS} { c: tasks(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, atLeast: 5 },
  { name: "Account.tasks", query: `query${VARS} { viewer { c: tasks(${ARGS}) { ${PAGE} } } }`, at: (d) => d.viewer.c, atLeast: 5 },
  { name: "Query.orders", query: `query${VARS} { c: orders(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, atLeast: 5 },
  { name: "Account.orders", query: `query${VARS} { viewer { c: orders(${ARGS}) { ${PAGE} } } }`, at: (d) => d.viewer.c, atLeast: 5 },
  { name: "Query.resources", query: `query${VARS} { c: resources(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, atLeast: 5 },
  { name: "Account.resources", query: `query${VARS} { viewer { c: resources(${ARGS}) { ${PAGE} } } }`, at: (d) => d.viewer.c, atLeast: 5 },
  { name: "Query.transactions", query: `query${VARS} { c: transactions(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, atLeast: 10 },
  { name: "Query.vendors", query: `query${VARS} { c: vendors(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, atLeast: 4 },
  { name: "Query.products", query: `query${VARS} { c: products(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, atLeast: 4 },
  { name: "Query.adminApiKeys", query: `query${VARS} { c: adminApiKeys(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, admin: true, atLeast: 4 },
  {
    name: "Query.adminCustomerWallets",
    query: `query${VARS} { c: adminCustomerWallets(${ARGS}) { totalCount edges { cursor node { customerId } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`,
    at: (d) => d.c,
    admin: true,
    atLeast: 5,
  },
  { name: "Query.adminOrders", query: `query${VARS} { c: adminOrders(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, admin: true, atLeast: 5 },
  { name: "Query.adminWebhookDeliveries", query: `query${VARS} { c: adminWebhookDeliveries(${ARGS}) { ${PAGE} } }`, at: (d) => d.c, admin: true, atLeast: 5 },
];

async function page(list: List, variables: Record<string, unknown>) {
  const headers = list.admin ? { authorization: `Bearer ${ADMIN_TOKEN}` } : undefined;
  const answer = await t.graphql(list.query, variables, list.admin ? undefined : key, headers);
  expect(answer.body.errors, `${list.name} ${JSON.stringify(variables)}`).toBeUndefined();
  return list.at(answer.body.data);
}

const itemId = (edge: { node: { id?: string; customerId?: string } }) => edge.node.id ?? edge.node.customerId;

/** A vendor with one page of its products, as the Vendor.products test selects it. */
type VendorPage = {
  id: string;
  products: { nodes: { id: string }[]; pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; endCursor: string } };
};

describe("connections page both ways", () => {
  for (const list of LISTS) {
    it(`${list.name}: pages backward with last/before through exactly the items forward paging gives, with both pageInfo flags`, async () => {
      const all = await page(list, { first: 100 });
      const forward = all.edges.map(itemId);
      expect(forward.length).toBeGreaterThanOrEqual(list.atLeast);
      expect(all.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });

      // Backward, two at a time, from the end of the list.
      const backward: string[] = [];
      let before: string | null = null;
      for (let round = 0; ; round++) {
        const p = await page(list, { last: 2, before });
        expect(p.totalCount).toBe(all.totalCount);
        expect(p.pageInfo.hasNextPage, `${list.name} round ${round}: items follow this page`).toBe(before !== null);
        backward.unshift(...p.edges.map(itemId));
        expect(p.pageInfo.startCursor).toBe(p.edges[0]?.cursor ?? null);
        if (!p.pageInfo.hasPreviousPage) break;
        before = p.pageInfo.startCursor;
        expect(round).toBeLessThan(100);
      }
      expect(backward).toEqual(forward);

      // Forward, two at a time: hasPreviousPage from the second page on.
      const walked: string[] = [];
      let after: string | null = null;
      for (let round = 0; ; round++) {
        const p = await page(list, { first: 2, after });
        expect(p.pageInfo.hasPreviousPage, `${list.name} round ${round}: items precede this page`).toBe(after !== null);
        walked.push(...p.edges.map(itemId));
        if (!p.pageInfo.hasNextPage) break;
        after = p.pageInfo.endCursor;
      }
      expect(walked).toEqual(forward);

      // A page's startCursor leads back to what preceded it, and the two pages meet.
      const second = await page(list, { first: 2, after: (await page(list, { first: 2 })).pageInfo.endCursor });
      const back = await page(list, { last: 2, before: second.pageInfo.startCursor });
      expect(back.edges.map(itemId)).toEqual(forward.slice(0, 2));
      expect(back.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: true });
    });
  }

  it("refuses first or after combined with last or before with 400 invalid_request, and a last above 100 with page_size_too_large", async () => {
    const list = LISTS[2]!;
    const cursor = (await page(list, { first: 1 })).pageInfo.endCursor;
    for (const variables of [
      { first: 2, last: 2 },
      { after: cursor, last: 2 },
      { first: 2, before: cursor },
    ]) {
      const answer = await t.graphql(list.query, variables, key);
      expect(answer.status, JSON.stringify(variables)).toBe(400);
      expect(answer.body.errors[0], JSON.stringify(variables)).toMatchObject({
        message: "first and after cannot be combined with last and before",
        extensions: { code: "invalid_request", http: { status: 400 } },
      });
    }
    const tooLarge = await t.graphql(list.query, { last: 101 }, key);
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.body.errors[0].extensions).toMatchObject({ code: "page_size_too_large", argument: "last" });
    const badCursor = await t.graphql(list.query, { last: 2, before: "not-a-cursor" }, key);
    expect(badCursor.body.errors[0].extensions).toMatchObject({ code: "invalid_request", field: "cursor" });
  });

  it("pages Vendor.products forward only: hasPreviousPage stays false after a cursor", async () => {
    const query = `query($after: String) { vendor: vendors(first: 100) { nodes { id products(first: 1, after: $after) { nodes { id } pageInfo { hasNextPage hasPreviousPage endCursor } } } } }`;
    const first = await t.graphql(query, {}, key);
    const nimbus = (first.body.data.vendor.nodes as VendorPage[]).find((v) => v.id === "vnd_nimbus")!;
    expect(nimbus.products.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const next = await t.graphql(query, { after: nimbus.products.pageInfo.endCursor }, key);
    const again = (next.body.data.vendor.nodes as VendorPage[]).find((v) => v.id === "vnd_nimbus")!;
    expect(again.products.nodes[0].id).not.toBe(nimbus.products.nodes[0].id);
    expect(again.products.pageInfo.hasPreviousPage).toBe(false);
  });
});
