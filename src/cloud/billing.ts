/**
 * Cloud billing reads (docs/api/cloud.md §2 "Transaction", "Statement"; part 4
 * `GET /billing/transactions`, `GET /billing/statements/{statement_id}`; docs/architecture.md §3, §8).
 *
 * Transactions are the ledger entries of the caller's account that belong to a customer wallet:
 * the ledger is the only source of money facts, so a transaction list, a statement and a balance
 * can never disagree. Statements are monthly (UTC); reading one requests its CSV export, which a
 * worker step ({@link processStatementExports}) turns from `pending` into `ready`.
 */
import { AppError, notOneOfError } from "../errors.ts";
import { nowIso, type Db } from "../db/index.ts";
import type { Caller } from "../auth/keys.ts";
import { formatYuan, type MilliYuan } from "../money.ts";
import { csvRecordCount, toCsv } from "../csv.ts";
import { bySerial, keysetPage, type Page, type PageRequest } from "../pagination.ts";
import { isOneOf, TRANSACTION_TYPES, type TransactionType } from "./states.ts";

/** One money movement of a customer wallet. Amounts in signed milli-yuan, times ISO 8601. */
export interface TransactionRecord {
  /** `txn_<ledger entry id>`. */
  id: string;
  customerId: string;
  orderId: string | null;
  type: TransactionType;
  /** Signed: deductions negative. */
  amount: MilliYuan;
  balanceAfter: MilliYuan;
  createdAt: string;
}

/** Filters of {@link listTransactions}; all optional and combined with AND. */
export interface TransactionFilter {
  customerId?: string | null;
  orderId?: string | null;
  type?: string | null;
  /** ISO 8601 date (`2024-05-01`, from 00:00 UTC) or date-time (without an offset: UTC); inclusive. */
  start?: string | null;
  /** ISO 8601 date (through the end of that day, UTC) or date-time (inclusive). */
  end?: string | null;
}

/** Export states of a statement's CSV. */
export type ExportStatus = "pending" | "ready";

/** A monthly statement (docs/api/cloud.md §2 "Statement"; docs/architecture.md §8). */
export interface StatementRecord {
  /** `stm_YYYY-MM`. */
  id: string;
  /** `YYYY-MM` (UTC month). */
  period: string;
  /** Sum of the month's customer transactions, signed milli-yuan. */
  totalAmount: MilliYuan;
  /** The month's transactions, oldest first. */
  items: TransactionRecord[];
  exportStatus: ExportStatus;
  exportReady: boolean;
  /** The CSV text once the export is ready, else null. */
  csv: string | null;
}

/** Header row of a statement CSV. */
export const STATEMENT_CSV_HEADER = "transaction_id,customer_id,order_id,type,amount,balance_after,created_at";

/** A `ledger_entries` row of a customer wallet (money columns are bigint: strings on PostgreSQL). */
export interface TransactionRow {
  id: number | string;
  customer_id: string;
  order_id: string | null;
  kind: "debit" | Exclude<TransactionType, "deduction">;
  amount: number | string;
  balance_after: number | string;
  created_at: string;
}

/** Converts a `ledger_entries` row of a customer wallet. */
export function toTransactionRecord(row: TransactionRow): TransactionRecord {
  return {
    id: `txn_${row.id}`,
    customerId: row.customer_id,
    orderId: row.order_id ?? null,
    type: row.kind === "debit" ? "deduction" : row.kind,
    amount: Number(row.amount),
    balanceAfter: Number(row.balance_after),
    createdAt: row.created_at,
  };
}

const TIME_PATTERN = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Parses an ISO 8601 date or date-time strictly (no rolled-over dates such as 2024-02-30).
 * A date-time without an offset is UTC.
 * @returns epoch milliseconds and whether only a date was given, or null when unparsable
 */
export function parseIsoTime(value: string): { ms: number; dateOnly: boolean } | null {
  const m = TIME_PATTERN.exec(value);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, offset] = m;
  const year = Number(y),
    month = Number(mo),
    day = Number(d);
  const hour = Number(h ?? 0),
    minute = Number(mi ?? 0),
    second = Number(s ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (offset && offset !== "Z") {
    const om = /^([+-])(\d{2}):?(\d{2})$/.exec(offset)!;
    const oh = Number(om[2]),
      omin = Number(om[3]);
    if (oh > 14 || omin > 59) return null;
    offsetMinutes = (om[1] === "-" ? -1 : 1) * (oh * 60 + omin);
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, Number((frac ?? "0").slice(0, 3).padEnd(3, "0"))) - offsetMinutes * 60_000;
  return Number.isFinite(ms) ? { ms, dateOnly: h === undefined } : null;
}

