/**
 * Running totals (docs/architecture.md §3.7; ADR 0010): the sums a dashboard read used to
 * recompute from a key's whole history, kept on the row they belong to and moved in the same
 * transaction as the ledger entry or the task or order change that moves them, by one relative
 * `UPDATE … SET x = x + ?` (never read, add, write back: concurrent writers cannot lose a change,
 * on SQLite or PostgreSQL). `switchyard verify` recomputes each from its rows ({@link verifyTotals}).
 *
 * | total | row | sum of |
 * |---|---|---|
 * | `spent` | `api_keys` | −(debit and refund entries of the key on its account's own wallet: generation), milli-yuan |
 * | `billed_seconds` | `api_keys` | seconds × count of the key's video tasks neither failed nor refunded |
 * | `billed_images` | `api_keys` | images charged after settlement over the key's image tasks |
 * | `task_count` | `api_keys` | the key's tasks |
 * | `order_count` | `accounts` | the account's orders |
 * | `frozen` | `customers` | amounts of the customer's orders paid and still provisioning, milli-yuan |
 *
 * Balances (`accounts.balance`, `customers.balance`) are running totals too; the ledger keeps
 * them (src/ledger/index.ts) and `verifyLedger` checks them.
 */
import type { Knex } from "knex";

type Executor = Knex | Knex.Transaction;

/** What one task adds to its key's billed units, as SQL over a `tasks` row (also summed per day by src/generation/usage.ts). */
export const TASK_BILLED_SECONDS = "case when kind = 'video' and refunded = 0 and status <> 2 then seconds * count else 0 end";
export const TASK_BILLED_IMAGES = "case when kind = 'image' and price > 0 then (price - refunded) * count / price else 0 end";

/**
 * The ledger entries a key's `spent` sums (docs/api/generation.md §2.5): debits and refunds of the
 * account's own prepaid wallet, that is what the key's generation tasks paid and got back. A cloud
 * customer wallet's deductions and refunds (`customer_id` set) are the cloud API's to report, per
 * customer (`/billing/transactions`), even when the key made the order. SQL over `ledger_entries`;
 * {@link spentDelta} is its JavaScript twin.
 */
export const KEY_SPENT_ENTRIES = "kind in ('debit', 'refund') and customer_id is null";

/**
 * How one ledger entry moves its key's `spent` (the rule of {@link KEY_SPENT_ENTRIES}).
 * @param signedAmount the entry's amount, signed milli-yuan (debits negative)
 * @param customerId the entry's customer wallet; null or undefined for the account's own
 * @returns the change of `spent` in milli-yuan (0 for an entry it does not count)
 */
export function spentDelta(kind: string, signedAmount: number, customerId: string | null | undefined): number {
  return (kind === "debit" || kind === "refund") && !customerId ? -signedAmount : 0;
}

/**
 * Each total as a scalar subquery over its rows, correlated to the owner named by the given
 * outer column(s), as {@link verifyTotals} sums them. Migrations 009 and 012 backfilled with a copy of
 * this SQL (src/db/migrations/009_running_totals.ts): a migration keeps the SQL it ran with.
 */
export const TOTALS_SQL = {
  keySpent: (keyId: string) => `select coalesce(0 - sum(amount), 0) from ledger_entries where key_id = ${keyId} and ${KEY_SPENT_ENTRIES}`,
  keyBilledSeconds: (keyId: string) => `select coalesce(sum(${TASK_BILLED_SECONDS}), 0) from tasks where key_id = ${keyId}`,
  keyBilledImages: (keyId: string) => `select coalesce(sum(${TASK_BILLED_IMAGES}), 0) from tasks where key_id = ${keyId}`,
  keyTaskCount: (keyId: string) => `select count(*) from tasks where key_id = ${keyId}`,
  accountOrderCount: (accountId: string) => `select count(*) from orders where account_id = ${accountId}`,
  customerFrozen: (accountId: string, customerId: string) =>
    `select coalesce(sum(amount), 0) from orders where account_id = ${accountId} and customer_id = ${customerId} and payment_status = 'paid' and status = 'provisioning'`,
};

/** Changes to a key's totals; omitted or zero fields do not change. */
export interface KeyTotalsDelta {
  /** Milli-yuan. */
  spent?: number;
  billedSeconds?: number;
  billedImages?: number;
  tasks?: number;
}

/** The task facts its billed units depend on. */
export interface TaskUnitsInput {
  kind: string;
  status: number;
  count: number;
  seconds: number | null;
  /** Milli-yuan. */
  price: number;
  /** Milli-yuan. */
  refunded: number;
}

/**
 * What one task adds to its key's billed units (the JavaScript twin of the SQL above).
 * @returns billed seconds (a video neither failed nor refunded) and billed images (images charged)
 */
export function taskUnits(task: TaskUnitsInput): { billedSeconds: number; billedImages: number } {
  const billedSeconds = task.kind === "video" && task.refunded === 0 && task.status !== 2 ? (task.seconds ?? 0) * task.count : 0;
  const billedImages = task.kind === "image" && task.price > 0 ? Math.trunc(((task.price - task.refunded) * task.count) / task.price) : 0;
  return { billedSeconds, billedImages };
}

