/**
 * Webhook deliveries keyed by event (docs/architecture.md §6; issue 3 item 9): one outbox row can cause more
 * than one callback to the same key — a `task.status_changed` row of a failed task is both
 * `task.failed` and `task.refunded` — so a delivery is unique per (outbox row, key, event)
 * instead of per (outbox row, key). Also indexes deliveries by account, newest first, for the
 * delivery log.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("webhook_deliveries", (t) => {
    t.dropUnique(["outbox_id", "key_id"]);
    t.unique(["outbox_id", "key_id", "event"]);
    t.index(["account_id", "id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("webhook_deliveries", (t) => {
    t.dropIndex(["account_id", "id"]);
    t.dropUnique(["outbox_id", "key_id", "event"]);
    t.unique(["outbox_id", "key_id"]);
  });
}
