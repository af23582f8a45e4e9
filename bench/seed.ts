/**
 * Bench data (bench/README.md "Data"): keys, tasks and orders written through the real domain
 * services of src/ while no server runs on the database, so every row that moves money has its
 * ledger entries and `switchyard verify` stays clean.
 *
 * Scale 1 ("1x") = {@link ACCOUNTS} accounts, each with {@link PER_ACCOUNT} settled tasks and
 * {@link PER_ACCOUNT} active orders; scale s has s times as many per account, except that the
 * 1,000x row holds 1,000,000 tasks in all ({@link tasksPerAccount}). The join rows go round every
 * account's key; the first account is the read scenario's viewer. Seeding is incremental: going from 1x to 10x adds the difference.
 * Up to {@link SERVICE_ROWS} rows per account and list go through the services; the rest
 * ({@link bulkHistory}) are copies of those rows inserted in bulk, money and running totals
 * included, so a million rows take a minute, not an hour, and `verify` stays clean.
 */
import pLimit from "p-limit";
import { openDb, migrate, nowIso, type Db } from "../src/db/index.ts";
import { newId } from "../src/ids.ts";
import { addAccountOrders, addKeyTotals, taskUnits } from "../src/ledger/totals.ts";
import { toTaskRecord } from "../src/generation/tasks/index.ts";
import { authenticate, createKey, type Caller } from "../src/auth/keys.ts";
import { parseYuan } from "../src/money.ts";
import { createGenerationService } from "../src/generation/tasks/index.ts";
import { createOrderService } from "../src/cloud/orders/index.ts";
import { seedDemoCatalog } from "../src/cloud/demo-seed.ts";
import { topUpCustomer } from "../src/cloud/customers.ts";
import type { GenerationUpstream } from "../src/generation/upstream/types.ts";

/**
 * Accounts at every scale, each with its own key, tasks and orders; the join rows go round all of
 * them (issue 25: no stack gains from caching one key). The first is the read scenario's viewer.
 */
export const ACCOUNTS = 8;
/** Tasks and orders per account at 1x: the dashboard shows 20 of each. */
export const PER_ACCOUNT = 20;
/** Rows per account and list written through the services (100x); more are bulk copies. */
export const SERVICE_ROWS = 100 * PER_ACCOUNT;

/** Tasks per account at a scale: linear, but 1,000,000 in all at 1,000x (the figure). */
export function tasksPerAccount(scale: number): number {
  return scale >= 1000 ? Math.ceil(1_000_000 / ACCOUNTS) : scale * PER_ACCOUNT;
}

/** The cloud customer whose wallet pays the bench orders (and whose balance the dashboard reads). */
export const BENCH_CUSTOMER = "cust-bench";
/** The product of the bench orders: the demo CDN product (unlimited stock). */
const ORDER_PRODUCT = "prd_cdn_standard";
/** Opening balance of every bench key, milli-yuan (50 million yuan): enough for any run at any scale. */
export const KEY_BALANCE = parseYuan("50000000");
const CUSTOMER_TOPUP_YUAN = "10000000";

/** Where the database is: what {@link openDb} takes. */
export interface DbLocation {
  databaseUrl?: string;
  dataDir: string;
}

/** A key made for the bench; `key` is the bearer secret. */
export interface BenchKey {
  id: string;
  key: string;
  accountId: string;
}

/** What the read and join scenarios need to know about the seeded data. */
export interface SeedState {
  /** One key per account; `keys[0]` is the dashboard viewer. */
  keys: BenchKey[];
  /** A settled task of `keys[0]`: the read scenario's `task(id)`. */
  taskId: string;
  /** Current scale (tasks and orders per account = scale × {@link PER_ACCOUNT}). */
  scale: number;
  /** Rows in the whole `tasks` and `orders` tables after seeding. */
  totals: { tasks: number; orders: number };
}

/** An upstream that accepts at once: seeded tasks are handed over and settled without a server. */
const instantUpstream: GenerationUpstream = {
  name: "bench-seed",
  async submit(_request, taskId) {
    return { upstreamTaskId: `seed.${taskId}` };
  },
  async fetchStatus() {
    return { status: 1, result: "https://media.bench.example/seed.mp4" };
  },
};

/** Runs `work` with the database open (migrated, demo catalog seeded), then closes it. */
export async function withDb<T>(where: DbLocation, work: (db: Db) => Promise<T>): Promise<T> {
  const db = openDb(where);
  try {
    await migrate(db);
    await seedDemoCatalog(db);
    return await work(db);
  } finally {
    await db.destroy();
  }
}