/**
 * How a task's change moves its key's billed units.
 * @returns the difference of {@link taskUnits} after and before
 */
export function taskUnitsDelta(before: TaskUnitsInput, after: TaskUnitsInput): KeyTotalsDelta {
  const a = taskUnits(before);
  const b = taskUnits(after);
  return { billedSeconds: b.billedSeconds - a.billedSeconds, billedImages: b.billedImages - a.billedImages };
}

/** Adds each non-zero delta to its column of the one row `where` names, in one UPDATE. */
async function addTo(trx: Executor, table: string, where: Record<string, string>, deltas: Record<string, number | undefined>): Promise<void> {
  const changes: Record<string, Knex.Raw> = {};
  for (const [column, delta] of Object.entries(deltas)) {
    if (!delta) continue;
    if (!Number.isSafeInteger(delta)) throw new RangeError(`running total ${table}.${column}: not an integer delta: ${delta}`);
    changes[column] = trx.raw("?? + ?", [column, delta]);
  }
  if (Object.keys(changes).length === 0) return;
  const updated = await trx(table).where(where).update(changes);
  // A total whose row is missing would silently drift: fail the whole transaction instead.
  if (updated !== 1) throw new Error(`running total: no ${table} row ${JSON.stringify(where)}`);
}

/**
 * Moves a key's totals. Must run inside the transaction that writes the cause.
 * @param delta milli-yuan for `spent`; units and counts as integers
 * @throws Error when the key does not exist (the transaction then rolls back)
 */
export function addKeyTotals(trx: Knex.Transaction, keyId: string, delta: KeyTotalsDelta): Promise<void> {
  return addTo(
    trx,
    "api_keys",
    { id: keyId },
    { spent: delta.spent, billed_seconds: delta.billedSeconds, billed_images: delta.billedImages, task_count: delta.tasks },
  );
}

/** Moves an account's order count (inside the transaction that inserts the order). */
export function addAccountOrders(trx: Knex.Transaction, accountId: string, orders: number): Promise<void> {
  return addTo(trx, "accounts", { id: accountId }, { order_count: orders });
}

/**
 * Moves a customer wallet's `frozen` (inside the transaction that moves the order into or out of
 * paid-and-provisioning).
 * @param frozen signed milli-yuan
 */
export function addCustomerFrozen(trx: Knex.Transaction, accountId: string, customerId: string, frozen: number): Promise<void> {
  return addTo(trx, "customers", { account_id: accountId, customer_id: customerId }, { frozen });
}

/**
 * A reader of one stored total, for a list's `totalCount` (src/pagination.ts `PageCount`).
 * @param table `api_keys` (by key id) or `accounts` (by account id)
 * @returns a function reading the one row's column (0 when the row is gone)
 */
export function storedTotal(db: Executor, table: "api_keys" | "accounts", id: string, column: "task_count" | "order_count"): () => Promise<number> {
  return async () => Number((await db(table).where("id", id).first(column))?.[column] ?? 0);
}

/** One stored total that is not the sum of its rows. */
export interface TotalMismatch {
  kind: "total_mismatch";
  subject: string;
  detail: string;
}

const CHECKS: { table: string; subject: string; totals: Record<string, string> }[] = [
  {
    table: "api_keys",
    subject: "id",
    totals: {
      spent: TOTALS_SQL.keySpent("api_keys.id"),
      billed_seconds: TOTALS_SQL.keyBilledSeconds("api_keys.id"),
      billed_images: TOTALS_SQL.keyBilledImages("api_keys.id"),
      task_count: TOTALS_SQL.keyTaskCount("api_keys.id"),
    },
  },
  { table: "accounts", subject: "id", totals: { order_count: TOTALS_SQL.accountOrderCount("accounts.id") } },
  {
    table: "customers",
    subject: "account_id || '/' || customer_id",
    totals: { frozen: TOTALS_SQL.customerFrozen("customers.account_id", "customers.customer_id") },
  },
];

/**
 * Recomputes every running total from its rows (the balances are {@link verifyLedger}'s).
 * @returns one `total_mismatch` per stored total that differs, naming the row, the column, the
 *   stored value and the sum (empty when every total is exact)
 */
export async function verifyTotals(db: Executor): Promise<TotalMismatch[]> {
  const problems: TotalMismatch[] = [];
  for (const check of CHECKS) {
    const columns = Object.keys(check.totals);
    const rows: Record<string, string | number | null>[] = await db(check.table).select(
      db.raw(`${check.subject} as subject`),
      ...columns.map((c) => db.raw(`?? as ??`, [c, `stored_${c}`])),
      ...columns.map((c) => db.raw(`(${check.totals[c]}) as ??`, [`sum_${c}`])),
    );
    for (const row of rows) {
      for (const c of columns) {
        if (Number(row[`stored_${c}`]) !== Number(row[`sum_${c}`])) {
          problems.push({
            kind: "total_mismatch",
            subject: String(row.subject),
            detail: `${check.table}.${c}: stored ${row[`stored_${c}`]} != sum of its rows ${row[`sum_${c}`]}`,
          });
        }
      }
    }
  }
  return problems;
}
