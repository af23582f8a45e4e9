/**
 * Running totals (issue 15 item 1; docs/architecture.md §3.7; ADR 0010): what the dashboard read
 * recomputed from a key's whole history on every request is now kept on the row it belongs to,
 * changed in the same transaction as the ledger entry or task change that moves it
 * (src/ledger/totals.ts), and checked by `switchyard verify`:
 *
 * - `api_keys`: `spent` (milli-yuan: debits minus refunds of the key), `billed_seconds`,
 *   `billed_images`, `task_count` (the key's tasks: the unfiltered task list's `totalCount`);
 * - `accounts`: `order_count` (the unfiltered order list's `totalCount`); the balance was cached already;
 * - `customers`: `frozen` (milli-yuan: paid orders still provisioning); the balance was cached already.
 *
 * Every total is backfilled from the existing rows with the same expressions `verify` sums
 * (correlated subqueries: the same SQL on SQLite and PostgreSQL).
 */
import type { Knex } from "knex";

const TASK_BILLED_SECONDS = "case when kind = 'video' and refunded = 0 and status <> 2 then seconds * count else 0 end";
const TASK_BILLED_IMAGES = "case when kind = 'image' and price > 0 then (price - refunded) * count / price else 0 end";

/**
 * The backfill's SQL: a copy of src/ledger/totals.ts `TOTALS_SQL` (the rule `switchyard verify`
 * sums) as of migration 012, which recomputes `spent` with it. A migration is history: it keeps
 * the SQL it ran with and imports no business module (docs/architecture.md §1.2); a later change
 * of a rule comes with its own migration, as 012 did.
 */
export const TOTALS_SQL = {
  keySpent: (keyId: string) =>
    `select coalesce(0 - sum(amount), 0) from ledger_entries where key_id = ${keyId} and kind in ('debit', 'refund') and customer_id is null`,
  keyBilledSeconds: (keyId: string) => `select coalesce(sum(${TASK_BILLED_SECONDS}), 0) from tasks where key_id = ${keyId}`,
  keyBilledImages: (keyId: string) => `select coalesce(sum(${TASK_BILLED_IMAGES}), 0) from tasks where key_id = ${keyId}`,
  keyTaskCount: (keyId: string) => `select count(*) from tasks where key_id = ${keyId}`,
  accountOrderCount: (accountId: string) => `select count(*) from orders where account_id = ${accountId}`,
  customerFrozen: (accountId: string, customerId: string) =>
    `select coalesce(sum(amount), 0) from orders where account_id = ${accountId} and customer_id = ${customerId} and payment_status = 'paid' and status = 'provisioning'`,
};

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("api_keys", (t) => {
    t.bigInteger("spent").notNullable().defaultTo(0);
    t.bigInteger("billed_seconds").notNullable().defaultTo(0);
    t.bigInteger("billed_images").notNullable().defaultTo(0);
    t.bigInteger("task_count").notNullable().defaultTo(0);
  });
  await knex.schema.alterTable("accounts", (t) => {
    t.bigInteger("order_count").notNullable().defaultTo(0);
  });
  await knex.schema.alterTable("customers", (t) => {
    t.bigInteger("frozen").notNullable().defaultTo(0);
  });
  await knex("api_keys").update({
    spent: knex.raw(`(${TOTALS_SQL.keySpent("api_keys.id")})`),
    billed_seconds: knex.raw(`(${TOTALS_SQL.keyBilledSeconds("api_keys.id")})`),
    billed_images: knex.raw(`(${TOTALS_SQL.keyBilledImages("api_keys.id")})`),
    task_count: knex.raw(`(${TOTALS_SQL.keyTaskCount("api_keys.id")})`),
  });
  await knex("accounts").update({ order_count: knex.raw(`(${TOTALS_SQL.accountOrderCount("accounts.id")})`) });
  await knex("customers").update({ frozen: knex.raw(`(${TOTALS_SQL.customerFrozen("customers.account_id", "customers.customer_id")})`) });
}

export async function down(knex: Knex): Promise<void> {
  // Plain DROP COLUMN (SQLite 3.35+ and PostgreSQL): knex would rebuild the SQLite tables, which
  // other tables' foreign keys forbid.
  const drops: [string, string[]][] = [
    ["customers", ["frozen"]],
    ["accounts", ["order_count"]],
    ["api_keys", ["task_count", "billed_images", "billed_seconds", "spent"]],
  ];
  for (const [table, columns] of drops) {
    for (const column of columns) await knex.raw("alter table ?? drop column ??", [table, column]);
  }
}
