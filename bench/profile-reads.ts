/**
 * The SQL reads of one README dashboard, run directly (no HTTP, no GraphQL), for A/B of the read
 * paths on a busy machine (bench/README.md "Round 3 step A"): the same calls the resolvers make —
 * the key lookup (`lookups` times: 2 before one lookup per client request, 1 after), usage
 * totals (read with the key in a tree that has `authenticateWithTotals`: Round 3 step I), the first 20 tasks and 20 orders with their stored counts, the customer balance,
 * products, vendors and resources by id — inside a request budget, as a subgraph runs them.
 * Prints statements and process CPU µs per dashboard.
 * Usage: `node --import tsx bench/profile-reads.ts <tree> <dataDir> [lookups=1] [dashboards=2000]`,
 * run from any tree: `<tree>` is the checkout whose read code is measured; `<dataDir>` is seeded
 * at 1x by this tree's bench/seed.ts when it holds no `key.txt`, so several trees read the same rows.
 */
import fs from "node:fs";
import path from "node:path";
import { BENCH_CUSTOMER, seedToScale } from "./seed.ts";

const [treeArg, dataDirArg, lookupsArg, countArg] = process.argv.slice(2);
if (!treeArg || !dataDirArg) {
  console.error("usage: node --import tsx bench/profile-reads.ts <tree> <dataDir> [lookups=1] [dashboards=2000]");
  process.exit(2);
}
const tree = path.resolve(treeArg);
const dataDir = path.resolve(dataDirArg);
const lookups = Number(lookupsArg ?? 1);
const dashboards = Number(countArg ?? 2000);
const keyFile = path.join(dataDir, "key.txt");
if (!fs.existsSync(keyFile)) {
  fs.mkdirSync(dataDir, { recursive: true });
  const state = await seedToScale({ dataDir }, 1);
  fs.writeFileSync(keyFile, state.keys[0]!.key);
}
const key = fs.readFileSync(keyFile, "utf8").trim();

const { openDb } = await import(`${tree}/src/db/index.ts`);
const { enforceRequestBudgets, runWithBudget, RequestBudget } = await import(`${tree}/src/db/budget.ts`);
const { authenticate, authenticateWithTotals } = await import(`${tree}/src/auth/keys.ts`);
const { usageTotals } = await import(`${tree}/src/generation/usage.ts`);
const { listTasks } = await import(`${tree}/src/generation/tasks/reads.ts`);
const { listOrders } = await import(`${tree}/src/cloud/orders/reads.ts`);
const { getCustomerBalance } = await import(`${tree}/src/cloud/customers.ts`);
const { getProductsByIds, getVendorsByIds } = await import(`${tree}/src/cloud/catalog.ts`);
const { getResourcesByIds } = await import(`${tree}/src/cloud/resources.ts`);

const db = openDb({ databaseUrl: null, dataDir });
enforceRequestBudgets(db);
let statements = 0;
db.on("query", () => statements++);

/** One dashboard's reads, in the order and grouping the two subgraphs run them. */
async function dashboard(): Promise<number> {
  // A tree with Round 3 step I reads the totals with the key (a read-only request), else on their own.
  const withKey = authenticateWithTotals ? await authenticateWithTotals(db, `Bearer ${key}`) : null;
  let caller = withKey ? withKey.caller : await authenticate(db, `Bearer ${key}`);
  for (let i = 1; i < lookups; i++) caller = await authenticate(db, `Bearer ${key}`);
  const [, tasks, orders] = await Promise.all([
    withKey ? withKey.totals : usageTotals(db, caller),
    listTasks(db, caller, { first: 20 }),
    listOrders(db, caller, { first: 20 }),
  ]);
  await getCustomerBalance(db, caller.accountId, BENCH_CUSTOMER);
  const products = await getProductsByIds(db, [...new Set<string>(orders.items.map((o: { productId: string }) => o.productId))]);
  await Promise.all([
    getVendorsByIds(db, [...new Set<string>(products.map((p: { vendorId: string }) => p.vendorId))]),
    getResourcesByIds(
      db,
      caller,
      orders.items.map((o: { resourceId: string | null }) => o.resourceId).filter((id: string | null): id is string => id !== null),
    ),
  ]);
  return tasks.items.length + orders.items.length;
}

for (let i = 0; i < 300; i++) await runWithBudget(new RequestBudget(), dashboard);
statements = 0;
const cpuBefore = process.cpuUsage();
for (let i = 0; i < dashboards; i++) await runWithBudget(new RequestBudget(), dashboard);
const cpu = process.cpuUsage(cpuBefore);
const perDashboard = statements / dashboards;
console.log(
  JSON.stringify({
    tree,
    lookups,
    dashboards,
    rows: await dashboard(),
    statements: perDashboard,
    cpuUsPerDashboard: Math.round((cpu.user + cpu.system) / dashboards),
  }),
);
await db.destroy();
