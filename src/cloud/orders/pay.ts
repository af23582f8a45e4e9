/**
 * Paying an order (issue 3 "Orders"; docs/api/cloud.md §4): at creation and later for an unpaid
 * one. The debit, the move unpaid → provisioning, the stock and the events share one transaction.
 */
import type { Knex } from "knex";
import { AppError, isAppError } from "../../errors.ts";
import { debit } from "../../ledger/index.ts";
import { addCustomerFrozen } from "../../ledger/totals.ts";
import { isUniqueViolation } from "../../db/index.ts";
import type { Caller } from "../../auth/keys.ts";
import type { ProductRecord } from "../catalog.ts";
import { appendTransactionEvent } from "../customers.ts";
import { toOrderRecord, writeOrderEvent, type OrderRecord } from "../order-records.ts";
import { isoAt, loadProduct, orderRowOf, type OrderDeps, type WriteOptions } from "./deps.ts";

/**
 * Tries to pay an unpaid order inside `trx`: debit the customer's wallet (conditional on
 * balance + credit line), move unpaid → provisioning (compare-and-swap), take the stock, and
 * write `order.paid` and `billing.transaction.created`. Any failure after the debit throws and
 * so rolls the whole transaction back.
 * @param deps the clock and `provisionDelayMs` (the new `provision_due_at`)
 * @param requestId echoed in the callbacks
 * @returns the paid order, or null when the wallet does not cover it (nothing written)
 * @throws AppError `conflict` when the order is no longer unpaid or the stock is short
 */
export async function payInside(
  deps: Pick<OrderDeps, "clock" | "provisionDelayMs">,
  trx: Knex.Transaction,
  order: OrderRecord,
  product: ProductRecord,
  requestId: string | null | undefined,
): Promise<OrderRecord | null> {
  const ref = `order:${order.id}:pay`;
  try {
    await debit(trx, {
      accountId: order.accountId,
      customerId: order.customerId,
      keyId: order.keyId,
      amount: order.amount,
      ref,
      orderId: order.id,
      reason: `order ${order.clientOrderNo}`,
    });
  } catch (error) {
    if (isAppError(error) && error.code === "insufficient_balance") return null;
    if (isUniqueViolation(error)) throw new AppError("conflict", "The order is already being paid", { status: order.status });
    throw error;
  }
  const at = isoAt(deps);
  const next = {
    payment_status: "paid",
    provisioning_status: "provisioning",
    status: "provisioning",
    provision_due_at: isoAt(deps, deps.clock() + deps.provisionDelayMs),
    updated_at: at,
  };
  const updated = await trx("orders").where({ id: order.id, status: "unpaid" }).update(next);
  if (updated !== 1) throw new AppError("conflict", "Only an unpaid order can be paid", { status: order.status });
  await addCustomerFrozen(trx, order.accountId, order.customerId, order.amount);
  if (product.stock != null) {
    const taken = await trx("products").where("id", product.id).andWhere("stock", ">=", order.quantity).decrement("stock", order.quantity);
    if (taken !== 1) throw new AppError("conflict", "insufficient stock", { field: "quantity" });
  }
  const paid: OrderRecord = { ...order, paymentStatus: "paid", provisioningStatus: "provisioning", status: "provisioning", updatedAt: at };
  await writeOrderEvent(trx, "order.paid", paid, requestId);
  await appendTransactionEvent(trx, ref, { accountId: order.accountId, keyId: order.keyId, requestId });
  return paid;
}

/**
 * Retries the payment of an unpaid order (same rules as at creation: the order's amount, fixed
 * at creation, from the customer's balance plus credit line; stock taken on success).
 * @param deps database, clock, provisioning delay
 * @param caller the authenticated key
 * @param orderId an order of the caller's account
 * @param opts `requestId` (echoed in callbacks)
 * @returns the order, now `provisioning`
 * @throws AppError `not_found` (404) `Order not found`; `conflict` (409) when the order is not
 *   unpaid, its product is no longer available, or stock is short; `insufficient_balance` (402)
 *   when the wallet still does not cover it (nothing written)
 * @see issue 3 "Orders" (an unpaid order takes nothing; paying it later)
 */
export async function payOrder(deps: OrderDeps, caller: Caller, orderId: string, opts: WriteOptions = {}): Promise<OrderRecord> {
  return deps.db.transaction(async (trx) => {
    const order = toOrderRecord(await orderRowOf(trx, caller, orderId));
    if (order.status !== "unpaid") throw new AppError("conflict", `Only an unpaid order can be paid; this order is ${order.status}`, { status: order.status });
    const product = await loadProduct(trx, order.productId);
    if (product?.status !== "available" || !product.vendorActive)
      throw new AppError("conflict", "The order's product is not available", { field: "product_id" });
    if (product.stock != null && order.quantity > product.stock)
      throw new AppError("conflict", "insufficient stock", { field: "quantity", stock: product.stock });
    const paid = await payInside(deps, trx, order, product, opts.requestId);
    if (!paid) throw new AppError("insufficient_balance");
    return paid;
  });
}
