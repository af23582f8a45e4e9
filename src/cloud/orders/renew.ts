/**
 * Renewing an active order (docs/api/cloud.md §4 `POST /orders/{id}/renew`): the charge, the
 * resource's new expiry and the events in one idempotent transaction.
 */
import { AppError } from "../../errors.ts";
import { debit } from "../../ledger/index.ts";
import type { Caller } from "../../auth/keys.ts";
import { formatYuan, type MilliYuan } from "../../money.ts";
import { toSpecShape } from "../../names.ts";
import { withIdempotency } from "../idempotency.ts";
import { appendTransactionEvent } from "../customers.ts";
import { cycleOf, parseRenewInput, type RenewOrderInput } from "../order-request.ts";
import { toOrderRecord, writeOrderEvent, type OrderRecord } from "../order-records.ts";
import { addMonthsUtc, toResourceRecord, type ResourceRecord } from "../resources.ts";
import { isoAt, loadProduct, orderRowOf, type OrderDeps, type WriteOptions } from "./deps.ts";

/** What one renewal did. */
export interface RenewalRecord {
  /** 1 for the first renewal of the order, 2 for the second, ... */
  number: number;
  periods: number;
  billingCycle: string;
  /** Milli-yuan charged: cycle price × quantity × periods. */
  amount: MilliYuan;
  transactionId: string;
  /** The resource's expiry before and after the renewal. */
  previousExpiresAt: string;
  expiresAt: string;
}

/** The result of a renewal (the idempotency snapshot). */
export interface RenewResult {
  order: OrderRecord;
  resource: ResourceRecord;
  renewal: RenewalRecord;
}

/**
 * Renews an active order's resource (docs/api/cloud.md §4 `POST /orders/{id}/renew`): charges
 * cycle price × quantity × periods from the customer's wallet and extends the resource's expiry
 * by months × periods (calendar months, UTC, from the later of the current expiry and now).
 * Writes ledger ref `order:<id>:renew:<n>`, `order.paid` (with `renewal`) and
 * `billing.transaction.created`. Idempotent under operation `order.renew`.
 * @param deps database and clock
 * @param caller the authenticated key
 * @param orderId an order of the caller's account
 * @param input `{periods?: 1-36 (default 1), billingCycle?: a cycle of the product (default the order's)}`; absent: the defaults
 * @param opts `idempotencyKey`, `requestId`
 * @returns the order, its resource, the renewal, and whether it is a replay
 * @throws AppError `invalid_request` (400) for a non-object input; `not_found` (404)
 *   `Order not found`; `validation_failed` (422, `periods`, `billing_cycle`); `conflict` (409)
 *   when the order or its resource is not active, the product is offline, or the idempotency key
 *   conflicts; `insufficient_balance` (402) when the wallet does not cover the renewal
 */
export async function renewOrder(
  deps: Pick<OrderDeps, "db" | "clock">,
  caller: Caller,
  orderId: string,
  input: RenewOrderInput | null | undefined,
  opts: WriteOptions = {},
): Promise<RenewResult & { replayed: boolean }> {
  const request = parseRenewInput(input);
  const { result, replayed } = await withIdempotency(
    deps.db,
    { accountId: caller.accountId, key: opts.idempotencyKey, operation: "order.renew", request: { order_id: orderId, body: toSpecShape(input ?? null) } },
    async (trx): Promise<RenewResult> => {
      const order = toOrderRecord(await orderRowOf(trx, caller, orderId));
      const product = await loadProduct(trx, order.productId);
      const cycle = cycleOf(product?.billingCycles ?? [], request.billingCycle ?? order.billingCycle);
      if (order.status !== "active")
        throw new AppError("conflict", `Only an active order can be renewed; this order is ${order.status}`, { status: order.status });
      if (!product || product.status === "offline")
        throw new AppError("conflict", "The order's product is offline and cannot be renewed", { field: "product_id" });

      // Take the order's row first (a row lock on PostgreSQL) so concurrent renewals of one
      // order run one after the other and number themselves correctly.
      const at = isoAt(deps);
      const locked = await trx("orders").where({ id: order.id, status: "active" }).update({ updated_at: at });
      if (locked !== 1) throw new AppError("conflict", "Only an active order can be renewed", { status: order.status });
      const resourceRow = order.resourceId ? await trx("resources").where({ id: order.resourceId, account_id: caller.accountId }).first() : undefined;
      if (resourceRow?.status !== "active")
        throw new AppError("conflict", "The order's resource is not active and cannot be renewed", { status: resourceRow?.status ?? null });

      const [{ n }] = await trx("ledger_entries").where("order_id", order.id).andWhere("ref", "like", `order:${order.id}:renew:%`).count({ n: "*" });
      const number = Number(n) + 1;
      const ref = `order:${order.id}:renew:${number}`;
      const amount = cycle.price * order.quantity * request.periods;
      await debit(trx, {
        accountId: order.accountId,
        customerId: order.customerId,
        keyId: caller.keyId,
        amount,
        ref,
        orderId: order.id,
        reason: `renewal ${number} of order ${order.clientOrderNo}`,
      });
      const previous = resourceRow.expires_at as string;
      const expiresAt = isoAt(deps, addMonthsUtc(Math.max(Date.parse(previous), deps.clock()), cycle.months * request.periods));
      const moved = await trx("resources")
        .where({ id: resourceRow.id, expires_at: previous, status: "active" })
        .update({ expires_at: expiresAt, updated_at: at });
      if (moved !== 1) throw new AppError("conflict", "The resource changed during the renewal; retry");

      const renewedOrder: OrderRecord = { ...order, updatedAt: at };
      const entry = await trx("ledger_entries").where("ref", ref).first("id");
      const transactionId = `txn_${entry.id}`;
      const renewal: RenewalRecord = {
        number,
        periods: request.periods,
        billingCycle: cycle.cycle,
        amount,
        transactionId,
        previousExpiresAt: previous,
        expiresAt,
      };
      await writeOrderEvent(trx, "order.paid", renewedOrder, opts.requestId, {
        renewal: {
          number,
          periods: request.periods,
          billing_cycle: cycle.cycle,
          amount: formatYuan(amount),
          transaction_id: transactionId,
          expires_at: expiresAt,
        },
      });
      await appendTransactionEvent(trx, ref, { accountId: order.accountId, keyId: order.keyId, requestId: opts.requestId });
      return { order: renewedOrder, resource: toResourceRecord({ ...resourceRow, expires_at: expiresAt }), renewal };
    },
  );
  return { ...result, replayed };
}
