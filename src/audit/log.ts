/**
 * The audit log (issue 23 §1; docs/adr/0022-operators-and-audit.md): append-only, one row per
 * admin write — who (an operator, `break-glass` for ADMIN_TOKEN, `cli` for the command line),
 * what (the admin field or command, the object's type and id), when, the request id, and the
 * object before and after the write with every secret replaced by `[redacted]`. The row is
 * written in the write's own transaction ({@link audited}): a write that fails or rolls back
 * leaves no row, and no write commits without its row. Nothing updates or deletes a committed row.
 */
import type { Knex } from "knex";
import { nowIso, fitText, type Db } from "../db/index.ts";
import { bySerial, keysetPage, type Page, type PageRequest } from "../pagination.ts";
import { AppError } from "../errors.ts";

/** Who made a write. */
export interface AuditActor {
  /** The operator's id; null for break-glass (ADMIN_TOKEN), the CLI and the system. */
  operatorId: string | null;
  /** The operator's email, or `break-glass`, `cli`, `system`. */
  actor: string;
  /**
   * The operator's role, an `OperatorRole` of src/auth/operators/roles.ts (break-glass and the CLI
   * act as `owner`). A string here: the operators write the log, the log does not import them
   * (docs/architecture.md §1.2).
   */
  role: string | null;
  /** The request id (null on the command line). */
  requestId: string | null;
}

/** The actor of the command line: break-glass access to the database. */
export const CLI_ACTOR: AuditActor = { operatorId: null, actor: "cli", role: "owner", requestId: null };

/** One row of the audit log. */
export interface AuditEntry {
  id: number;
  /** ISO 8601 UTC. */
  at: string;
  operatorId: string | null;
  actor: string;
  role: string | null;
  action: string;
  objectType: string;
  objectId: string | null;
  requestId: string | null;
  /** JSON text of the object before the write (secrets redacted); null when it did not exist. */
  before: string | null;
  /** JSON text of the object after the write (secrets redacted). */
  after: string | null;
  /** The ledger entry a money write wrote (milli-yuan movements); null otherwise. */
  ledgerEntryId: number | null;
}

/**
 * Property names whose values are secrets, never stored in the log: any name ending in `key`,
 * `secret`, `hash`, `password` or `token` (an API key, a webhook secret, a channel's key or other
 * credential, a password or token hash), and credentials, authorization, ciphertext.
 */
const SECRET_NAME = /^(credentials?|authorization|ciphertext)$|(key|secret|hash|password|token)$/i;

/**
 * A copy of a value with every secret replaced by `[redacted]` (a key, a webhook secret, a
 * password or token hash, a channel's key), Dates as ISO text, and nothing deeper than 6 levels.
 */
export function redactSecrets(value: unknown, depth = 0): unknown {
  if (value instanceof Date) return value.toISOString();
  if (value === null || typeof value !== "object") return typeof value === "function" || value === undefined ? undefined : value;
  if (depth > 6) return "[…]";
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(value)) {
    if (typeof item === "function") continue;
    out[name] = SECRET_NAME.test(name) && item != null ? "[redacted]" : redactSecrets(item, depth + 1);
  }
  return out;
}

const json = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(redactSecrets(value)));

/** What {@link audited} records about a write. */
export interface AuditSpec<T> {
  /** The admin field or command, for example `adminTopUpAccount`. */
  action: string;
  /** The kind of object written: `api_key`, `customer`, `vendor`, `product`, `channel`, `delivery`, `operator`. */
  objectType: string;
  /** The object's id when known before the write. */
  objectId?: string | null;
  /** Reads the object before the write, inside the transaction. */
  before?: (trx: Knex.Transaction) => Promise<unknown>;
  /** The object after the write (default: the result). */
  after?: (result: T, trx: Knex.Transaction) => unknown;
  /** The object's id when only the write tells it (a created key). */
  objectIdOf?: (result: T) => string | null;
  /** The ledger entry the write wrote, for a money write. */
  ledgerEntryOf?: (result: T) => number | null | undefined;
}

/**
 * Runs a write and its audit row in one transaction. The row is inserted first (on SQLite the
 * transaction holds the write lock from its first statement, so reading `before` cannot race a
 * writer in another process), then completed with what the write did.
 * @param work the write; it runs inside the transaction (domain functions given `trx` nest a savepoint)
 * @returns what `work` returned
 * @throws whatever `work` or `before` throws; the transaction then rolls back, audit row included
 */
