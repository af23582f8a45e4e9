/**
 * Cloud customers (docs/api/cloud.md §2 "Balance"; docs/architecture.md §2 CLI `customers topup|credit`, §3 money).
 *
 * A customer is a wallet inside an account, named by the caller's own `customer_id` string. Its
 * balance is the sum of its ledger entries (the `customers.balance` column is a cache updated in
 * the same transaction) and may go down to minus its credit line, never further. Every movement
 * writes `billing.transaction.created` to the outbox in the same transaction (docs/architecture.md §6).
 */
import type { Knex } from "knex";
import { AppError } from "../errors.ts";
import { credit } from "../ledger/index.ts";
import { toLedgerEntry, type LedgerEntryView } from "../ledger/entries.ts";
import { appendOutbox } from "../events/outbox.ts";
import { fitText, nowIso, type Db } from "../db/index.ts";
import { selectRows } from "../db/rows.ts";
import { newId } from "../ids.ts";
import { formatYuan, type MilliYuan } from "../money.ts";
import { hasInvisible } from "../text.ts";

/** The balance of one customer, in milli-yuan (docs/api/cloud.md §2 "Balance"). */
export interface CustomerBalance {
  customerId: string;
  /** The ledger balance: what the customer can spend (negative while using the credit line). */
  available: MilliYuan;
  /** Paid for orders still provisioning: already deducted, refunded if provisioning fails. */
  frozen: MilliYuan;
  /** How far below zero the balance may go. */
  creditLine: MilliYuan;
}

/** What {@link topUpCustomer} and {@link adjustCustomer} take; amounts in milli-yuan. */
export interface CustomerMovement {
  accountId: string;
  customerId: string;
  /** Top-up: positive. Adjustment: signed, non-zero. */
  amount: MilliYuan;
  /** The key that asked for it (receives the callback); omitted: the account's callback key. */
  keyId?: string | null;
  /** The request that caused it (the callback's `request_id`). */
  requestId?: string | null;
  reason?: string | null;
}

type Executor = Knex | Knex.Transaction;

/** Largest amount a single top-up or adjustment may move: 100 million yuan in milli-yuan. */
export const MAX_MOVEMENT: MilliYuan = 100_000_000_000;

/**
 * Checks a customer id given by a caller: 1-64 characters, none of them white space, a control,
 * format or other invisible character (src/text.ts `hasInvisible`: `cust\u200B42` is not `cust42`).
 * @returns the id
 * @throws AppError `validation_failed` (422) with `details.field` = `field`
 */
export function checkCustomerId(value: unknown, field = "customer_id"): string {
  if (typeof value !== "string" || value.length === 0 || value.length > 64 || hasInvisible(value)) {
    throw new AppError("validation_failed", `${field} must be a string of 1-64 characters without spaces`, { field });
  }
  return value;
}

/**
 * Creates the customer's wallet when it does not exist yet (balance 0, no credit line), and
 * records a new contact when one is given.
 * @param trx the open transaction
 * @param accountId an existing account
 * @param customerId the caller's customer id
 * @param contact the customer's contact address, kept when given
 * @returns nothing
 */
export async function ensureCustomer(trx: Knex.Transaction, accountId: string, customerId: string, contact?: string | null): Promise<void> {
  await trx("customers")
    .insert({ account_id: accountId, customer_id: customerId, contact: contact ?? null, balance: 0, credit_line: 0, created_at: nowIso() })
    .onConflict(["account_id", "customer_id"])
    .ignore();
  if (contact) {
    await trx("customers").where({ account_id: accountId, customer_id: customerId }).whereRaw("coalesce(contact, '') <> ?", [contact]).update({ contact });
  }
}

async function assertAccount(trx: Executor, accountId: string): Promise<void> {
  const row = typeof accountId === "string" ? await trx("accounts").where("id", accountId).first("id") : undefined;
  if (!row) throw new AppError("not_found", "Account not found");
}

function checkAmount(amount: unknown, allowNegative: boolean): MilliYuan {
  const ok = typeof amount === "number" && Number.isSafeInteger(amount) && amount !== 0 && Math.abs(amount) <= MAX_MOVEMENT && (allowNegative || amount > 0);
  if (!ok) {
    throw new AppError(
      "validation_failed",
      allowNegative ? "amount must be a non-zero integer of milli-yuan" : "amount must be a positive integer of milli-yuan",
      { field: "amount" },
    );
  }
  return amount as MilliYuan;
}

