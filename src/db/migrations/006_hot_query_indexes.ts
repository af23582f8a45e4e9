/**
 * Indexes for the hot queries (issue 7), each checked with EXPLAIN QUERY PLAN on SQLite:
 *
 * - task and order pages (`key_id` / `account_id`, newest first, `id` breaking ties): the index
 *   now ends in `id`, so a page is read in index order instead of sorted in a temporary B-tree;
 * - the poller's claim (`submit_state = 'sent' AND status IN (0, 3, 4) AND next_poll_at <= now`):
 *   it used the (`submit_state`, `created_at`) index, reading every task ever sent;
 * - the provisioning loop's claim (`status = 'provisioning' AND provision_due_at <= now`) and the
 *   statement-export loop (`status = 'pending' AND requested_at <= now`): both scanned their table;
 * - a key's spending (`sum(amount)` of its debits and refunds): answered from the index alone.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("tasks", (t) => {
    t.dropIndex(["key_id", "created_at"]);
    t.index(["key_id", "created_at", "id"]);
    t.index(["submit_state", "status", "next_poll_at"]);
  });
  await knex.schema.alterTable("orders", (t) => {
    t.dropIndex(["account_id", "created_at"]);
    t.index(["account_id", "created_at", "id"]);
    t.index(["status", "provision_due_at", "id"]);
  });
  await knex.schema.alterTable("ledger_entries", (t) => {
    t.dropIndex(["key_id", "kind"]);
    t.index(["key_id", "kind", "amount"]);
  });
  await knex.schema.alterTable("statement_exports", (t) => {
    t.index(["status", "requested_at"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("statement_exports", (t) => {
    t.dropIndex(["status", "requested_at"]);
  });
  await knex.schema.alterTable("ledger_entries", (t) => {
    t.dropIndex(["key_id", "kind", "amount"]);
    t.index(["key_id", "kind"]);
  });
  await knex.schema.alterTable("orders", (t) => {
    t.dropIndex(["status", "provision_due_at", "id"]);
    t.dropIndex(["account_id", "created_at", "id"]);
    t.index(["account_id", "created_at"]);
  });
  await knex.schema.alterTable("tasks", (t) => {
    t.dropIndex(["submit_state", "status", "next_poll_at"]);
    t.dropIndex(["key_id", "created_at", "id"]);
    t.index(["key_id", "created_at"]);
  });
}