/**
 * Creates keys, each with an account of its own and a generous opening balance.
 * @param count how many
 * @param name key name prefix
 * @returns the keys with their bearer secrets
 */
export async function createBenchKeys(db: Db, count: number, name: string): Promise<BenchKey[]> {
  const keys: BenchKey[] = [];
  for (let i = 0; i < count; i++) {
    const created = await createKey(db, { name: `${name}-${i}`, balance: KEY_BALANCE });
    keys.push({ id: created.id, key: created.key, accountId: created.account_id });
  }
  return keys;
}

/**
 * Grows the data to `scale` (see the module comment): settled video tasks (debit, then success)
 * and paid, provisioned orders, through the generation and order services. The outbox rows these
 * writes leave are marked published, so the server does not replay thousands of old events while
 * it is measured (nobody subscribed to them; no key has a callback URL).
 * @param where the database (no server may be running on it)
 * @param scale 1, 10, 100...: tasks and orders per account = scale × {@link PER_ACCOUNT}
 * @param previous the state of an earlier call on the same database (its keys are reused)
 * @returns the new state
 * @throws Error when a service refuses a write (then the run is not trustworthy)
 */
export async function seedToScale(where: DbLocation, scale: number, previous?: SeedState): Promise<SeedState> {
  return withDb(where, async (db) => {
    const keys = previous?.keys ?? (await createBenchKeys(db, ACCOUNTS, "bench-data"));
    const generation = createGenerationService({ db, upstream: instantUpstream, checkUrl: async () => true, pollIntervalMs: 60_000 });
    const orders = createOrderService({ db, provisionDelayMs: 0 });
    const taskTarget = Math.min(tasksPerAccount(scale), SERVICE_ROWS);
    const orderTarget = Math.min(scale * PER_ACCOUNT, SERVICE_ROWS);
    // SQLite has one writer anyway; a few in flight keep PostgreSQL busy without contention.
    const limit = pLimit(8);
    const work: Promise<unknown>[] = [];
    for (const key of keys) {
      const caller: Caller = await authenticate(db, `Bearer ${key.key}`);
      if (!previous) await topUpCustomer(db, { accountId: key.accountId, customerId: BENCH_CUSTOMER, amount: parseYuan(CUSTOMER_TOPUP_YUAN), reason: "bench" });
      const [{ n: haveTasks }] = await db("tasks").where("key_id", key.id).count({ n: "*" });
      const [{ n: haveOrders }] = await db("orders").where("account_id", key.accountId).count({ n: "*" });
      for (let i = Number(haveTasks); i < taskTarget; i++) {
        work.push(
          limit(async () => {
            const task = await generation.submit(caller, "video", { prompt: `bench task ${i}`, modelId: 52, seconds: 5 });
            const settled = await generation.applyUpstreamState(task, await instantUpstream.fetchStatus(""), 60_000);
            if (!settled) throw new Error(`seed task ${task.id} was not settled`);
          }),
        );
      }
      for (let i = Number(haveOrders); i < orderTarget; i++) {
        work.push(
          limit(() =>
            orders.create(caller, {
              clientOrderNo: `bench-${i}`,
              productId: ORDER_PRODUCT,
              quantity: 1,
              billingCycle: "monthly",
              customer: { customerId: BENCH_CUSTOMER, contact: "bench@example.com" },
              metadata: { domain: `site-${i}.bench.example` },
            }),
          ),
        );
      }
    }
    await Promise.all(work);
    // Provision every order now (delay 0): the dashboard shows each order's resource.
    while ((await orders.provisionDue()) > 0);
    for (const key of keys) await bulkHistory(db, key, tasksPerAccount(scale), scale * PER_ACCOUNT);
    await db("outbox").whereNull("published_at").update({ published_at: nowIso() });
    const viewerTask = await db("tasks").where({ key_id: keys[0]!.id, status: 1 }).orderBy("created_at", "desc").first("id");
    const [{ n: tasks }] = await db("tasks").count({ n: "*" });
    const [{ n: orderCount }] = await db("orders").count({ n: "*" });
    return { keys, taskId: viewerTask.id, scale, totals: { tasks: Number(tasks), orders: Number(orderCount) } };
  });
}

/** Rows per INSERT: knex writes a SQLite multi-row insert as a compound SELECT (at most 500 terms). */
const BULK_ROWS = 400;
/** Rows per transaction of a bulk copy. */
const BULK_TRANSACTION_ROWS = 20_000;

