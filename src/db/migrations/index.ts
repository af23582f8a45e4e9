/**
 * The ordered list of migrations, given to knex as a custom source so the same list runs on
 * SQLite and PostgreSQL, from TypeScript or a bundle, without a file-system loader.
 */
import type { Knex } from "knex";
import * as core from "./001_core.ts";
import * as cloud from "./002_cloud.ts";
import * as webhookEvents from "./003_webhook_events.ts";
import * as taskRecovery from "./004_task_recovery.ts";
import * as outboxLease from "./005_outbox_lease.ts";
import * as hotQueryIndexes from "./006_hot_query_indexes.ts";
import * as resourcesWriteScope from "./007_resources_write_scope.ts";
import * as usageByDay from "./008_usage_by_day.ts";
import * as runningTotals from "./009_running_totals.ts";
import * as channels from "./010_channels.ts";
import * as adminConsoleIndexes from "./011_admin_console_indexes.ts";
import * as generationSpent from "./012_generation_spent.ts";
import * as statementCsvEscaping from "./013_statement_csv_escaping.ts";
import * as idempotencyScope from "./014_idempotency_scope.ts";
import * as operatorsAudit from "./015_operators_audit.ts";
import * as channelTypes from "./016_channel_types.ts";

const MIGRATIONS: Record<string, Knex.Migration> = {
  "001_core": core,
  "002_cloud": cloud,
  "003_webhook_events": webhookEvents,
  "004_task_recovery": taskRecovery,
  "005_outbox_lease": outboxLease,
  "006_hot_query_indexes": hotQueryIndexes,
  "007_resources_write_scope": resourcesWriteScope,
  "008_usage_by_day": usageByDay,
  "009_running_totals": runningTotals,
  "010_channels": channels,
  "011_admin_console_indexes": adminConsoleIndexes,
  "012_generation_spent": generationSpent,
  "013_statement_csv_escaping": statementCsvEscaping,
  "014_idempotency_scope": idempotencyScope,
  "015_operators_audit": operatorsAudit,
  "016_channel_types": channelTypes,
};

/** Every migration this build knows, in the order they run (names sort in that order too). */
export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS);

/**
 * The schema version this build expects: the name of its last migration (`switchyard --version`,
 * `switchyard migrate status`).
 */
export const LATEST_MIGRATION: string = MIGRATION_NAMES.at(-1)!;

/** The migration of that name; undefined when this build does not know it. */
export function migrationNamed(name: string): Knex.Migration | undefined {
  return Object.hasOwn(MIGRATIONS, name) ? MIGRATIONS[name] : undefined;
}

/** knex MigrationSource over {@link MIGRATIONS}. */
export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => [...MIGRATION_NAMES],
  getMigrationName: (name) => name,
  getMigration: async (name) => MIGRATIONS[name]!,
};
