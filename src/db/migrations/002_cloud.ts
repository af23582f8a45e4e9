/**
 * Cloud open API tables (docs/api/cloud.md §2-6): customers (wallets inside an account), catalog,
 * orders, resources, idempotency keys, domains, purge tasks, webhook deliveries, statement
 * exports; and what the outbox and ledger need for them.
 */
import type { Knex } from "knex";

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("customers", (t) => {
    t.string("account_id", 40).notNullable().references("accounts.id");
    t.string("customer_id", 64).notNullable();
    t.string("contact", 200);
    // Cached balance: always equals the sum of this customer's ledger entries (docs/architecture.md §3).
    t.bigInteger("balance").notNullable().defaultTo(0);
    t.bigInteger("credit_line").notNullable().defaultTo(0);
    t.string("created_at", 30).notNullable();
    t.primary(["account_id", "customer_id"]);
  });

  await knex.schema.alterTable("ledger_entries", (t) => {
    // Set for entries of a cloud customer's wallet; null for the account's own wallet.
    t.string("customer_id", 64);
    t.index(["account_id", "customer_id", "id"]);
    t.index(["order_id"]);
  });

  await knex.schema.alterTable("outbox", (t) => {
    t.string("key_id", 40); // whose callback URL receives the event
    t.string("request_id", 80); // the request that caused it (callback body `request_id`)
  });

  await knex.schema.createTable("vendors", (t) => {
    t.string("id", 40).primary();
    t.string("name", 200).notNullable();
    t.string("status", 16).notNullable(); // active | inactive
    t.string("created_at", 30).notNullable();
  });

  await knex.schema.createTable("products", (t) => {
    t.string("id", 40).primary();
    t.string("vendor_id", 40).notNullable().references("vendors.id");
    t.string("category", 40).notNullable();
    t.string("name", 200).notNullable();
    t.text("description");
    t.string("status", 16).notNullable(); // available | sold_out | offline
    t.text("billing_cycles").notNullable(); // JSON [{cycle, months, price (milli-yuan)}]
    t.integer("stock"); // null = unlimited
    t.text("required_fields").notNullable(); // JSON array of metadata keys
    t.string("created_at", 30).notNullable();
    t.string("updated_at", 30).notNullable();
    t.index(["category", "vendor_id", "status"]);
  });

  await knex.schema.createTable("orders", (t) => {
    t.string("id", 40).primary();
    t.string("account_id", 40).notNullable().references("accounts.id");
    t.string("key_id", 40).notNullable();
    t.string("client_order_no", 64).notNullable();
    t.string("product_id", 40).notNullable().references("products.id");
    t.integer("quantity").notNullable();
    t.string("billing_cycle", 20).notNullable();
    t.string("customer_id", 64).notNullable();
    t.string("contact", 200);
    t.text("metadata").notNullable(); // JSON object
    t.bigInteger("amount").notNullable(); // milli-yuan: cycle price × quantity
    t.string("payment_status", 16).notNullable(); // unpaid | paid | refunded
    t.string("provisioning_status", 16).notNullable(); // pending | provisioning | active | failed
    t.string("status", 16).notNullable(); // unpaid | provisioning | active | failed
    t.string("resource_id", 40);
    t.string("failure_reason", 300);
    t.string("provision_due_at", 30); // when the vendor adapter is next asked
    t.string("created_at", 30).notNullable();
    t.string("updated_at", 30).notNullable();
    t.unique(["account_id", "client_order_no"]);
    t.index(["account_id", "created_at"]);
    t.index(["provisioning_status", "provision_due_at"]);
  });

  await knex.schema.createTable("resources", (t) => {
    t.string("id", 40).primary();
    t.string("account_id", 40).notNullable().references("accounts.id");
    t.string("order_id", 40).notNullable().references("orders.id");
    t.string("product_id", 40).notNullable();
    t.string("customer_id", 64).notNullable();
    t.string("status", 16).notNullable(); // active | expired
    t.string("expires_at", 30).notNullable();
    t.bigInteger("usage_threshold_bytes"); // null = no alert
    t.bigInteger("threshold_notified_bytes"); // the threshold last reported (once per crossing)
    t.string("created_at", 30).notNullable();
    t.string("updated_at", 30).notNullable();
    t.index(["account_id", "created_at"]);
  });

  await knex.schema.createTable("idempotency_keys", (t) => {
    t.string("account_id", 40).notNullable();
    t.string("idempotency_key", 255).notNullable();
    t.string("operation", 40).notNullable();
    t.string("request_hash", 64).notNullable();
    t.string("state", 16).notNullable(); // in_progress | completed
    t.text("response"); // JSON snapshot replayed to retries
    t.string("created_at", 30).notNullable();
    t.string("expires_at", 30).notNullable();
    t.primary(["account_id", "idempotency_key"]);
    t.index(["expires_at"]);
  });

  await knex.schema.createTable("domains", (t) => {
    t.string("domain", 253).primary();
    t.string("account_id", 40).notNullable().references("accounts.id");
    t.string("order_id", 40).notNullable().references("orders.id");
    t.string("customer_id", 64).notNullable();
    t.text("origin").notNullable(); // JSON {type, address, port}
    t.string("protocol", 8).notNullable();
    t.string("cname", 300).notNullable();
    t.string("created_at", 30).notNullable();
    t.string("updated_at", 30).notNullable();
    t.index(["account_id"]);
  });

  await knex.schema.createTable("purge_tasks", (t) => {
    t.string("id", 40).primary();
    t.string("account_id", 40).notNullable();
    t.string("domain", 253).notNullable().references("domains.domain");
    t.string("type", 12).notNullable(); // url | directory
    t.text("targets").notNullable(); // JSON array
    t.string("created_at", 30).notNullable();
    t.index(["domain", "created_at"]);
  });

  await knex.schema.createTable("webhook_deliveries", (t) => {
    t.increments("id").primary();
    t.integer("outbox_id").notNullable();
    t.string("account_id", 40).notNullable();
    t.string("key_id", 40).notNullable();
    t.string("aggregate_id", 60).notNullable();
    t.string("event", 60).notNullable();
    t.text("url").notNullable();
    t.text("body").notNullable(); // the exact JSON sent, so every attempt signs the same bytes
    t.string("status", 16).notNullable(); // pending | delivered | failed
    t.integer("attempts").notNullable().defaultTo(0);
    t.string("next_attempt_at", 30);
    t.string("lease_until", 30);
    t.string("created_at", 30).notNullable();
    t.string("delivered_at", 30);
    t.unique(["outbox_id", "key_id"]);
    t.index(["status", "next_attempt_at"]);
    t.index(["aggregate_id"]);
  });

  await knex.schema.createTable("webhook_attempts", (t) => {
    t.increments("id").primary();
    t.integer("delivery_id").notNullable().references("webhook_deliveries.id");
    t.string("at", 30).notNullable();
    t.integer("status"); // HTTP status, null on a transport error
    t.string("error", 300);
    t.integer("duration_ms");
    t.index(["delivery_id"]);
  });

  await knex.schema.createTable("statement_exports", (t) => {
    t.string("account_id", 40).notNullable();
    t.string("period", 7).notNullable(); // YYYY-MM
    t.string("status", 16).notNullable(); // pending | ready
    t.text("csv");
    t.string("requested_at", 30).notNullable();
    t.string("ready_at", 30);
    t.primary(["account_id", "period"]);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    "statement_exports",
    "webhook_attempts",
    "webhook_deliveries",
    "purge_tasks",
    "domains",
    "idempotency_keys",
    "resources",
    "orders",
    "products",
    "vendors",
    "customers",
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
  await knex.schema.alterTable("outbox", (t) => {
    t.dropColumn("key_id");
    t.dropColumn("request_id");
  });
  await knex.schema.alterTable("ledger_entries", (t) => {
    t.dropIndex(["account_id", "customer_id", "id"]);
    t.dropIndex(["order_id"]);
    t.dropColumn("customer_id");
  });
}