/**
 * The key whose callback URL receives an account-level event that no key caused (a top-up from
 * the CLI): the account's oldest active key with a callback URL, else none.
 */
async function callbackKeyOf(trx: Executor, accountId: string): Promise<string | null> {
  const row = await trx("api_keys")
    .where({ account_id: accountId, status: "active" })
    .whereNotNull("callback_url")
    .orderBy([{ column: "created_at" }, { column: "id" }])
    .first("id");
  return row?.id ?? null;
}

/**
 * Writes `billing.transaction.created` for the ledger entry with the given ref (docs/api/cloud.md
 * §6). The aggregate is the transaction id `txn_<ledger entry id>`; amounts are decimal yuan strings.
 * @param trx the open transaction that wrote the entry
 * @param ref the entry's unique ref
 * @param event account, the key receiving the callback, the causing request
 * @returns the transaction id
 */
export async function appendTransactionEvent(
  trx: Knex.Transaction,
  ref: string,
  event: { accountId: string; keyId: string | null; requestId?: string | null },
): Promise<string> {
  const entry = await trx("ledger_entries").where("ref", ref).first();
  if (!entry) throw new Error(`no ledger entry with ref ${ref}`);
  const transactionId = `txn_${entry.id}`;
  await appendOutbox(trx, {
    topic: "billing.transaction.created",
    accountId: event.accountId,
    aggregateId: transactionId,
    keyId: event.keyId,
    requestId: event.requestId ?? null,
    payload: {
      transaction_id: transactionId,
      customer_id: entry.customer_id,
      order_id: entry.order_id ?? null,
      type: entry.kind === "debit" ? "deduction" : entry.kind,
      amount: formatYuan(Number(entry.amount)),
      balance_after: formatYuan(Number(entry.balance_after)),
      created_at: entry.created_at,
    },
  });
  return transactionId;
}

/** A unique ledger ref for a customer movement that pays for no order. */
function movementRef(kind: string): string {
  return `customer:${kind}:${newId("mv")}`;
}

/**
 * Tops up a customer's wallet, creating the customer when it is new: a `topup` ledger entry and
 * the `billing.transaction.created` event, in one transaction.
 * @param movement account, customer, positive milli-yuan amount, the key and request behind it
 * @returns the `topup` entry it wrote (amount and balance after in milli-yuan; the operator console shows it)
 * @throws AppError `validation_failed` (422, field `amount` or `customer_id`),
 *   `not_found` (404) `Account not found`
 * @see docs/architecture.md §2 `customers topup`; docs/api/cloud.md §2 "Transaction" (top-up)
 */
export async function topUpCustomer(db: Db, movement: CustomerMovement): Promise<LedgerEntryView> {
  const amount = checkAmount(movement.amount, false);
  const customerId = checkCustomerId(movement.customerId);
  return db.transaction(async (trx) => {
    await assertAccount(trx, movement.accountId);
    await ensureCustomer(trx, movement.accountId, customerId);
    const ref = movementRef("topup");
    await credit(trx, "topup", {
      accountId: movement.accountId,
      customerId,
      keyId: movement.keyId ?? null,
      amount,
      ref,
      reason: movement.reason ?? "top-up",
    });
    await appendTransactionEvent(trx, ref, {
      accountId: movement.accountId,
      keyId: movement.keyId ?? (await callbackKeyOf(trx, movement.accountId)),
      requestId: movement.requestId,
    });
    return toLedgerEntry(await trx("ledger_entries").where("ref", ref).first());
  });
}

/**
 * Adjusts a customer's wallet by a signed amount (an `adjustment` transaction). A negative
 * adjustment is one conditional update, like a debit: it may take the balance down to minus the
 * credit line and no further, even under concurrent requests.
 * @param movement account, customer, signed non-zero milli-yuan amount, key, request, reason
 * @returns the balance after, in milli-yuan
 * @throws AppError `validation_failed` (422, field `amount`), `not_found` (404)
 *   `Customer not found`, `insufficient_balance` (402) when a negative adjustment does not fit
 * @see docs/api/cloud.md §2 "Transaction" (adjustment)
 */
