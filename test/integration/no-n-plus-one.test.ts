/**
 * No N+1 (issue 4 item 5; docs/architecture.md §7): a dashboard query through the router over 100 tasks and 100
 * orders runs a small, constant number of SQL statements — the same as over 10 tasks and 10
 * orders — because every entity and list resolution is batched per request (DataLoader), and the
 * router makes one fetch per subgraph.
 *
 * Counting: test/support/sql-count.ts counts only the statements run on behalf of an HTTP request,
 * by server, never the background workers'.
 */
import { measureStatements } from "../support/sql-count.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { DEMO_CATALOG } from "../../src/cloud/demo-seed.ts";
import { parseYuan } from "../../src/money.ts";

const DASHBOARD = `{ viewer { id balance { amount } spent { amount }
  tasks(first: 100) { totalCount nodes { id status price { amount } model { id name } } }
  orders(first: 100) { totalCount nodes { id status amount { amount } product { id name vendor { id name } } resource { id expiresAt } customer { customerId } } } } }`;

/** The HTTP server (by port) a piece of work runs for, when it runs for a request. */

let t: TestStack;
const ports: Record<string, number> = {};

/** An account with `tasks` image tasks and `orders` active orders, all settled. */
async function seedAccount(tasks: number, orders: number): Promise<{ key: string; accountId: string }> {
  const created = await t.createKey("1000");
  const { key, account_id: accountId } = created;
  await topUpCustomer(t.stack.db!, { accountId, customerId: "cust-dash", amount: parseYuan("100000") });
  const products = [DEMO_CATALOG.products.cdn, DEMO_CATALOG.products.compute];
  const cycles = ["monthly", "quarterly", "yearly"];
  const taskIds: string[] = [];
  const orderIds: string[] = [];
  // Real submissions through the router, ten at a time.
  for (let start = 0; start < Math.max(tasks, orders); start += 10) {
    const batch: Promise<void>[] = [];
    for (let i = start; i < start + 10; i++) {
      if (i < tasks) {
        batch.push(
          t.rest("POST", "/api/v1/images/generations", { key, body: { prompt: `dashboard image ${i}`, model_id: 45 } }).then((r) => {
            expect(r.status, JSON.stringify(r.body)).toBe(200);
            taskIds.push(r.body.data.task_id);
          }),
        );
      }
      if (i < orders) {
        const productId = products[i % products.length]!;
        batch.push(
          t
            .rest("POST", "/openapi/v1/orders", {
              key,
              body: {
                client_order_no: `dash-${i}`,
                product_id: productId,
                quantity: 1,
                billing_cycle: cycles[i % cycles.length],
                customer: { customer_id: "cust-dash" },
                metadata: productId === DEMO_CATALOG.products.cdn ? { domain: `site${i}.example.com` } : {},
              },
            })
            .then((r) => {
              expect(r.status, JSON.stringify(r.body)).toBe(201);
              orderIds.push(r.body.data.order_id);
            }),
        );
      }
    }
    await Promise.all(batch);
  }
  // Settled: every task terminal, every order active with its resource.
  await t.waitForAccount(
    key,
    () => t.stack.db!("tasks").where("key_id", created.id).whereIn("status", [1, 2]).count({ n: "*" }).first(),
    (row) => Number(row?.n) === tasks,
    30_000,
  );
  await t.waitForAccount(
    key,
    () => t.stack.db!("orders").where({ account_id: accountId, status: "active" }).count({ n: "*" }).first(),
    (row) => Number(row?.n) === orders,
    30_000,
  );
  return { key, accountId };
}

/** Runs the dashboard query once; returns its body, the SQL statements run for it and the HTTP requests each server received. */
async function measureDashboard(key: string) {
  const { result: response, statements, requests } = await measureStatements(t.stack.db!, () => t.graphql(DASHBOARD, {}, key));
  return { response, statements, requests };
}

