/**
 * No N+1 under lists (issue "Trust at the edges" item 3): `Vendor.products`, `Order.deliveries`
 * and `Domain.purgeTasks` are read for every parent of a request at once (a DataLoader per
 * request, one SQL statement per page of parents, window functions), so a request over 100
 * parents runs as many SQL statements as one over 10. Counting as test/support/sql-count.ts
 * describes; the subgraphs run over HTTP so the cloud subgraph's statements are told apart.
 */
import { signSubgraphRequest } from "../../subgraphs/shared/internal-context.ts";
import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { measureStatements, type CountedStatement } from "../support/sql-count.ts";
import { startCallbackReceiver, type CallbackReceiver } from "../support/callback-receiver.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { listProducts, listProductsOfVendors, upsertProduct, upsertVendor } from "../../src/cloud/catalog.ts";
import { DEMO_CATALOG } from "../../src/cloud/demo-seed.ts";
import { createDomain } from "../../src/cloud/domains.ts";
import { listPurgeTasks, purgeDomain } from "../../src/cloud/purge.ts";
import { listDeliveries } from "../../src/events/deliveries.ts";
import { parseYuan } from "../../src/money.ts";
import type { Page } from "../../src/pagination.ts";

/** What the queries below select of each parent and its list. */
type VendorView = { id: string; products: { totalCount: number; nodes: { id: string }[]; pageInfo: { hasNextPage: boolean } } };
type OrderView = { id: string; deliveries: { id: string; event: string; status: string; attempts: unknown[] }[] };
type DomainView = { domain: string; purgeTasks: { id: string }[] };

let t: TestStack;
let receiver: CallbackReceiver;
let owner: { key: string; id: string; account_id: string };
const domains: string[] = [];
const vendorIds: string[] = [];

/** Statements that ran in the cloud subgraph. */
const inCloud = (statements: CountedStatement[]) => statements.filter((s) => s.port === Number(new URL(t.stack.cloudUrl!).port));

/**
 * Runs `run` once to warm caches, then at 10 parents and at `many`.
 * @returns both measurements, and each with its parent count
 */
async function atTenAndMany<T>(run: (n: number) => Promise<T>, many = 100): Promise<{ few: T; many: T; both: [T, number][] }> {
  await run(10);
  const few = await run(10);
  const measured = await run(many);
  return {
    few,
    many: measured,
    both: [
      [few, 10],
      [measured, many],
    ],
  };
}

/** POSTs an operation to the cloud subgraph itself, signed as the router signs (it serves nothing else). */
async function cloudSubgraph(query: string, variables: Record<string, unknown>) {
  const params = signSubgraphRequest(t.stack.subgraphSecret!, {
    audience: "cloud",
    query,
    variables,
    headers: { authorization: `Bearer ${owner.key}`, "x-switchyard-client-ip": "127.0.0.1" },
  });
  const response = await fetch(t.stack.cloudUrl!, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params) });
  return { status: response.status, body: (await response.json()) as any };
}