export async function adjustCustomer(db: Db, movement: CustomerMovement): Promise<MilliYuan> {
  const amount = checkAmount(movement.amount, true);
  const customerId = checkCustomerId(movement.customerId);
  return db.transaction(async (trx) => {
    const where = { account_id: movement.accountId, customer_id: customerId };
    const exists = await trx("customers").where(where).first("customer_id");
    if (!exists) throw new AppError("not_found", "Customer not found");
    const ref = movementRef("adjustment");
    const reason = movement.reason ?? "adjustment";
    if (amount > 0) {
      await credit(trx, "adjustment", { accountId: movement.accountId, customerId, keyId: movement.keyId ?? null, amount, ref, reason });
    } else {
      // The ledger's debit() records kind `debit`; an adjustment needs its own kind with the
      // same conditional update.
      const updated = await trx("customers").where(where).andWhereRaw("balance + ? >= -credit_line", [amount]).increment("balance", amount);
      if (updated !== 1) throw new AppError("insufficient_balance", "The adjustment would take the balance below the credit line");
      const row = await trx("customers").where(where).first("balance");
      await trx("ledger_entries").insert({
        account_id: movement.accountId,
        customer_id: customerId,
        key_id: movement.keyId ?? null,
        kind: "adjustment",
        amount,
        balance_after: Number(row.balance),
        ref,
        reason: fitText(reason, 200),
        created_at: nowIso(),
      });
    }
    await appendTransactionEvent(trx, ref, {
      accountId: movement.accountId,
      keyId: movement.keyId ?? (await callbackKeyOf(trx, movement.accountId)),
      requestId: movement.requestId,
    });
    const row = await trx("customers").where(where).first("balance");
    return Number(row.balance);
  });
}

/**
 * Sets a customer's credit line (how far below zero its balance may go), creating the customer
 * when it is new. A line cannot be lowered below what the customer already owes.
 * @param limitMilli the new credit line, a non-negative integer of milli-yuan
 * @returns the customer's balance
 * @throws AppError `validation_failed` (422, field `limit`), `not_found` (404) `Account not found`,
 *   `conflict` (409) when the balance is already below minus the new line
 * @see docs/architecture.md §2 `customers credit`; docs/api/cloud.md §2 "Balance" (credit line)
 */
export async function setCreditLine(db: Db, accountId: string, customerId: string, limitMilli: MilliYuan): Promise<CustomerBalance> {
  if (!Number.isSafeInteger(limitMilli) || limitMilli < 0 || limitMilli > MAX_MOVEMENT) {
    throw new AppError("validation_failed", "limit must be a non-negative integer of milli-yuan", { field: "limit" });
  }
  checkCustomerId(customerId);
  await db.transaction(async (trx) => {
    await assertAccount(trx, accountId);
    await ensureCustomer(trx, accountId, customerId);
    const updated = await trx("customers")
      .where({ account_id: accountId, customer_id: customerId })
      .andWhereRaw("balance >= ?", [-limitMilli])
      .update({ credit_line: limitMilli });
    if (updated !== 1) throw new AppError("conflict", "The customer already owes more than the new credit line", { field: "limit" });
  });
  return getCustomerBalance(db, accountId, customerId);
}

/**
 * Reads a customer's balance.
 * `frozen` is the sum of the amounts of the customer's orders that are paid and still
 * provisioning: already deducted from `available`, given back if provisioning fails. It is a
 * running total on the customer's row (docs/architecture.md §3.7), so the read is one row.
 * @returns available, frozen and credit line in milli-yuan
 * @throws AppError `not_found` (404) `Customer not found` for a customer the account never had
 * @see docs/api/cloud.md §4 `GET /billing/balance?customer_id=`; docs/architecture.md §8 Balance
 */
export async function getCustomerBalance(db: Executor, accountId: string, customerId: string): Promise<CustomerBalance> {
  const [row] =
    typeof customerId === "string" && customerId.length <= 64
      ? await selectRows<{ balance: number | string; frozen: number | string; credit_line: number | string }>(
          db,
          'select "balance", "frozen", "credit_line" from "customers" where "account_id" = ? and "customer_id" = ? limit 1',
          [accountId, customerId],
        )
      : [];
  if (!row) throw new AppError("not_found", "Customer not found");
  return { customerId, available: Number(row.balance), frozen: Number(row.frozen), creditLine: Number(row.credit_line) };
}
