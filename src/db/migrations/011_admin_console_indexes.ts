/**
 * Indexes for the operator console's admin reads (issue 16 "Operator console"; docs/architecture.md §7.2):
 * every admin list is a keyset page across accounts and every overview figure a range over an
 * indexed time column, so none of them reads a whole history.
 *
 * - `api_keys` (`created_at`, `id`): the key list, newest first, across accounts;
 * - `orders` (`created_at`, `id`) and (`status`, `created_at`, `id`): the order list across
 *   accounts, optionally of one state;
 * - `webhook_deliveries` (`status`, `id`): the delivery list of one state (all states: the primary key);
 * - `tasks` (`created_at`, `status`): tasks per minute and the success rate of a time range, from the index alone;
 * - `ledger_entries` (`kind`, `created_at`, `amount`): revenue and refunds of a day, from the index alone.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("api_keys", (t) => {
    t.index(["created_at", "id"]);
  });
  await knex.schema.alterTable("orders", (t) => {
    t.index(["created_at", "id"]);
    t.index(["status", "created_at", "id"]);
  });
  await knex.schema.alterTable("webhook_deliveries", (t) => {
    t.index(["status", "id"]);
  });
  await knex.schema.alterTable("tasks", (t) => {
    t.index(["created_at", "status"]);
  });
  await knex.schema.alterTable("ledger_entries", (t) => {
    t.index(["kind", "created_at", "amount"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("ledger_entries", (t) => {
    t.dropIndex(["kind", "created_at", "amount"]);
  });
  await knex.schema.alterTable("tasks", (t) => {
    t.dropIndex(["created_at", "status"]);
  });
  await knex.schema.alterTable("webhook_deliveries", (t) => {
    t.dropIndex(["status", "id"]);
  });
  await knex.schema.alterTable("orders", (t) => {
    t.dropIndex(["status", "created_at", "id"]);
    t.dropIndex(["created_at", "id"]);
  });
  await knex.schema.alterTable("api_keys", (t) => {
    t.dropIndex(["created_at", "id"]);
  });
}