/**
 * Grows one account's tasks and orders to the given counts with copies of a settled task and an
 * active order the services wrote (the newest of each), in transactions of
 * {@link BULK_TRANSACTION_ROWS}: each copy with its ledger debit (`balance_after` counted down),
 * the account's or customer's balance, the key's running totals and the account's order count
 * moved in the same transaction, as the services do. The copies are older than every service row
 * (a day and more before the seeding), so the dashboard's first page still shows service rows.
 * @param tasks tasks the account should hold; `orders` likewise
 */
export async function bulkHistory(db: Db, key: BenchKey, tasks: number, orders: number): Promise<void> {
  const [{ n: haveTasks }] = await db("tasks").where("key_id", key.id).count({ n: "*" });
  const [{ n: haveOrders }] = await db("orders").where("account_id", key.accountId).count({ n: "*" });
  const oldest = Date.now() - 86_400_000 - Math.max(tasks, orders);
  const at = (i: number) => new Date(oldest + i).toISOString();
  const task = await db("tasks").where({ key_id: key.id, status: 1 }).orderBy("created_at", "desc").first();
  const { id: _taskEntryId, ...taskEntry } = (task && (await db("ledger_entries").where("ref", `task:${task.id}:debit`).first())) ?? {};
  for (let from = Number(haveTasks); task && from < tasks; from += BULK_TRANSACTION_ROWS) {
    const count = Math.min(BULK_TRANSACTION_ROWS, tasks - from);
    await db.transaction(async (trx) => {
      let balance = Number((await trx("accounts").where("id", key.accountId).first("balance")).balance);
      const rows: Record<string, unknown>[] = [];
      const entries: Record<string, unknown>[] = [];
      for (let i = from; i < from + count; i++) {
        const id = newId("task");
        balance -= Number(task.price);
        rows.push({ ...task, id, prompt: `bench history ${i}`, upstream_task_id: `seed.${id}`, created_at: at(i), updated_at: at(i) });
        entries.push({ ...taskEntry, task_id: id, ref: `task:${id}:debit`, balance_after: balance, created_at: at(i) });
      }
      await insertAll(trx, "tasks", rows);
      await insertAll(trx, "ledger_entries", entries);
      await trx("accounts").where("id", key.accountId).update({ balance });
      const units = taskUnits(toTaskRecord(task));
      await addKeyTotals(trx, key.id, {
        spent: count * Number(task.price),
        tasks: count,
        billedSeconds: count * units.billedSeconds,
        billedImages: count * units.billedImages,
      });
    });
  }
  const order = await db("orders").where({ account_id: key.accountId, status: "active" }).orderBy("created_at", "desc").first();
  const resource = order && (await db("resources").where("order_id", order.id).first());
  const { id: _orderEntryId, ...orderEntry } = (order && (await db("ledger_entries").where("ref", `order:${order.id}:pay`).first())) ?? {};
  for (let from = Number(haveOrders); order && from < orders; from += BULK_TRANSACTION_ROWS) {
    const count = Math.min(BULK_TRANSACTION_ROWS, orders - from);
    await db.transaction(async (trx) => {
      const wallet = { account_id: key.accountId, customer_id: order.customer_id };
      let balance = Number((await trx("customers").where(wallet).first("balance")).balance);
      const orderRows: Record<string, unknown>[] = [];
      const resources: Record<string, unknown>[] = [];
      const entries: Record<string, unknown>[] = [];
      for (let i = from; i < from + count; i++) {
        const id = newId("ord");
        const resourceId = newId("res");
        balance -= Number(order.amount);
        orderRows.push({ ...order, id, client_order_no: `bench-bulk-${i}`, resource_id: resourceId, created_at: at(i), updated_at: at(i) });
        resources.push({ ...resource, id: resourceId, order_id: id, created_at: at(i), updated_at: at(i) });
        entries.push({ ...orderEntry, order_id: id, ref: `order:${id}:pay`, balance_after: balance, created_at: at(i) });
      }
      await insertAll(trx, "orders", orderRows);
      await insertAll(trx, "resources", resources);
      await insertAll(trx, "ledger_entries", entries);
      await trx("customers").where(wallet).update({ balance });
      await addKeyTotals(trx, order.key_id, { spent: count * Number(order.amount) });
      await addAccountOrders(trx, key.accountId, count);
    });
  }
}

async function insertAll(trx: Db | import("knex").Knex.Transaction, table: string, rows: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += BULK_ROWS) await trx(table).insert(rows.slice(i, i + BULK_ROWS));
}