export async function audited<T>(db: Db, actor: AuditActor, spec: AuditSpec<NoInfer<T>>, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return db.transaction(async (trx) => {
    const [inserted] = (await trx("audit_log")
      .insert({
        at: nowIso(),
        operator_id: actor.operatorId,
        actor: fitText(actor.actor, 254),
        role: actor.role,
        action: fitText(spec.action, 80),
        object_type: spec.objectType,
        object_id: fitText(spec.objectId ?? null, 200),
        request_id: fitText(actor.requestId, 80),
      })
      .returning("id")) as ({ id: number } | number)[];
    const id = typeof inserted === "object" ? inserted!.id : inserted!;
    const before = spec.before ? await spec.before(trx) : null;
    const result = await work(trx);
    const after = spec.after ? await spec.after(result, trx) : result;
    await trx("audit_log")
      .where("id", id)
      .update({
        object_id: fitText(spec.objectId ?? spec.objectIdOf?.(result) ?? null, 200),
        before: json(before),
        after: json(after),
        ledger_entry_id: spec.ledgerEntryOf?.(result) ?? null,
      });
    return result;
  });
}

/** Filters of {@link listAudit}; each narrows the list. */
export interface AuditFilter {
  operatorId?: string | null;
  /** `break-glass`, `cli` or an operator's email. */
  actor?: string | null;
  objectType?: string | null;
  objectId?: string | null;
  /** ISO 8601: rows at or after. */
  since?: string | null;
  /** ISO 8601: rows before. */
  until?: string | null;
}

const toEntry = (row: Record<string, unknown>): AuditEntry => ({
  id: Number(row.id),
  at: String(row.at),
  operatorId: (row.operator_id as string | null) ?? null,
  actor: String(row.actor),
  role: (row.role as string | null) ?? null,
  action: String(row.action),
  objectType: String(row.object_type),
  objectId: (row.object_id as string | null) ?? null,
  requestId: (row.request_id as string | null) ?? null,
  before: (row.before as string | null) ?? null,
  after: (row.after as string | null) ?? null,
  ledgerEntryId: row.ledger_entry_id == null ? null : Number(row.ledger_entry_id),
});

/** An ISO 8601 bound of the filter, normalized to UTC. @throws AppError 422 naming the field */
function timeBound(value: string | null | undefined, field: string): string | null {
  if (value == null || value === "") return null;
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || !Number.isFinite(ms)) {
    throw new AppError("validation_failed", `${field} must be an ISO 8601 date-time, for example 2026-01-31T00:00:00Z`, { field });
  }
  return new Date(ms).toISOString();
}

/**
 * A page of the audit log, newest first (keyset over the serial id).
 * @throws AppError `validation_failed` (422) for a bad `since`/`until`; `invalid_request` for a bad cursor
 */
export async function listAudit(db: Db | Knex.Transaction, filter: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>> {
  const query = db("audit_log").select("*");
  if (filter.operatorId) query.where("operator_id", filter.operatorId);
  if (filter.actor) query.where("actor", filter.actor);
  if (filter.objectType) query.where("object_type", filter.objectType);
  if (filter.objectId) query.where("object_id", filter.objectId);
  const since = timeBound(filter.since, "since");
  const until = timeBound(filter.until, "until");
  if (since) query.where("at", ">=", since);
  if (until) query.where("at", "<", until);
  return keysetPage(query, bySerial("id"), page, toEntry);
}

/** A money write of an operator without its audit row (`switchyard verify`). */
export interface AuditDiscrepancy {
  kind: "operator_money_write_unaudited";
  subject: string;
  detail: string;
}

/**
 * Checks that every operator money write since the audit log began (ledger entries of kind
 * `topup` and `adjustment`: only operators write them, through admin GraphQL or the CLI) has an
 * audit row naming its ledger entry.
 * @returns one discrepancy per unaudited entry (at most 1,000)
 */
export async function verifyAudit(db: Db): Promise<AuditDiscrepancy[]> {
  const started = await db("audit_log").where("action", "audit.started").first("ledger_entry_id");
  const since = Number(started?.ledger_entry_id ?? 0);
  const rows: { id: number; kind: string; account_id: string; amount: number }[] = await db("ledger_entries as e")
    .leftJoin("audit_log as a", "a.ledger_entry_id", "e.id")
    .whereIn("e.kind", ["topup", "adjustment"])
    .andWhere("e.id", ">", since)
    .whereNull("a.id")
    .orderBy("e.id")
    .limit(1000)
    .select("e.id", "e.kind", "e.account_id", "e.amount");
  return rows.map((row) => ({
    kind: "operator_money_write_unaudited",
    subject: `ledger_entry ${row.id}`,
    detail: `${row.kind} of ${row.amount} milli-yuan on ${row.account_id} has no audit row`,
  }));
}
