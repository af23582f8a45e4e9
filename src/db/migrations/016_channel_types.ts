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
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("channels", (t) => {
    t.string("type", 30).notNullable().defaultTo("switchyard");
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
    t.dropColumn("type");
  });
}
