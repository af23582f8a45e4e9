/**
 * A key's `spent` is what its generation tasks took from the account's own prepaid balance minus
 * what was refunded (issue 20 finding 5; docs/api/generation.md §2.5; src/ledger/totals.ts
 * `KEY_SPENT_ENTRIES`). Until now the running total also moved with every cloud order deduction
 * and refund carrying the key, so a key that only bought cloud resources showed spending it never
 * made from its balance. This recomputes every key's `spent` from the ledger with the rule now in
 * force, the SQL `switchyard verify` sums: a key without cloud orders keeps its value, a key that
 * paid orders loses them from its `spent`. No ledger entry, balance or other total changes.
 */
import type { Knex } from "knex";
import { TOTALS_SQL } from "./009_running_totals.ts";

export async function up(knex: Knex): Promise<void> {
  await knex("api_keys").update({ spent: knex.raw(`(${TOTALS_SQL.keySpent("api_keys.id")})`) });
}

export async function down(): Promise<void> {
  // Nothing to undo: the old totals were wrong, and the column stays.
}
