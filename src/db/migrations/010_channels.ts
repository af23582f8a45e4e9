/**
 * Upstream channels (issue 16 "Channels"; README "Channels"; ADR 0012): several providers serving
 * the same models, chosen by priority and weight, with failover and health.
 *
 * - `channels`: one provider account. `api_key` is AES-256-GCM ciphertext (src/generation/channels/crypto.ts,
 *   key from CHANNEL_KEY_SECRET); `models` and `model_mapping` are JSON; the counters feed the
 *   per-channel stats. The implicit channel of GENERATION_UPSTREAM_URL is the read-only row
 *   `chn_default` (`implicit = true`, no key stored), upserted at start so its health and
 *   counters are shared like any other's.
 * - `tasks.channel_id`: the channel that accepted the task (null: `chn_default`, the only
 *   channel before this migration); `tasks.channel_attempts`: JSON of every channel tried and
 *   why each failed.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("channels", (t) => {
    t.string("id", 40).primary();
    t.string("name", 100).notNullable();
    t.string("base_url", 500).notNullable();
    t.text("api_key"); // ciphertext (v1.<iv>.<tag>.<data>, base64url); null for the implicit channel
    t.text("models").notNullable(); // JSON array of model ids; ["*"] for every model
    t.text("model_mapping").notNullable().defaultTo("[]"); // JSON [{modelId, upstreamModel}]
    t.integer("priority").notNullable().defaultTo(0);
    t.integer("weight").notNullable().defaultTo(1);
    t.string("status", 20).notNullable().defaultTo("ENABLED"); // ENABLED | DISABLED | AUTO_DISABLED
    t.text("disabled_reason");
    t.integer("consecutive_failures").notNullable().defaultTo(0);
    t.integer("probe_failures").notNullable().defaultTo(0); // failed probes since auto-disable: the backoff exponent
    t.string("next_probe_at", 30);
    t.boolean("implicit").notNullable().defaultTo(false);
    t.bigInteger("submissions").notNullable().defaultTo(0);
    t.bigInteger("successes").notNullable().defaultTo(0);
    t.bigInteger("failures").notNullable().defaultTo(0);
    t.bigInteger("latency_ms_total").notNullable().defaultTo(0);
    t.string("created_at", 30).notNullable();
    t.string("updated_at", 30).notNullable();
    t.index(["status", "next_probe_at"]);
  });
  await knex.schema.alterTable("tasks", (t) => {
    t.string("channel_id", 40);
    t.text("channel_attempts");
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("tasks", (t) => {
    t.dropColumn("channel_attempts");
    t.dropColumn("channel_id");
  });
  await knex.schema.dropTable("channels");
}
