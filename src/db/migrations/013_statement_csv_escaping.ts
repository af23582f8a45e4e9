/**
 * Statement exports are written with spreadsheet formulas neutralised (issue 20 finding 6;
 * src/csv.ts): a caller's `customer_id` of `=1+2` was stored raw in the ready CSV. Every ready
 * export goes back to `pending` with its CSV dropped; the export worker writes it again, escaped,
 * on its next pass (its request time is old enough), and until then the export answers 409
 * "not ready yet" as for any pending export.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex("statement_exports").where("status", "ready").update({ status: "pending", csv: null, ready_at: null });
}

export async function down(): Promise<void> {
  // Nothing to undo: a regenerated export is the same statement, escaped.
}
