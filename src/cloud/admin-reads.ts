/**
 * What operators read across accounts (issue 16 "Operator console"; docs/api/cloud.md "Admin"):
 * customer wallets, orders and callback deliveries, each a keyset page over an index
 * (src/db/migrations/010_admin_console_indexes.ts), so a page never reads a whole history and a
 * filtered `totalCount` is counted up to 10,000 (docs/architecture.md §7.2).
 */
import { AppError, notOneOfError } from "../errors.ts";
import type { Db } from "../db/index.ts";
import type { MilliYuan } from "../money.ts";
import { byCreation, bySerial, keysetPage, type Keyset, type Page, type PageRequest } from "../pagination.ts";
import { toOrderRecord, type OrderRecord } from "./order-records.ts";
import { ORDER_STATUSES, type OrderStatus } from "./states.ts";
import { withAttempts, type DeliveryRow, type WebhookDeliveryRecord } from "../events/deliveries.ts";

/** A customer's wallet inside an account; money in milli-yuan. */
export interface CustomerWallet {
  accountId: string;
  customerId: string;
  contact: string | null;
  available: MilliYuan;
  frozen: MilliYuan;
  creditLine: MilliYuan;
  createdAt: string;
}

const text = (value: string | null | undefined, field: string, max = 200): string | undefined => {
  if (value == null) return undefined;
  const trimmed = value.trim();
  if (trimmed.length > max) throw new AppError("validation_failed", `${field} must be at most ${max} characters`, { field });
  return trimmed === "" ? undefined : trimmed;
};

/** A `status` filter that must be one of `allowed`. @throws AppError `validation_failed` (422, field `status`) */
const oneOf = (value: string, allowed: readonly string[]): string => {
  if (!allowed.includes(value)) throw notOneOfError("validation_failed", "status", allowed);
  return value;
};

/** `like` prefix pattern of a user's text, its wildcards escaped (with `escape '\'`). */
const prefixPattern = (value: string) => `${value.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** A `customers` row as the wallet list reads it. */
interface CustomerRow {
  account_id: string;
  customer_id: string;
  contact: string | null;
  balance: number | string;
  frozen: number | string;
  credit_line: number | string;
  created_at: string;
}

/** Wallets by account then customer id, descending: the primary key's order. */
const WALLET_KEYSET: Keyset = [
  { column: "account_id", type: "id" },
  { column: "customer_id", type: "id" },
];

/**
 * Lists customer wallets, ordered by account then customer id (descending: the primary key's order).
 * @param filter `accountId` (exact) narrows to one account; `search` is a customer id prefix
 * @returns the page and its bounded total count
 * @throws AppError `validation_failed` (422) for a filter over 200 characters; `invalid_request` (400) for a bad cursor
 */
export async function listCustomerWallets(
  db: Db,
  filter: { accountId?: string | null; search?: string | null },
  page: PageRequest,
): Promise<Page<CustomerWallet>> {
  const accountId = text(filter.accountId, "accountId");
  const search = text(filter.search, "search", 64);
  const query = db("customers").select("*");
  if (accountId) query.where("account_id", accountId);
  if (search) query.whereRaw("customer_id like ? escape '\\'", [prefixPattern(search)]);
  return keysetPage(query, WALLET_KEYSET, page, (row: CustomerRow) => ({
    accountId: row.account_id,
    customerId: row.customer_id,
    contact: row.contact ?? null,
    available: Number(row.balance),
    frozen: Number(row.frozen),
    creditLine: Number(row.credit_line),
    createdAt: row.created_at,
  }));
}

/**
 * Lists orders of every account, newest first.
 * @param filter `accountId`, `status` (an order state), `customerId` (with the account: one customer's)
 * @returns the page and its bounded total count
 * @throws AppError `validation_failed` (422, field `status`) for an unknown state; `invalid_request` (400) for a bad cursor
 */
export async function listAllOrders(
  db: Db,
  filter: { accountId?: string | null; status?: string | null; customerId?: string | null },
  page: PageRequest,
): Promise<Page<OrderRecord>> {
  const accountId = text(filter.accountId, "accountId");
  const customerId = text(filter.customerId, "customerId", 64);
  const query = db("orders").select("*");
  if (accountId) query.where("account_id", accountId);
  if (customerId) query.where("customer_id", customerId);
  if (filter.status != null) query.where("status", oneOf(filter.status, ORDER_STATUSES) as OrderStatus);
  return keysetPage(query, byCreation(), page, toOrderRecord);
}

/** Delivery states. */
const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;

/**
 * Lists callback deliveries of every account, newest first, each with every attempt (two statements a page).
 * @param filter `accountId`, `status` (pending, delivered, failed), `aggregateId` (a task, order or transaction id)
 * @returns the page and its bounded total count
 * @throws AppError `validation_failed` (422, field `status`); `invalid_request` (400) for a bad cursor
 */
export async function listAllDeliveries(
  db: Db,
  filter: { accountId?: string | null; status?: string | null; aggregateId?: string | null },
  page: PageRequest,
): Promise<Page<WebhookDeliveryRecord>> {
  const accountId = text(filter.accountId, "accountId");
  const aggregateId = text(filter.aggregateId, "aggregateId", 60);
  const query = db("webhook_deliveries").select("*");
  if (accountId) query.where("account_id", accountId);
  if (aggregateId) query.where("aggregate_id", aggregateId);
  if (filter.status != null) query.where("status", oneOf(filter.status, DELIVERY_STATUSES));
  const rows = await keysetPage(query, bySerial(), page, (row: DeliveryRow) => row);
  return { ...rows, items: await withAttempts(db, rows.items) };
}
