/**
 * Creating an order (docs/api/cloud.md §4 `POST /orders`; issue 3 "Orders"): the order, its first
 * event, the customer and the payment attempt in one idempotent transaction.
 */
import { AppError } from "../../errors.ts";
import { isUniqueViolation } from "../../db/index.ts";
import { newId } from "../../ids.ts";
import type { Caller } from "../../auth/keys.ts";
import { addAccountOrders } from "../../ledger/totals.ts";
import { toSpecShape } from "../../names.ts";
import { withIdempotency } from "../idempotency.ts";
import { ensureCustomer } from "../customers.ts";
import { checkAgainstProduct, parseOrderInput, type CreateOrderInput } from "../order-request.ts";
import { toOrderRecord, writeOrderEvent, type OrderRecord, type OrderRow } from "../order-records.ts";
import { isoAt, loadProduct, type OrderDeps, type WriteOptions } from "./deps.ts";
import { payInside } from "./pay.ts";

/**
 * Creates an order and tries to pay it from the customer's wallet, atomically (cloud spec
 * §4 `POST /orders`; issue 3 "Orders"). An order the wallet (balance + credit line) cannot
 * cover is stored `unpaid` and takes nothing; a paid one moves to `provisioning` and is
 * settled later by `provisionDue` (provisioning.ts). With an idempotency key, a retry with the
 * same input replays the first result (the order as it was then) with `replayed: true`.
 * Order of checks: input shape (400/422) → product and its rules (422) → duplicate
 * `client_order_no` (409) → stock (409) → payment.
 * @param deps database, clock, provisioning delay
 * @param caller the authenticated key
 * @param input the order in camelCase ({@link CreateOrderInput}): clientOrderNo, productId,
 *   quantity, billingCycle, customer{customerId, contact}, metadata
 * @param opts `idempotencyKey`, `requestId` (echoed in callbacks)
 * @returns the order and whether it is a replay
 * @throws AppError `invalid_request` (400) for a non-object input or an over-long key;
 *   `validation_failed` (422, `details.field` as the spec names it: the fields of {@link parseOrderInput}, `product_id`
 *   "product_id does not name a product" / "product is not available", `billing_cycle`,
 *   `metadata.<required field>`, `metadata.domain` for a bad host name);
 *   `conflict` (409) for a duplicate `client_order_no`, insufficient stock, or an idempotency
 *   key used with another input or still running
 */
export async function createOrder(
  deps: OrderDeps,
  caller: Caller,
  input: CreateOrderInput,
  opts: WriteOptions = {},
): Promise<{ order: OrderRecord; replayed: boolean }> {
  const request = parseOrderInput(input);
  const { result, replayed } = await withIdempotency(
    deps.db,
    { accountId: caller.accountId, key: opts.idempotencyKey, operation: "order.create", request: toSpecShape(input) },
    async (trx) => {
      const { product, cycle, metadata } = checkAgainstProduct(request, await loadProduct(trx, request.productId));

      const duplicate = await trx("orders").where({ account_id: caller.accountId, client_order_no: request.clientOrderNo }).first("id");
      if (duplicate) throw new AppError("conflict", "client_order_no is already used by another order", { field: "client_order_no", order_id: duplicate.id });
      if (product.stock != null && request.quantity > product.stock) {
        throw new AppError("conflict", "insufficient stock", { field: "quantity", stock: product.stock });
      }

      const id = newId("ord");
      const at = isoAt(deps);
      const row: OrderRow & { provision_due_at: string | null } = {
        id,
        account_id: caller.accountId,
        key_id: caller.keyId,
        client_order_no: request.clientOrderNo,
        product_id: product.id,
        quantity: request.quantity,
        billing_cycle: cycle.cycle,
        customer_id: request.customerId,
        contact: request.contact,
        metadata: JSON.stringify(metadata),
        amount: cycle.price * request.quantity,
        payment_status: "unpaid",
        provisioning_status: "pending",
        status: "unpaid",
        resource_id: null,
        failure_reason: null,
        provision_due_at: null,
        created_at: at,
        updated_at: at,
      };
      try {
        await trx("orders").insert(row);
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError("conflict", "client_order_no is already used by another order", { field: "client_order_no" });
        throw error;
      }
      await addAccountOrders(trx, caller.accountId, 1);
      const order = toOrderRecord(row);
      await writeOrderEvent(trx, "order.created", order, opts.requestId);
      await ensureCustomer(trx, caller.accountId, request.customerId, request.contact);
      return (await payInside(deps, trx, order, product, opts.requestId)) ?? order;
    },
  );
  return { order: result, replayed };
}
