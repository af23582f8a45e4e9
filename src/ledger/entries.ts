/**
 * Reading ledger entries for operators (issue 16 "Operator console": every write shows the ledger
 * entry it made). Amounts are signed milli-yuan (debits negative), times ISO 8601.
 */
import type { Knex } from "knex";
import type { LedgerEntry, LedgerEntryKind } from "./index.ts";

/** A ledger entry with the reason it was written for. */
export interface LedgerEntryView extends LedgerEntry {
  reason: string | null;
}

/** A `ledger_entries` row as the database returns it (amounts may be strings on PostgreSQL). */
export interface LedgerEntryRow {
  id: number | string;
  account_id: string;
  customer_id: string | null;
  key_id: string | null;
  kind: string;
  amount: number | string;
  balance_after: number | string;
  ref: string | null;
  task_id: string | null;
  order_id: string | null;
  reason: string | null;
  created_at: string;
}

/** A `ledger_entries` row as a {@link LedgerEntryView}. */
export function toLedgerEntry(row: LedgerEntryRow): LedgerEntryView {
  return {
    id: Number(row.id),
    accountId: row.account_id,
    customerId: row.customer_id ?? null,
    keyId: row.key_id ?? null,
    kind: row.kind as LedgerEntryKind,
    amount: Number(row.amount),
    balanceAfter: Number(row.balance_after),
    ref: row.ref ?? null,
    taskId: row.task_id ?? null,
    orderId: row.order_id ?? null,
    reason: row.reason ?? null,
    createdAt: row.created_at,
  };
}

/**
 * The newest entry of a wallet: inside the transaction that just wrote one, that entry (the
 * wallet's row is locked by the balance update until commit). One index range: (`account_id`,
 * `id`), or (`account_id`, `customer_id`, `id`) for a customer.
 * @param customerId a cloud customer's wallet; omitted: the account's own wallet
 * @returns the entry, or null when the wallet has none
 */
export async function newestEntryOf(db: Knex | Knex.Transaction, accountId: string, customerId?: string | null): Promise<LedgerEntryView | null> {
  const query = db("ledger_entries").where("account_id", accountId);
  if (customerId) query.andWhere("customer_id", customerId);
  else query.whereNull("customer_id");
  const row = await query.orderBy("id", "desc").first();
  return row ? toLedgerEntry(row) : null;
}

/**
 * The entries of many orders (their payments, renewals and refunds), oldest first, in one statement.
 * @returns each order's entries (an empty list for an order without any)
 */
export async function entriesOfOrders(db: Knex, orderIds: readonly string[]): Promise<Map<string, LedgerEntryView[]>> {
  const byOrder = new Map<string, LedgerEntryView[]>(orderIds.map((id) => [id, []]));
  if (orderIds.length === 0) return byOrder;
  const rows = await db("ledger_entries")
    .whereIn("order_id", [...new Set(orderIds)])
    .orderBy("id");
  for (const row of rows) byOrder.get(row.order_id)?.push(toLedgerEntry(row));
  return byOrder;
}
