/**
 * Leases on the outbox (issue 6 item 1): a dispatcher claims a batch of unpublished rows by
 * setting `lease_until` (`FOR UPDATE SKIP LOCKED` on PostgreSQL; src/db/index.ts `claimBatch`),
 * so dispatchers of several instances publish different rows instead of racing for the same
 * ones. A row whose lease has passed (its dispatcher died) is claimed again.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("outbox", (t) => {
    t.string("lease_until", 30);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("outbox", (t) => {
    t.dropColumn("lease_until");
  });
}
