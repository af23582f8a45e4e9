/**
 * The ledger (docs/architecture.md §3): every balance change is an append-only entry written in the same
 * transaction as the change it pays for. The stored balance is a cache of the entries' sum.
 */
import { AppError } from "../errors.ts";
import { assertMilli, type MilliYuan } from "../money.ts";
import { fitText, nowIso, type Db } from "../db/index.ts";
import type { Knex } from "knex";
import { addKeyTotals, spentDelta, verifyTotals, type KeyTotalsDelta } from "./totals.ts";

/** What a ledger entry records. */
export type LedgerEntryKind = "topup" | "debit" | "refund" | "adjustment";

/** One movement of money on an account. */
export interface LedgerMovement {
  accountId: string;
  /**
   * A cloud customer's wallet inside the account (docs/api/cloud.md §2 "Balance"); omitted for the
   * account's own wallet (generation tasks).
   */
  customerId?: string | null;
  keyId?: string | null;
  /** Positive milli-yuan; the sign follows from the operation. */
  amount: MilliYuan;
  /**
   * What the entry pays for, unique across the ledger so it happens once (for example
   * `task:<id>:debit`). A second entry with the same ref fails the whole transaction.
   */
  ref?: string | null;
  taskId?: string | null;
  orderId?: string | null;
  reason?: string | null;
  /**
   * What else the entry moves on its key's running totals (src/ledger/totals.ts), in the same
   * UPDATE as `spent`: a task's billed units when its refund changes them.
   */
  keyTotals?: KeyTotalsDelta;
}

/** A stored ledger entry as returned to callers. */
export interface LedgerEntry {
  id: number;
  accountId: string;
  customerId: string | null;
  keyId: string | null;
  kind: LedgerEntryKind;
  amount: MilliYuan;
  balanceAfter: MilliYuan;
  ref: string | null;
  taskId: string | null;
  orderId: string | null;
  createdAt: string;
}

type Executor = Knex | Knex.Transaction;

/** The row holding the cached balance a movement changes: the account's, or a customer's. */
function wallet(db: Executor, movement: Pick<LedgerMovement, "accountId" | "customerId">) {
  return movement.customerId
    ? db("customers").where({ account_id: movement.accountId, customer_id: movement.customerId })
    : db("accounts").where("id", movement.accountId);
}

/**
 * Debits an account if the balance (plus its credit line) covers the amount: one conditional
 * update, so concurrent debits can never take a balance below minus the credit line.
 * Must run inside the transaction that records what the money pays for.
 * @param trx the open transaction
 * @param movement account, positive milli-yuan amount, unique ref
 * @returns the balance after the debit, in milli-yuan
 * @throws AppError `insufficient_balance` (402) when it does not fit; nothing is written
 */
export async function debit(trx: Knex.Transaction, movement: LedgerMovement): Promise<MilliYuan> {
  const amount = assertPositive(movement.amount);
  const updated = await balanceReturned(wallet(trx, movement).andWhereRaw("balance - ? >= -credit_line", [amount]).decrement("balance", amount));
  if (updated === null) throw new AppError("insufficient_balance");
  return appendEntry(trx, "debit", -amount, movement, updated);
}

/**
 * Credits an account (top-up, refund or adjustment).
 * @param trx the open transaction
 * @param kind `topup`, `refund` or `adjustment`
 * @param movement account, positive milli-yuan amount, unique ref
 * @returns the balance after the credit, in milli-yuan
 * @throws AppError `not_found` when the account (or customer) does not exist
 */
export async function credit(trx: Knex.Transaction, kind: Exclude<LedgerEntryKind, "debit">, movement: LedgerMovement): Promise<MilliYuan> {
  const amount = assertPositive(movement.amount);
  const updated = await balanceReturned(wallet(trx, movement).increment("balance", amount));
  if (updated === null) throw new AppError("not_found", movement.customerId ? "Customer not found" : "Account not found");
  return appendEntry(trx, kind, amount, movement, updated);
}

/**
 * Runs a wallet's balance UPDATE with `RETURNING balance` (SQLite ≥ 3.35 and PostgreSQL): the
 * new balance without a second statement to read it back.
 * @returns the balance after the update in milli-yuan, or null when no row was updated
 */
async function balanceReturned(update: Knex.QueryBuilder): Promise<MilliYuan | null> {
  const rows = (await update.returning("balance")) as unknown as { balance: number | string }[];
  return rows.length === 1 ? Number(rows[0]!.balance) : null;
}

async function appendEntry(
  trx: Knex.Transaction,
  kind: LedgerEntryKind,
  signedAmount: MilliYuan,
  movement: LedgerMovement,
  balanceAfter: MilliYuan,
): Promise<MilliYuan> {
  await trx("ledger_entries").insert({
    account_id: movement.accountId,
    customer_id: movement.customerId ?? null,
    key_id: movement.keyId ?? null,
    kind,
    amount: signedAmount,
    balance_after: balanceAfter,
    ref: movement.ref ?? null,
    task_id: movement.taskId ?? null,
    order_id: movement.orderId ?? null,
    reason: fitText(movement.reason, 200), // varchar(200): an upstream's error message can be longer
    created_at: nowIso(),
  });
  // The key's spent is its generation debits minus refunds, never a customer wallet's (docs/architecture.md §3.7).
  if (movement.keyId) {
    await addKeyTotals(trx, movement.keyId, { ...movement.keyTotals, spent: spentDelta(kind, signedAmount, movement.customerId) });
  }
  return balanceAfter;
}