beforeAll(async () => {
  t = await startTestStack({ SUBGRAPH_TRANSPORT: "http" });
  const db = t.stack.db!;
  // A callback receiver that accepts everything: each order event becomes a delivered callback.
  receiver = await startCallbackReceiver();
  owner = await t.createKey("1000", { callbackUrl: receiver.url });
  await topUpCustomer(db, { accountId: owner.account_id, customerId: "cust-lists", amount: parseYuan("100000") });

  // 110 vendors: a vendor of 0, 1, 2 or 3 products in turn.
  for (let i = 0; i < 110; i++) {
    const vendor = await upsertVendor(db, { name: `Vendor ${i}` });
    vendorIds.push(vendor.id);
    for (let j = 0; j < i % 4; j++) {
      await upsertProduct(db, { vendorId: vendor.id, category: "cdn", name: `Product ${i}.${j}`, billingCycles: [{ cycle: "monthly", price: 1_000 }] });
    }
  }

  // 100 orders through the router, ten at a time, each with its callbacks.
  const orderIds: string[] = [];
  for (let start = 0; start < 100; start += 10) {
    await Promise.all(
      Array.from({ length: 10 }, (_, k) => start + k).map(async (i) => {
        const response = await t.rest("POST", "/openapi/v1/orders", {
          key: owner.key,
          body: {
            client_order_no: `lists-${i}`,
            product_id: DEMO_CATALOG.products.cdn,
            quantity: 1,
            billing_cycle: "monthly",
            customer: { customer_id: "cust-lists" },
            metadata: { domain: `order${i}.example.com` },
          },
        });
        expect(response.status, JSON.stringify(response.body)).toBe(201);
        orderIds.push(response.body.data.order_id);
      }),
    );
  }
  // Settled: every order active, every event published and every callback delivered.
  const count = (query: Knex.QueryBuilder) =>
    query
      .count({ n: "*" })
      .first()
      .then((row) => Number(row?.n));
  await t.waitForAccount(
    owner.key,
    () => count(db("orders").where({ account_id: owner.account_id, status: "active" })),
    (n) => n === 100,
    60_000,
  );
  await waitUntil(
    async () => [
      await count(db("outbox").where("account_id", owner.account_id).whereNull("published_at")),
      await count(db("webhook_deliveries").where({ account_id: owner.account_id, status: "pending" })),
    ],
    ([unpublished, pending]) => unpublished === 0 && pending === 0,
    60_000,
  );

  // 100 domains on one active CDN order, with 0-3 purge tasks each.
  const caller = { keyId: owner.id, accountId: owner.account_id };
  for (let i = 0; i < 100; i++) {
    const name = `site${i}.lists.example.com`;
    await createDomain(
      db,
      caller,
      { domain: name, origin: { type: "ip", address: "93.184.216.34" }, protocol: "https", orderId: orderIds[0], customerId: "cust-lists" },
      { stepMs: 50, checkOriginHost: async () => ({ ok: false }) },
    );
    for (let j = 0; j < i % 4; j++) await purgeDomain(db, caller, name, { type: "url", targets: [`https://${name}/${j}.html`] }, { stepMs: 50 });
    domains.push(name);
  }
}, 180_000);

afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe("lists under many parents", () => {
  it("reads Vendor.products of 100 vendors with as many SQL statements as of 10", async () => {
    const query = (n: number) => `{ vendors(first: ${n}) { nodes { id products(first: 2) { totalCount nodes { id name } pageInfo { hasNextPage } } } } }`;
    const run = (n: number) => measureStatements(t.stack.db!, () => t.graphql(query(n), {}, owner.key));
    const { few, many, both } = await atTenAndMany(run);
    for (const [measured, n] of both) {
      expect(measured.result.body.errors, JSON.stringify(measured.result.body.errors)).toBeUndefined();
      const vendors: VendorView[] = measured.result.body.data.vendors.nodes;
      expect(vendors).toHaveLength(n);
      // Each vendor's page is what listProducts gives for that vendor alone.
      for (const vendor of vendors) {
        const alone = await listProducts(t.stack.db!, { vendorId: vendor.id }, { first: 2 });
        expect(vendor.products.totalCount).toBe(alone.totalCount);
        expect(vendor.products.nodes.map((p) => p.id)).toEqual(alone.items.map((p) => p.id));
        expect(vendor.products.pageInfo.hasNextPage).toBe(alone.hasNextPage);
      }
    }
    expect(new Set((many.result.body.data.vendors.nodes as VendorView[]).map((v) => v.products.totalCount))).toEqual(new Set([0, 1, 2, 3]));
    const fewCloud = inCloud(few.statements);
    const manyCloud = inCloud(many.statements);
    expect(manyCloud.length, manyCloud.map((s) => s.sql).join("\n")).toBe(fewCloud.length);
    // Key lookup, vendor page and count, and one statement for every vendor's products.
    expect(manyCloud.filter((s) => /from [`"]products[`"]/.test(s.sql))).toHaveLength(1);
    expect(manyCloud.length).toBeLessThanOrEqual(5);
  });

  it("reads Order.deliveries of 100 orders with as many SQL statements as of 10", async () => {
    const query = (n: number) => `{ orders(first: ${n}) { nodes { id deliveries(first: 5) { id event status attempts { status } } } } }`;
    const run = (n: number) => measureStatements(t.stack.db!, () => t.graphql(query(n), {}, owner.key));
    const { few, many, both } = await atTenAndMany(run);
    for (const [measured, n] of both) {
      expect(measured.result.body.errors, JSON.stringify(measured.result.body.errors)).toBeUndefined();
      const orders: OrderView[] = measured.result.body.data.orders.nodes;
      expect(orders).toHaveLength(n);
      for (const order of orders) {
        const alone = await listDeliveries(t.stack.db!, { accountId: owner.account_id, aggregateId: order.id, first: 5 });
        expect(alone.length).toBeGreaterThan(0);
        expect(order.deliveries.map((d) => [d.id, d.event, d.status, d.attempts.length])).toEqual(
          alone.map((d) => [String(d.id), d.event, d.status, d.attempts.length]),
        );
      }
    }
    const fewCloud = inCloud(few.statements);
    const manyCloud = inCloud(many.statements);
    expect(manyCloud.length, manyCloud.map((s) => s.sql).join("\n")).toBe(fewCloud.length);
    // One statement for the deliveries of every order, one for all their attempts.
    expect(manyCloud.filter((s) => /from [`"]webhook_deliveries[`"]/.test(s.sql))).toHaveLength(1);
    expect(manyCloud.filter((s) => /from [`"]webhook_attempts[`"]/.test(s.sql))).toHaveLength(1);
  });

  it("reads Domain.purgeTasks of 100 domain entities with as many SQL statements as of 10", async () => {
    const query = `query D($r: [_Any!]!) { _entities(representations: $r) { ... on Domain { domain reviewStatus purgeTasks(first: 2) { id domain status createdAt } } } }`;
    const run = (n: number) =>
      measureStatements(t.stack.db!, () => cloudSubgraph(query, { r: domains.slice(0, n).map((domain) => ({ __typename: "Domain", domain })) }));
    const { few, many, both } = await atTenAndMany(run);
    const caller = { accountId: owner.account_id };
    for (const [measured, n] of both) {
      expect(measured.result.body.errors, JSON.stringify(measured.result.body.errors)).toBeUndefined();
      const entities: DomainView[] = measured.result.body.data._entities;
      expect(entities.map((d) => d.domain)).toEqual(domains.slice(0, n));
      for (const domain of entities) {
        const alone = await listPurgeTasks(t.stack.db!, caller, domain.domain, 2, 50);
        expect(domain.purgeTasks.map((p) => p.id)).toEqual(alone.map((p) => p.id));
      }
    }
    expect(new Set((many.result.body.data._entities as DomainView[]).map((d) => d.purgeTasks.length))).toEqual(new Set([0, 1, 2]));
    expect(many.statements.length, many.statements.map((s) => s.sql).join("\n")).toBe(few.statements.length);
    // Key lookup, one statement for the 100 domains and one for their purge tasks.
    expect(many.statements.filter((s) => /from [`"]domains[`"]/.test(s.sql))).toHaveLength(1);
    expect(many.statements.filter((s) => /from [`"]purge_tasks[`"]/.test(s.sql))).toHaveLength(1);
  });

  it("reads Domain.purgeTasks of 30 aliased domains through the router with as many statements as of 10", async () => {
    const query = (n: number) =>
      `{ ${domains
        .slice(0, n)
        .map((d, i) => `d${i}: domain(domain: "${d}") { domain purgeTasks { id } }`)
        .join(" ")} }`;
    const run = (n: number) => measureStatements(t.stack.db!, () => t.graphql(query(n), {}, owner.key));
    const { few, many } = await atTenAndMany(run, 30);
    expect(many.result.body.errors).toBeUndefined();
    expect(Object.keys(many.result.body.data)).toHaveLength(30);
    expect(
      inCloud(many.statements).length,
      inCloud(many.statements)
        .map((s) => s.sql)
        .join("\n"),
    ).toBe(inCloud(few.statements).length);
  });

  it("pages each vendor's products in one statement exactly as listProducts pages one vendor, cursors included", async () => {
    const db = t.stack.db!;
    const sample = vendorIds.slice(0, 12);
    // Per-parent pages go forward only and do not tell what precedes them (Vendor.products' hasPreviousPage is false).
    const forwardOnly = ({ hasPreviousPage: _unknown, ...rest }: Page<unknown>) => rest;
    for (const first of [1, 2, 3]) {
      // The first page of every vendor, then the page after each vendor's first item.
      const pages = await listProductsOfVendors(db, sample, { first });
      for (const vendorId of sample) {
        const alone = await listProducts(db, { vendorId }, { first });
        expect(pages.get(vendorId), `${vendorId} first ${first}`).toEqual(forwardOnly(alone));
        const cursor = alone.cursors[0];
        if (!cursor) continue;
        // One cursor for every vendor: each page is what listProducts gives with that cursor.
        const after = await listProductsOfVendors(db, sample, { first, after: cursor });
        for (const other of sample) {
          expect(after.get(other), `${other} first ${first} after ${vendorId}'s first`).toEqual(
            forwardOnly(await listProducts(db, { vendorId: other }, { first, after: cursor })),
          );
        }
      }
    }
  });
});