const portOf = (url: string) => Number(new URL(url).port);
const perServer = (items: { port: number | undefined }[]) => ({
  router: items.filter((s) => s.port === ports.router).length,
  generation: items.filter((s) => s.port === ports.generation).length,
  cloud: items.filter((s) => s.port === ports.cloud).length,
  other: items.filter((s) => s.port !== ports.router && s.port !== ports.generation && s.port !== ports.cloud).length,
});

let small: { key: string; accountId: string };
let large: { key: string; accountId: string };

beforeAll(async () => {
  // Over HTTP (not in-process), so each subgraph's statements and fetches are seen by server.
  t = await startTestStack({ SUBGRAPH_TRANSPORT: "http" });
  ports.router = portOf(t.url);
  ports.generation = portOf(t.stack.generationUrl!);
  ports.cloud = portOf(t.stack.cloudUrl!);
  small = await seedAccount(10, 10);
  large = await seedAccount(100, 100);
}, 120_000);
afterAll(async () => {
  await t?.close();
});

describe("the dashboard query", () => {
  it("runs the same small number of SQL statements over 100 tasks and 100 orders as over 10 and 10", async () => {
    // Warm both keys the same way (authentication caches, if any, behave alike for both).
    await measureDashboard(small.key);
    await measureDashboard(large.key);

    const few = await measureDashboard(small.key);
    const many = await measureDashboard(large.key);

    for (const [run, size] of [
      [few, 10],
      [many, 100],
    ] as const) {
      expect(run.response.status).toBe(200);
      expect(run.response.body.errors).toBeUndefined();
      const viewer = run.response.body.data.viewer;
      expect(viewer.tasks.totalCount).toBe(size);
      expect(viewer.tasks.nodes).toHaveLength(size);
      expect(viewer.tasks.nodes.every((n: any) => n.model.id === 45 && n.model.name === "image-45")).toBe(true);
      expect(viewer.orders.totalCount).toBe(size);
      expect(viewer.orders.nodes).toHaveLength(size);
      for (const order of viewer.orders.nodes) {
        expect(order.status).toBe("ACTIVE");
        expect(order.product.vendor.name).toEqual(expect.any(String));
        expect(order.resource.id).toMatch(/^res_/);
        expect(order.customer.customerId).toBe("cust-dash");
      }
      // Both demo products, of both demo vendors, were resolved.
      expect(new Set(viewer.orders.nodes.map((o: any) => o.product.vendor.id)).size).toBe(2);
    }

    const fewCount = few.statements.length;
    const manyCount = many.statements.length;
    // Measured: 8 statements for 10 tasks + 10 orders and 8 for 100 + 100. Generation subgraph
    // (3): key lookup, the usage totals the query asks for (balance, spent: over HTTP they are
    // not read with the key, subgraphs/shared/auth.ts), the task page with its stored count.
    // Cloud subgraph (5): key lookup, the order page with its count, one `in` list each for
    // products, vendors and resources. The request-log row is written by the request log's own
    // batch, outside every request (src/generation/usage.ts).
    expect(manyCount, many.statements.map((s) => s.sql).join("\n")).toBe(fewCount);
    expect(perServer(many.statements)).toEqual(perServer(few.statements));
    expect(manyCount).toBeLessThanOrEqual(20);
    // Every statement ran in a subgraph: the router has no database.
    expect(perServer(many.statements).router).toBe(0);
    expect(perServer(many.statements).other).toBe(0);
    // One entity kind, one statement: products, vendors and resources are each read once.
    for (const table of ["products", "vendors", "resources"]) {
      expect(
        many.statements.filter((s) => new RegExp(`from [\`"]${table}[\`"]`).test(s.sql)),
        table,
      ).toHaveLength(1);
    }
  });

  it("makes one fetch per subgraph: the router batches the Account entity fetch", async () => {
    const run = await measureDashboard(large.key);
    expect(run.response.body.errors).toBeUndefined();
    // One request to the router, one to the generation subgraph (viewer, balance, spent, tasks),
    // one `_entities` fetch to the cloud subgraph (Account.orders and everything under it).
    expect(perServer(run.requests)).toEqual({ router: 1, generation: 1, cloud: 1, other: 0 });
  });
});
