/**
 * Idempotency keys scoped per account AND operation (docs/api/cloud.md §5.3: "per account and
 * operation"; issue 20): the primary key of `idempotency_keys` becomes (`account_id`,
 * `operation`, `idempotency_key`), so the key of an order's creation may be reused for its
 * renewal (or a domain's creation for a purge) instead of answering 409.
 *
 * Existing rows are kept as they are: they were unique per (account, key), so they stay unique
 * per (account, operation, key); each keeps replaying its answer for the rest of its 24 hours,
 * to the same operation only.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("idempotency_keys", (t) => {
    t.dropPrimary();
    t.primary(["account_id", "operation", "idempotency_key"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  // Two operations' rows under one key would collide under the old key: the older ones go.
  const rows: { account_id: string; operation: string; idempotency_key: string; created_at: string }[] = await knex("idempotency_keys")
    .select("account_id", "operation", "idempotency_key", "created_at")
    .orderBy([{ column: "created_at", order: "desc" }]);
  const seen = new Set<string>();
  for (const row of rows) {
    const key = JSON.stringify([row.account_id, row.idempotency_key]);
    if (seen.has(key))
      await knex("idempotency_keys").where({ account_id: row.account_id, operation: row.operation, idempotency_key: row.idempotency_key }).delete();
    seen.add(key);
  }
  await knex.schema.alterTable("idempotency_keys", (t) => {
    t.dropPrimary();
    t.primary(["account_id", "idempotency_key"]);
  });
}