function rangeOf(filter: TransactionFilter): { from: string | null; until: string | null } {
  const bound = (value: string | null | undefined, field: "start" | "end"): number | null => {
    if (value == null || value === "") return null;
    const parsed = typeof value === "string" ? parseIsoTime(value.trim()) : null;
    if (!parsed) throw new AppError("invalid_request", `${field} must be an ISO 8601 date or date-time`, { field });
    // An end given as a date covers that whole day; a date-time end is inclusive.
    return field === "end" ? (parsed.dateOnly ? parsed.ms + 86_400_000 : parsed.ms + 1) : parsed.ms;
  };
  const from = bound(filter.start, "start");
  const until = bound(filter.end, "end"); // exclusive
  if (from != null && until != null && from >= until) throw new AppError("invalid_request", "start must not be after end", { field: "start" });
  return { from: from == null ? null : new Date(from).toISOString(), until: until == null ? null : new Date(until).toISOString() };
}

/**
 * Lists the transactions of the caller's account's customers, newest first (keyset on the
 * ledger entry id), filtered by customer, order, type and time range.
 * @param filter `customerId`, `orderId`, `type` (`topup`, `deduction`, `refund`, `adjustment`),
 *   `start`, `end` (ISO 8601; see {@link TransactionFilter})
 * @param page `first` (1-100) and the opaque cursor `after`
 * @returns a page of transactions
 * @throws AppError `invalid_request` (400) with `details.field` `type`, `start`, `end` (unparsable,
 *   or start after end) or `cursor`
 * @see docs/api/cloud.md §4 `GET /billing/transactions`; docs/architecture.md §8 Transaction
 */
export async function listTransactions(db: Db, caller: Caller, filter: TransactionFilter, page: PageRequest): Promise<Page<TransactionRecord>> {
  const query = db("ledger_entries").where("account_id", caller.accountId).whereNotNull("customer_id");
  if (filter.type != null && filter.type !== "") {
    if (!isOneOf(TRANSACTION_TYPES, filter.type)) {
      throw notOneOfError("invalid_request", "type", TRANSACTION_TYPES);
    }
    query.andWhere("kind", filter.type === "deduction" ? "debit" : filter.type);
  }
  const { from, until } = rangeOf(filter);
  if (filter.customerId != null && filter.customerId !== "") query.andWhere("customer_id", filter.customerId);
  if (filter.orderId != null && filter.orderId !== "") query.andWhere("order_id", filter.orderId);
  if (from) query.andWhere("created_at", ">=", from);
  if (until) query.andWhere("created_at", "<", until);
  return keysetPage(query, bySerial(), page, toTransactionRecord);
}

/** The ledger entry id of a transaction id `txn_<n>`, or null when the id has another form. */
function ledgerIdOf(transactionId: string): number | null {
  const m = typeof transactionId === "string" ? /^txn_([1-9][0-9]{0,14})$/.exec(transactionId) : null;
  return m ? Number(m[1]) : null;
}

/**
 * Reads transactions of the caller's account's customers by id in one query: the rule of
 * {@link listTransactions} (ledger entries of the caller's account that belong to a customer
 * wallet), for DataLoader (`_entities`, `node`, `nodes`).
 * @param ids transaction ids, `txn_<ledger entry id>` (any strings)
 * @returns one entry per id, null where malformed, unknown, another account's or not a customer's
 */
export async function getTransactionsByIds(db: Db, caller: Caller, ids: readonly string[]): Promise<(TransactionRecord | null)[]> {
  const wanted = [...new Set(ids.map(ledgerIdOf).filter((n): n is number => n !== null))];
  if (wanted.length === 0) return ids.map(() => null);
  const rows: TransactionRow[] = await db("ledger_entries").whereIn("id", wanted).andWhere("account_id", caller.accountId).whereNotNull("customer_id");
  const byId = new Map(rows.map((row) => [`txn_${row.id}`, toTransactionRecord(row)]));
  return ids.map((id) => byId.get(id) ?? null);
}

/** The UTC month of a statement id, or null when the id is malformed or the month has not begun. */
function periodOf(statementId: string, nowMs: number): { period: string; from: string; until: string } | null {
  const m = typeof statementId === "string" ? /^stm_(\d{4})-(\d{2})$/.exec(statementId) : null;
  if (!m) return null;
  const year = Number(m[1]),
    month = Number(m[2]);
  if (year < 1970 || month < 1 || month > 12) return null;
  const from = Date.UTC(year, month - 1, 1);
  if (from > nowMs) return null;
  return { period: `${m[1]}-${m[2]}`, from: new Date(from).toISOString(), until: new Date(Date.UTC(year, month, 1)).toISOString() };
}

async function monthEntries(db: Db, accountId: string, range: { from: string; until: string }): Promise<TransactionRecord[]> {
  const rows = await db("ledger_entries")
    .where("account_id", accountId)
    .whereNotNull("customer_id")
    .andWhere("created_at", ">=", range.from)
    .andWhere("created_at", "<", range.until)
    .orderBy("id", "asc");
  return rows.map(toTransactionRecord);
}

