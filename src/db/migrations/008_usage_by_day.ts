/**
 * An index for a key's usage per day (`viewer.usageByDay`): its ledger debits and refunds of the
 * last days are read as a range of (`key_id`, `created_at`), not every entry the key ever made.
 * Its tasks already have (`key_id`, `created_at`, `id`) (006).
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("ledger_entries", (t) => {
    t.index(["key_id", "created_at"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("ledger_entries", (t) => {
    t.dropIndex(["key_id", "created_at"]);
  });
}
