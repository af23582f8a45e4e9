/**
 * Core tables: accounts, API keys, ledger entries, tasks, request log, outbox.
 * Portable between SQLite and PostgreSQL: amounts are bigint milli-yuan, times ISO 8601 text
 * (fixed width, so they sort as text), ids are text.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("accounts", (t) => {
    t.string("id", 40).primary();
    t.string("name", 200).notNullable();
    // Cached balance: always equals the sum of this account's ledger entries (docs/architecture.md §3).
    t.bigInteger("balance").notNullable().defaultTo(0);
    t.bigInteger("credit_line").notNullable().defaultTo(0);
    t.string("created_at", 30).notNullable();
  });

  await knex.schema.createTable("api_keys", (t) => {
    t.string("id", 40).primary();
    t.string("account_id", 40).notNullable().references("accounts.id");
    t.string("name", 200).notNullable();
    t.string("key_hash", 64).notNullable().unique(); // SHA-256 hex; the key itself is never stored
    t.string("key_prefix", 16).notNullable();
    t.string("status", 16).notNullable().defaultTo("active");
    t.text("scopes").notNullable(); // JSON array
    t.text("allow_ips"); // JSON array of CIDRs, null = any
    t.integer("rate_limit"); // requests per second, null = unlimited
    t.text("callback_url");
    t.string("webhook_secret", 80);
    t.boolean("require_signature").notNullable().defaultTo(false);
    t.string("created_at", 30).notNullable();
    t.index(["account_id"]);
  });

  await knex.schema.createTable("ledger_entries", (t) => {
    t.increments("id").primary();
    t.string("account_id", 40).notNullable().references("accounts.id");
    t.string("key_id", 40);
    // topup | debit | refund | adjustment (cloud adds deduction-like kinds with their own refs)
    t.string("kind", 20).notNullable();
    t.bigInteger("amount").notNullable(); // signed milli-yuan: debits negative
    t.bigInteger("balance_after").notNullable();
    t.string("task_id", 40);
    t.string("order_id", 40);
    // What this entry pays for, unique so it can happen once: "task:<id>:debit", "task:<id>:refund".
    t.string("ref", 120).unique();
    t.string("reason", 200);
    t.string("created_at", 30).notNullable();
    t.index(["account_id", "id"]);
    t.index(["key_id", "kind"]);
    t.index(["task_id"]);
  });

  await knex.schema.createTable("tasks", (t) => {
    t.string("id", 40).primary();
    t.string("account_id", 40).notNullable().references("accounts.id");
    t.string("key_id", 40).notNullable().references("api_keys.id");
    t.string("kind", 8).notNullable(); // video | image
    t.integer("model_id").notNullable();
    t.text("prompt").notNullable();
    t.text("request").notNullable(); // normalized request JSON (what is sent upstream)
    t.integer("status").notNullable(); // docs/api/generation.md §3: 0 queued, 1 succeeded, 2 failed, 3 processing, 4 submitted
    // pending: debited, not yet accepted upstream; sent: upstream has it; failed: the upstream refused it
    t.string("submit_state", 10).notNullable().defaultTo("pending");
    t.integer("count").notNullable();
    t.integer("seconds");
    t.string("resolution", 10);
    t.string("size", 10);
    t.bigInteger("price").notNullable(); // milli-yuan debited at submission
    t.bigInteger("refunded").notNullable().defaultTo(0); // milli-yuan given back (at most once)
    t.string("upstream_task_id", 200);
    t.text("result");
    t.text("images"); // JSON array
    t.text("error");
    t.integer("generated_images");
    t.string("deadline_at", 30);
    t.string("next_poll_at", 30);
    t.string("created_at", 30).notNullable();
    t.string("updated_at", 30).notNullable();
    t.index(["key_id", "created_at"]);
    t.index(["account_id", "created_at"]);
    t.index(["status", "next_poll_at"]);
  });

  await knex.schema.createTable("request_log", (t) => {
    t.increments("id").primary();
    t.string("key_id", 40).notNullable();
    t.string("method", 10).notNullable();
    t.string("path", 300).notNullable();
    t.integer("status").notNullable();
    t.string("request_id", 80);
    t.string("at", 30).notNullable();
    t.index(["key_id", "id"]);
  });

  await knex.schema.createTable("outbox", (t) => {
    t.increments("id").primary();
    t.string("topic", 60).notNullable(); // e.g. task.status_changed
    t.string("account_id", 40).notNullable();
    t.string("aggregate_id", 60).notNullable(); // task or order id
    t.text("payload").notNullable(); // JSON
    t.string("created_at", 30).notNullable();
    t.string("published_at", 30);
    t.index(["published_at", "id"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ["outbox", "request_log", "tasks", "ledger_entries", "api_keys", "accounts"]) {
    await knex.schema.dropTableIfExists(table);
  }
}
