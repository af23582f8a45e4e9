/**
 * Reading the caller's orders (docs/api/cloud.md §4 `GET /orders/{order_id}`, `GET /orders`).
 */
import type { Db } from "../../db/index.ts";
import type { Caller } from "../../auth/keys.ts";
import { byCreation, keysetPage, type Page, type PageRequest } from "../../pagination.ts";
import { placeholders, selectRows } from "../../db/rows.ts";
import { ORDER_RECORD_COLUMNS, toOrderRecord, type OrderRecord, type OrderRow } from "../order-records.ts";
import { orderRowOf } from "./deps.ts";

/**
 * Reads an order of the caller's account (docs/api/cloud.md §4 `GET /orders/{order_id}`).
 * @param db the database
 * @param caller the authenticated key
 * @param id the order id
 * @returns the order
 * @throws AppError `not_found` (404) `Order not found` for an unknown id or another account's order
 */
export async function getOrder(db: Db, caller: Caller, id: string): Promise<OrderRecord> {
  return toOrderRecord(await orderRowOf(db, caller, id));
}

/**
 * Reads many orders of the caller's account in one query (for DataLoader).
 * @param db the database
 * @param caller the authenticated key
 * @param ids order ids, in the order the answer keeps
 * @returns one entry per id, null where unknown or another account's
 */
export async function getOrdersByIds(db: Db, caller: Caller, ids: readonly string[]): Promise<(OrderRecord | null)[]> {
  if (ids.length === 0) return [];
  const unique = [...new Set(ids)];
  const rows = await selectRows<OrderRow>(
    db,
    `select ${ORDER_RECORD_COLUMNS} from "orders" where "id" in (${placeholders(unique.length)}) and "account_id" = ?`,
    [...unique, caller.accountId],
  );
  const byId = new Map(rows.map((r) => [r.id, toOrderRecord(r)]));
  return ids.map((id) => byId.get(id) ?? null);
}

/**
 * Lists the caller's account's orders, newest first (keyset on creation time, then id;
 * docs/api/cloud.md §4 `GET /orders`).
 * @param db the database
 * @param caller the authenticated key
 * @param page `first` (1-100) and the opaque cursor `after`
 * @returns one page of orders with the stored total
 * @throws AppError `invalid_request` (400, field `cursor`) for a bad cursor
 */
export async function listOrders(db: Db, caller: Caller, page: PageRequest): Promise<Page<OrderRecord>> {
  return keysetPage(
    db("orders").select(db.raw(ORDER_RECORD_COLUMNS)).where("account_id", caller.accountId),
    byCreation(),
    page,
    toOrderRecord,
    {
      stored: async () => Number((await selectRows<{ order_count: number | string }>(db, ORDER_COUNT, [caller.accountId]))[0]?.order_count ?? 0),
      firstPageColumn: "total_count",
    },
    // The first page, the common one, is a fixed statement that reads the count too.
    (limit) => selectRows<OrderRow>(db, FIRST_ORDERS, [caller.accountId, caller.accountId, limit]),
  );
}

/** The account's newest orders (the first page of {@link listOrders}), each row with the account's stored order count (one statement, one snapshot). */
const FIRST_ORDERS = `select ${ORDER_RECORD_COLUMNS}, (select "order_count" from "accounts" where "id" = ?) as "total_count" from "orders" where "account_id" = ? order by "created_at" desc, "id" desc limit ?`;
/** The account's stored order count (src/ledger/totals.ts keeps it). */
const ORDER_COUNT = 'select "order_count" from "accounts" where "id" = ? limit 1';