/**
 * The ledger's rule for an amount: a positive whole number of milli-yuan.
 * @returns the amount
 * @throws RangeError otherwise
 */
export function assertPositive(amount: MilliYuan): MilliYuan {
  assertMilli(amount);
  if (amount <= 0) throw new RangeError(`ledger amounts are positive milli-yuan, got ${amount}`);
  return amount;
}

/**
 * The balance of an account's own wallet (or of one of its customers) in milli-yuan.
 * @throws AppError `not_found` when it does not exist
 */
export async function balanceOf(db: Executor, accountId: string, customerId?: string | null): Promise<MilliYuan> {
  const row = await wallet(db, { accountId, customerId }).first("balance");
  if (!row) throw new AppError("not_found", customerId ? "Customer not found" : "Account not found");
  return Number(row.balance);
}

/** One discrepancy found by {@link verifyLedger}. */
export interface LedgerDiscrepancy {
  kind: string;
  subject: string;
  detail: string;
}

/**
 * Recomputes every balance from its entries and checks the task invariants: each task has
 * exactly one debit equal to its price and at most one refund, and the refund equals what the
 * task records as refunded. Also checks that every refund has a cause (an existing task or order)
 * and the order invariants (see {@link verifyOrders}), and that every running total equals the sum
 * of its rows (`total_mismatch`, src/ledger/totals.ts).
 * @returns every discrepancy found (empty when the books are clean)
 */
export async function verifyLedger(db: Db): Promise<LedgerDiscrepancy[]> {
  const problems: LedgerDiscrepancy[] = [];
  const accounts = await db("accounts as a")
    .leftJoin("ledger_entries as e", (j) => j.on("e.account_id", "a.id").andOnNull("e.customer_id"))
    .groupBy("a.id", "a.balance", "a.credit_line")
    .select("a.id", "a.balance", "a.credit_line", db.raw("coalesce(sum(e.amount), 0) as total"));
  const customers = await db("customers as c")
    .leftJoin("ledger_entries as e", (j) => j.on("e.account_id", "c.account_id").andOn("e.customer_id", "c.customer_id"))
    .groupBy("c.account_id", "c.customer_id", "c.balance", "c.credit_line")
    .select(db.raw("c.account_id || '/' || c.customer_id as id"), "c.balance", "c.credit_line", db.raw("coalesce(sum(e.amount), 0) as total"));
  for (const row of [...accounts, ...customers]) {
    if (Number(row.balance) !== Number(row.total)) {
      problems.push({
        kind: "balance_mismatch",
        subject: row.id,
        detail: `stored balance ${row.balance} != sum of entries ${row.total}`,
      });
    }
    if (Number(row.balance) < -Number(row.credit_line)) {
      problems.push({ kind: "balance_below_credit_line", subject: row.id, detail: `balance ${row.balance}, credit line ${row.credit_line}` });
    }
  }
  const tasks = await db("tasks as t")
    .leftJoin("ledger_entries as e", "e.task_id", "t.id")
    .groupBy("t.id", "t.price", "t.refunded", "t.status")
    .select(
      "t.id",
      "t.price",
      "t.refunded",
      "t.status",
      db.raw("sum(case when e.kind = 'debit' then 1 else 0 end) as debits"),
      db.raw("coalesce(sum(case when e.kind = 'debit' then -e.amount else 0 end), 0) as debited"),
      db.raw("sum(case when e.kind = 'refund' then 1 else 0 end) as refunds"),
      db.raw("coalesce(sum(case when e.kind = 'refund' then e.amount else 0 end), 0) as refunded_total"),
    );
  for (const t of tasks) {
    if (Number(t.debits) !== 1 || Number(t.debited) !== Number(t.price)) {
      problems.push({ kind: "task_debit", subject: t.id, detail: `${t.debits} debits totalling ${t.debited}, price ${t.price}` });
    }
    if (Number(t.refunds) > 1) {
      problems.push({ kind: "task_refunds", subject: t.id, detail: `${t.refunds} refunds` });
    }
    if (Number(t.refunded_total) !== Number(t.refunded)) {
      problems.push({ kind: "task_refund_amount", subject: t.id, detail: `refund entries ${t.refunded_total} != task refunded ${t.refunded}` });
    }
    if (Number(t.status) === 2 && Number(t.refunded) !== Number(t.price)) {
      problems.push({ kind: "failed_task_not_refunded", subject: t.id, detail: `refunded ${t.refunded} of ${t.price}` });
    }
  }
  problems.push(...(await verifyRefundCauses(db)), ...(await verifyOrders(db)), ...(await verifyTotals(db)));
  return problems;
}

