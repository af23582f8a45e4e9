/**
 * Operators and the audit log (issue 23 §1; docs/adr/0022-operators-and-audit.md):
 *
 * - `operators`: people who run the service, each with one role (`owner`, `finance`, `support`,
 *   `viewer`; src/auth/operators/roles.ts) and a password hash (argon2id, PHC string);
 * - `operator_tokens`: API tokens of an operator for automation, stored as SHA-256 of the secret;
 * - `operator_sessions`: console sessions, keyed by the SHA-256 of the cookie's value, with an
 *   idle and an absolute expiry and the time sign-out ended them;
 * - `audit_log`: append-only, one row per admin write, written in the write's transaction.
 *
 * The first audit row (`audit.started`) records the newest ledger entry at migration time:
 * `switchyard verify` asks an audit row of every operator money write after it only.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("operators", (t) => {
    t.string("id", 40).primary();
    t.string("email", 254).notNullable().unique();
    t.string("role", 16).notNullable();
    t.string("password_hash", 400).nullable();
    t.string("status", 16).notNullable().defaultTo("active");
    t.string("created_at", 32).notNullable();
    t.string("updated_at", 32).notNullable();
  });
  await knex.schema.createTable("operator_tokens", (t) => {
    t.string("id", 40).primary();
    t.string("operator_id", 40).notNullable().references("id").inTable("operators");
    t.string("name", 200).notNullable();
    t.string("token_hash", 64).notNullable();
    t.string("created_at", 32).notNullable();
    t.string("last_used_at", 32).nullable();
    t.index(["operator_id"]);
  });
  await knex.schema.createTable("operator_sessions", (t) => {
    t.string("id_hash", 64).primary();
    t.string("operator_id", 40).notNullable().references("id").inTable("operators");
    t.string("created_at", 32).notNullable();
    t.string("last_seen_at", 32).notNullable();
    t.string("expires_at", 32).notNullable();
    t.string("ended_at", 32).nullable();
    t.index(["operator_id"]);
  });
  await knex.schema.createTable("audit_log", (t) => {
    t.increments("id").primary();
    t.string("at", 32).notNullable();
    t.string("operator_id", 40).nullable();
    t.string("actor", 254).notNullable();
    t.string("role", 16).nullable();
    t.string("action", 80).notNullable();
    t.string("object_type", 40).notNullable();
    t.string("object_id", 200).nullable();
    t.string("request_id", 80).nullable();
    t.text("before").nullable();
    t.text("after").nullable();
    t.integer("ledger_entry_id").nullable();
    t.index(["at", "id"]);
    t.index(["operator_id", "id"]);
    t.index(["object_type", "object_id", "id"]);
    t.index(["ledger_entry_id"]);
  });
  const newest = (await knex("ledger_entries").max("id as id").first()) as { id: number | null } | undefined;
  await knex("audit_log").insert({
    at: new Date().toISOString(),
    actor: "system",
    action: "audit.started",
    object_type: "audit_log",
    object_id: null,
    ledger_entry_id: Number(newest?.id ?? 0),
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable("audit_log");
  await knex.schema.dropTable("operator_sessions");
  await knex.schema.dropTable("operator_tokens");
  await knex.schema.dropTable("operators");
}