/**
 * The CSV of a statement's items (header {@link STATEMENT_CSV_HEADER}; amounts in decimal yuan), written
 * by src/csv.ts: quoted per RFC 4180, and a cell a spreadsheet would run as a formula (a caller's
 * `customer_id` of `=1+2`) written as text with a leading `'`.
 */
export function statementCsv(items: TransactionRecord[]): string {
  return toCsv(
    STATEMENT_CSV_HEADER.split(","),
    items.map((t) => [t.id, t.customerId, t.orderId, t.type, formatYuan(t.amount), formatYuan(t.balanceAfter), t.createdAt]),
  );
}

/** Rows of a stored statement CSV, its header not counted. */
function csvRowCount(csv: string): number {
  return Math.max(0, csvRecordCount(csv) - 1);
}

/**
 * Reads a monthly statement of the caller's account and requests its CSV export when none
 * exists. A ready export that no longer matches the month's items (an open month got new
 * transactions) is requested again and shows `pending` until regenerated.
 * @param statementId `stm_YYYY-MM`
 * @param opts `now` in epoch milliseconds (tests); default the clock
 * @returns total, items (oldest first), export status and, once ready, the CSV
 * @throws AppError `not_found` (404) `Statement not found` for another format or a month that has
 *   not begun
 * @see docs/api/cloud.md §4 `GET /billing/statements/{statement_id}`; docs/architecture.md §8 Statement
 */
export async function getStatement(db: Db, caller: Caller, statementId: string, opts: { now?: number } = {}): Promise<StatementRecord> {
  const nowMs = opts.now ?? Date.now();
  const range = periodOf(statementId, nowMs);
  if (!range) throw new AppError("not_found", "Statement not found");
  const items = await monthEntries(db, caller.accountId, range);
  const where = { account_id: caller.accountId, period: range.period };
  const requestedAt = new Date(nowMs).toISOString();
  let row = await db("statement_exports").where(where).first();
  if (!row) {
    await db("statement_exports")
      .insert({ ...where, status: "pending", csv: null, requested_at: requestedAt, ready_at: null })
      .onConflict(["account_id", "period"])
      .ignore();
    row = await db("statement_exports").where(where).first();
  } else if (row.status === "ready" && csvRowCount(row.csv ?? "") !== items.length) {
    await db("statement_exports")
      .where({ ...where, status: "ready" })
      .update({ status: "pending", csv: null, requested_at: requestedAt, ready_at: null });
    row = await db("statement_exports").where(where).first();
  }
  const ready = row?.status === "ready";
  return {
    id: `stm_${range.period}`,
    period: range.period,
    totalAmount: items.reduce((sum, t) => sum + t.amount, 0),
    items,
    exportStatus: ready ? "ready" : "pending",
    exportReady: ready,
    csv: ready ? row.csv : null,
  };
}

/**
 * The worker step of statement exports: every `pending` export requested at least `delayMs` ago
 * becomes `ready` with its CSV (compare-and-swap on the status, so two workers never both write).
 * @param opts `delayMs` (how long an export stays pending), `now` in epoch milliseconds (tests)
 * @returns how many exports became ready
 * @see issue 3 "Billing" (export status from pending to ready)
 */
export async function processStatementExports(db: Db, opts: { delayMs: number; now?: number }): Promise<number> {
  const nowMs = opts.now ?? Date.now();
  const due = await db("statement_exports")
    .where("status", "pending")
    .andWhere("requested_at", "<=", new Date(nowMs - opts.delayMs).toISOString())
    .limit(100);
  let done = 0;
  for (const row of due) {
    const [year, month] = (row.period as string).split("-").map(Number) as [number, number];
    const items = await monthEntries(db, row.account_id, {
      from: new Date(Date.UTC(year, month - 1, 1)).toISOString(),
      until: new Date(Date.UTC(year, month, 1)).toISOString(),
    });
    const updated = await db("statement_exports")
      .where({ account_id: row.account_id, period: row.period, status: "pending", requested_at: row.requested_at })
      .update({ status: "ready", csv: statementCsv(items), ready_at: opts.now != null ? new Date(nowMs).toISOString() : nowIso() });
    done += updated;
  }
  return done;
}

/**
 * The CSV export of a statement of the caller's account.
 * @param statementId `stm_YYYY-MM`
 * @returns the CSV text (header {@link STATEMENT_CSV_HEADER})
 * @throws AppError `not_found` (404) `Statement not found`; `conflict` (409) while the export is
 *   pending (the call requests it when it was never requested)
 * @see issue 3 "Billing" (statements with an export)
 */
export async function getStatementCsv(db: Db, caller: Caller, statementId: string, opts: { now?: number } = {}): Promise<string> {
  const statement = await getStatement(db, caller, statementId, opts);
  if (!statement.exportReady || statement.csv == null) throw new AppError("conflict", "The statement export is not ready yet", { export_status: "pending" });
  return statement.csv;
}