/** Every refund entry names its cause, and the task or order it names exists. */
async function verifyRefundCauses(db: Db): Promise<LedgerDiscrepancy[]> {
  const problems: LedgerDiscrepancy[] = [];
  const refunds = await db("ledger_entries as e")
    .leftJoin("tasks as t", "t.id", "e.task_id")
    .leftJoin("orders as o", "o.id", "e.order_id")
    .where("e.kind", "refund")
    .andWhere((q) =>
      q
        .where((n) => n.whereNull("e.task_id").whereNull("e.order_id"))
        .orWhere((t) => t.whereNotNull("e.task_id").whereNull("t.id"))
        .orWhere((o) => o.whereNotNull("e.order_id").whereNull("o.id")),
    )
    .select("e.id", "e.ref", "e.task_id", "e.order_id");
  for (const r of refunds) {
    const detail = r.task_id
      ? `refund names task ${r.task_id}, which does not exist`
      : r.order_id
        ? `refund names order ${r.order_id}, which does not exist`
        : "refund tied to no task or order";
    problems.push({ kind: "refund_without_cause", subject: String(r.id), detail: r.ref ? `${detail} (ref ${r.ref})` : detail });
  }
  return problems;
}

/**
 * The order invariants (cloud orders, src/cloud/orders/): a paid or refunded order has exactly
 * one `order:<id>:pay` deduction equal to its amount; a refunded order exactly one
 * `order:<id>:refund` equal to it and any other order none; every `order:<id>:renew:<n>`
 * deduction belongs to that order, which was paid; an unpaid order has no entries at all.
 */
async function verifyOrders(db: Db): Promise<LedgerDiscrepancy[]> {
  const problems: LedgerDiscrepancy[] = [];
  const orders = await db("orders as o")
    .leftJoin("ledger_entries as e", "e.order_id", "o.id")
    .groupBy("o.id", "o.amount", "o.payment_status")
    .select(
      "o.id",
      "o.amount",
      "o.payment_status",
      db.raw("count(e.id) as entries"),
      db.raw("sum(case when e.ref = 'order:' || o.id || ':pay' then 1 else 0 end) as pays"),
      db.raw("coalesce(sum(case when e.ref = 'order:' || o.id || ':pay' then e.amount else 0 end), 0) as paid_total"),
      db.raw("sum(case when e.ref = 'order:' || o.id || ':pay' and e.kind <> 'debit' then 1 else 0 end) as pays_not_debit"),
      db.raw("sum(case when e.kind = 'refund' then 1 else 0 end) as refunds"),
      db.raw("sum(case when e.ref = 'order:' || o.id || ':refund' then 1 else 0 end) as refund_refs"),
      db.raw("coalesce(sum(case when e.kind = 'refund' then e.amount else 0 end), 0) as refunded_total"),
    );
  for (const o of orders) {
    const amount = Number(o.amount);
    const paid = o.payment_status === "paid" || o.payment_status === "refunded";
    if (paid) {
      if (Number(o.pays) !== 1 || Number(o.pays_not_debit) !== 0 || -Number(o.paid_total) !== amount) {
        problems.push({
          kind: "order_payment",
          subject: o.id,
          detail: `${o.pays} order:${o.id}:pay deductions totalling ${-Number(o.paid_total)}, amount ${amount}`,
        });
      }
    } else if (Number(o.entries) > 0) {
      problems.push({ kind: "unpaid_order_entries", subject: o.id, detail: `payment_status ${o.payment_status} but ${o.entries} ledger entries` });
    }
    if (o.payment_status === "refunded") {
      if (Number(o.refunds) !== 1 || Number(o.refund_refs) !== 1 || Number(o.refunded_total) !== amount) {
        problems.push({ kind: "order_refund", subject: o.id, detail: `${o.refunds} refunds totalling ${o.refunded_total}, amount ${amount}` });
      }
    } else if (paid && Number(o.refunds) > 0) {
      problems.push({ kind: "order_refund", subject: o.id, detail: `payment_status paid but ${o.refunds} refunds totalling ${o.refunded_total}` });
    }
  }
  // Entries whose ref names an order: the order must exist, be the entry's order_id, and be paid.
  const orderRefs = await db("ledger_entries as e")
    .leftJoin("orders as o", "o.id", "e.order_id")
    .where("e.ref", "like", "order:%")
    .select("e.id", "e.ref", "e.kind", "e.order_id", "o.id as order_exists", "o.payment_status");
  for (const e of orderRefs) {
    const match = /^order:(.+):(pay|refund|renew:\d+)$/.exec(e.ref);
    if (!match || match[1] !== e.order_id || !e.order_exists) {
      problems.push({
        kind: "order_entry_without_order",
        subject: String(e.id),
        detail: `ref ${e.ref} belongs to no order${e.order_id ? ` (entry names ${e.order_id})` : ""}`,
      });
      continue;
    }
    if (match[2]!.startsWith("renew:") && (e.kind !== "debit" || e.payment_status !== "paid")) {
      problems.push({
        kind: "order_renewal",
        subject: String(e.id),
        detail: `renewal ${e.ref} is a ${e.kind} on an order whose payment_status is ${e.payment_status}`,
      });
    }
  }
  return problems;
}
