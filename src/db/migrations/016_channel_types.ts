/**
 * Channel types (issue 24; README "Channels"; ADR 0023): which protocol a channel speaks, and what
 * the provider reported a task used.
 *
 * - `channels.type`: `switchyard` (the generation API itself, every channel before this
 *   migration), `openai-compatible`, `kling`, … (src/generation/upstream/channel-types.ts). The
 *   sealed `api_key` column keeps the credentials: the plain key for one-key types, a sealed JSON
 *   object of the type's fields (Kling: access key and secret key) for the others.
 * - `tasks.provider_usage`: JSON of what the provider reported for the task (seconds, images,
 *   points, tokens), written when the task finishes; null when the provider reports nothing.
 * - `channels.usage_*`: those reports summed per channel as running totals, moved in the
 *   transaction that writes the task's report (an admin view reads one row per channel instead of
 *   every task: summing 200,000 tasks' JSON took 110 ms on SQLite and 230-420 ms on PostgreSQL).
 *   Seconds and points are kept in thousandths (integers: exact sums).
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("channels", (t) => {
    t.string("type", 30).notNullable().defaultTo("switchyard");
    t.bigInteger("usage_tasks").notNullable().defaultTo(0);
    t.bigInteger("usage_seconds_milli").notNullable().defaultTo(0);
    t.bigInteger("usage_images").notNullable().defaultTo(0);
    t.bigInteger("usage_points_milli").notNullable().defaultTo(0);
    t.bigInteger("usage_tokens").notNullable().defaultTo(0);
  });
  await knex.schema.alterTable("tasks", (t) => {
    t.text("provider_usage");
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("tasks", (t) => {
    t.dropColumn("provider_usage");
  });
  await knex.schema.alterTable("channels", (t) => {
    t.dropColumn("usage_tokens");
    t.dropColumn("usage_points_milli");
    t.dropColumn("usage_images");
    t.dropColumn("usage_seconds_milli");
    t.dropColumn("usage_tasks");
    t.dropColumn("type");
  });
}
