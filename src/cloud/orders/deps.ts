/**
 * What every order operation needs (docs/api/cloud.md §4; docs/architecture.md §3): the resolved
 * dependencies, the per-request options of a write, and the two reads the steps share.
 */
import type { Knex } from "knex";
import { AppError } from "../../errors.ts";
import type { Db } from "../../db/index.ts";
import type { Caller } from "../../auth/keys.ts";
import { toProductRecord, type ProductRecord } from "../catalog.ts";
import type { OrderRow } from "../order-records.ts";

/** The dependencies of the order operations, resolved by `createOrderService` (orders/index.ts). */
export interface OrderDeps {
  db: Db;
  /** The clock in epoch milliseconds. */
  clock: () => number;
  /** Milliseconds between payment and the vendor simulator's answer (`PROVISION_DELAY_MS`). */
  provisionDelayMs: number;
}

/** Per-request facts of a write. */
export interface WriteOptions {
  /** The `Idempotency-Key` header (docs/api/cloud.md §5); null or empty: no idempotency. */
  idempotencyKey?: string | null;
  /** The request id echoed in callbacks. */
  requestId?: string | null;
}

/** A product with whether its vendor is active (an inactive vendor's products cannot be ordered). */
export type OrderableProduct = ProductRecord & { vendorActive: boolean };

/**
 * The ISO 8601 text of a moment of the deps' clock.
 * @param ms epoch milliseconds; default the clock's now
 */
export function isoAt(deps: Pick<OrderDeps, "clock">, ms: number = deps.clock()): string {
  return new Date(ms).toISOString();
}

/**
 * Reads a product and its vendor's status inside `trx`.
 * @returns the product, or null when `id` names none
 */
export async function loadProduct(trx: Knex.Transaction, id: string): Promise<OrderableProduct | null> {
  const row = await trx("products as p").leftJoin("vendors as v", "v.id", "p.vendor_id").where("p.id", id).first("p.*", "v.status as vendor_status");
  if (!row) return null;
  return { ...toProductRecord(row), vendorActive: row.vendor_status === "active" };
}

/**
 * Reads an order row of the caller's account.
 * @param id the order id as given (anything not a 1-40 character string names no order)
 * @throws AppError `not_found` (404) `Order not found` for an unknown id or another account's order
 */
export async function orderRowOf(executor: Knex | Knex.Transaction, caller: Caller, id: unknown): Promise<OrderRow> {
  const row =
    typeof id === "string" && id.length > 0 && id.length <= 40 ? await executor("orders").where({ id, account_id: caller.accountId }).first() : undefined;
  if (!row) throw new AppError("not_found", "Order not found");
  return row;
}
