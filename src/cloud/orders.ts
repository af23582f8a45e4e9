/**
 * The order state machine (docs/api/cloud.md §2-4 `POST /orders`, `GET /orders/{id}`,
 * `POST /orders/{id}/renew`; §6 order callbacks; docs/architecture.md §3, §4, §6, §8). The request's
 * shape is checked in order-request.ts, the record and its events are order-records.ts, the
 * vendor's answer is provisioning.ts and resources are resources.ts; {@link createOrderService}
 * puts them together.
 *
 * The order state machine (`status`, with `payment_status` / `provisioning_status`):
 *
 * ```
 *   create ──► unpaid (unpaid/pending) ──pay──► provisioning (paid/provisioning)
 *                 ▲  balance short:                 │ vendor simulator, PROVISION_DELAY_MS later
 *                 └─ nothing taken                  ├──► active (paid/active) + resource, expiry
 *                                                   └──► failed (refunded/failed) + full refund,
 *                                                         stock restored   (metadata.simulate = "fail")
 *   active ──renew──► active (resource expiry extended, renewal charged)
 * ```
 *
 * Every move is a compare-and-swap on `status` inside one transaction that also writes the money
 * (ledger, on the customer's wallet) and the outbox events (`order.created`, `order.paid`,
 * `order.provisioned`, `order.failed`, `billing.transaction.created`), so two workers or two
 * requests can never both settle an order and an event exists exactly when its change does.
 *
 * Just over 400 lines on purpose: what is left here is the order state machine itself (create,
 * pay, renew, reads), each step's transaction next to the others; parsing, records, provisioning
 * and resources live in their own files.
 */
import type { Knex } from "knex";
import { AppError, isAppError } from "../errors.ts";
import { debit } from "../ledger/index.ts";
import { isUniqueViolation, type Db } from "../db/index.ts";
import { newId } from "../ids.ts";
import type { Caller } from "../auth/keys.ts";
import { formatYuan, type MilliYuan } from "../money.ts";
import { byCreation, keysetPage, type Page, type PageRequest } from "../pagination.ts";
import { withIdempotency } from "./idempotency.ts";
import { toSpecShape } from "../names.ts";
import { appendTransactionEvent, ensureCustomer } from "./customers.ts";
import { toProductRecord, type ProductRecord } from "./catalog.ts";
import { checkAgainstProduct, cycleOf, parseOrderInput, parseRenewInput, type CreateOrderInput, type RenewOrderInput } from "./order-request.ts";
import { toOrderRecord, writeOrderEvent, type OrderRecord, type OrderRow } from "./order-records.ts";
import { createProvisioner } from "./provisioning.ts";
import { addMonthsUtc, getResource, getResourcesByIds, listResources, toResourceRecord, type ResourceRecord } from "./resources.ts";
import { addAccountOrders, addCustomerFrozen, storedTotal } from "../ledger/totals.ts";

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

/** Per-request facts of a write. */
export interface WriteOptions {
  /** The `Idempotency-Key` header (docs/api/cloud.md §5); null or empty: no idempotency. */
  idempotencyKey?: string | null;
  /** The request id echoed in callbacks. */
  requestId?: string | null;
}

/** What the order service needs. */
export interface OrderServiceDeps {
  db: Db;
  /** Milliseconds between payment and the vendor simulator's answer (`PROVISION_DELAY_MS`). */
  provisionDelayMs: number;
  /** The clock in epoch milliseconds (tests drive it); default `Date.now`. */
  now?: () => number;
  /** Orders settled per {@link OrderService.provisionDue} call; default 100. */
  provisionBatch?: number;
}

async function loadProduct(trx: Knex.Transaction, id: string): Promise<(ProductRecord & { vendorActive: boolean }) | null> {
  const row = await trx("products as p").leftJoin("vendors as v", "v.id", "p.vendor_id").where("p.id", id).first("p.*", "v.status as vendor_status");
  if (!row) return null;
  return { ...toProductRecord(row), vendorActive: row.vendor_status === "active" };
}

/**
 * Creates the order service.
 * @param deps database, provisioning delay, clock
 * @returns create, pay, renew, reads, lists, and the vendor simulator's step
 */
export function createOrderService(deps: OrderServiceDeps) {
  const { db } = deps;
  const clock = deps.now ?? Date.now;
  const iso = (ms: number = clock()) => new Date(ms).toISOString();

  /**
   * Tries to pay an unpaid order inside `trx`: debit the customer's wallet (conditional on
   * balance + credit line), move unpaid → provisioning (compare-and-swap), take the stock, and
   * write `order.paid` and `billing.transaction.created`. Any failure after the debit throws and
   * so rolls the whole transaction back.
   * @returns the paid order, or null when the wallet does not cover it (nothing written)
   * @throws AppError `conflict` when the order is no longer unpaid or the stock is short
   */
  async function payInside(
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
    const at = iso();
    const next = {
      payment_status: "paid",
      provisioning_status: "provisioning",
      status: "provisioning",
      provision_due_at: iso(clock() + deps.provisionDelayMs),
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
   * Creates an order and tries to pay it from the customer's wallet, atomically (cloud spec
   * §4 `POST /orders`; issue 3 "Orders"). An order the wallet (balance + credit line) cannot
   * cover is stored `unpaid` and takes nothing; a paid one moves to `provisioning` and is
   * settled later by {@link provisionDue}. With an idempotency key, a retry with the same input
   * replays the first result (the order as it was then) with `replayed: true`.
   * Order of checks: input shape (400/422) → product and its rules (422) → duplicate
   * `client_order_no` (409) → stock (409) → payment.
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
  async function create(caller: Caller, input: CreateOrderInput, opts: WriteOptions = {}): Promise<{ order: OrderRecord; replayed: boolean }> {
    const request = parseOrderInput(input);
    const { result, replayed } = await withIdempotency(
      db,
      { accountId: caller.accountId, key: opts.idempotencyKey, operation: "order.create", request: toSpecShape(input) },
      async (trx) => {
        const { product, cycle, metadata } = checkAgainstProduct(request, await loadProduct(trx, request.productId));

        const duplicate = await trx("orders").where({ account_id: caller.accountId, client_order_no: request.clientOrderNo }).first("id");
        if (duplicate) throw new AppError("conflict", "client_order_no is already used by another order", { field: "client_order_no", order_id: duplicate.id });
        if (product.stock != null && request.quantity > product.stock) {
          throw new AppError("conflict", "insufficient stock", { field: "quantity", stock: product.stock });
        }

        const id = newId("ord");
        const at = iso();
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
        return (await payInside(trx, order, product, opts.requestId)) ?? order;
      },
    );
    return { order: result, replayed };
  }

  async function orderRow(executor: Knex | Knex.Transaction, caller: Caller, id: unknown) {
    const row =
      typeof id === "string" && id.length > 0 && id.length <= 40 ? await executor("orders").where({ id, account_id: caller.accountId }).first() : undefined;
    if (!row) throw new AppError("not_found", "Order not found");
    return row;
  }

  /**
   * Retries the payment of an unpaid order (same rules as at creation: the order's amount, fixed
   * at creation, from the customer's balance plus credit line; stock taken on success).
   * @param caller the authenticated key
   * @param orderId an order of the caller's account
   * @returns the order, now `provisioning`
   * @throws AppError `not_found` (404) `Order not found`; `conflict` (409) when the order is not
   *   unpaid, its product is no longer available, or stock is short; `insufficient_balance` (402)
   *   when the wallet still does not cover it (nothing written)
   * @see issue 3 "Orders" (an unpaid order takes nothing; paying it later)
   */
  async function pay(caller: Caller, orderId: string, opts: WriteOptions = {}): Promise<OrderRecord> {
    return db.transaction(async (trx) => {
      const order = toOrderRecord(await orderRow(trx, caller, orderId));
      if (order.status !== "unpaid")
        throw new AppError("conflict", `Only an unpaid order can be paid; this order is ${order.status}`, { status: order.status });
      const product = await loadProduct(trx, order.productId);
      if (product?.status !== "available" || !product.vendorActive)
        throw new AppError("conflict", "The order's product is not available", { field: "product_id" });
      if (product.stock != null && order.quantity > product.stock)
        throw new AppError("conflict", "insufficient stock", { field: "quantity", stock: product.stock });
      const paid = await payInside(trx, order, product, opts.requestId);
      if (!paid) throw new AppError("insufficient_balance");
      return paid;
    });
  }

  /**
   * Renews an active order's resource (docs/api/cloud.md §4 `POST /orders/{id}/renew`): charges
   * cycle price × quantity × periods from the customer's wallet and extends the resource's expiry
   * by months × periods (calendar months, UTC, from the later of the current expiry and now).
   * Writes ledger ref `order:<id>:renew:<n>`, `order.paid` (with `renewal`) and
   * `billing.transaction.created`. Idempotent under operation `order.renew`.
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
  async function renew(
    caller: Caller,
    orderId: string,
    input: RenewOrderInput | null | undefined,
    opts: WriteOptions = {},
  ): Promise<RenewResult & { replayed: boolean }> {
    const request = parseRenewInput(input);
    const { result, replayed } = await withIdempotency(
      db,
      { accountId: caller.accountId, key: opts.idempotencyKey, operation: "order.renew", request: { order_id: orderId, body: toSpecShape(input ?? null) } },
      async (trx): Promise<RenewResult> => {
        const order = toOrderRecord(await orderRow(trx, caller, orderId));
        const product = await loadProduct(trx, order.productId);
        const cycle = cycleOf(product?.billingCycles ?? [], request.billingCycle ?? order.billingCycle);
        if (order.status !== "active")
          throw new AppError("conflict", `Only an active order can be renewed; this order is ${order.status}`, { status: order.status });
        if (!product || product.status === "offline")
          throw new AppError("conflict", "The order's product is offline and cannot be renewed", { field: "product_id" });

        // Take the order's row first (a row lock on PostgreSQL) so concurrent renewals of one
        // order run one after the other and number themselves correctly.
        const at = iso();
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
        const expiresAt = iso(addMonthsUtc(Math.max(Date.parse(previous), clock()), cycle.months * request.periods));
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

  /**
   * Reads an order of the caller's account (docs/api/cloud.md §4 `GET /orders/{order_id}`).
   * @throws AppError `not_found` (404) `Order not found` for an unknown id or another account's order
   */
  async function get(caller: Caller, id: string): Promise<OrderRecord> {
    return toOrderRecord(await orderRow(db, caller, id));
  }

  /**
   * Reads many orders of the caller's account in one query (for DataLoader).
   * @returns one entry per id, null where unknown or another account's
   */
  async function getByIds(caller: Caller, ids: readonly string[]): Promise<(OrderRecord | null)[]> {
    if (ids.length === 0) return [];
    const rows = await db("orders")
      .whereIn("id", [...new Set(ids)])
      .andWhere("account_id", caller.accountId);
    const byId = new Map(rows.map((r: OrderRow) => [r.id, toOrderRecord(r)]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  /**
   * Lists the caller's account's orders, newest first (keyset on creation time, then id).
   * @param page `first` (1-100) and the opaque cursor `after`
   * @throws AppError `invalid_request` (400, field `cursor`) for a bad cursor
   */
  async function list(caller: Caller, page: PageRequest): Promise<Page<OrderRecord>> {
    return keysetPage(db("orders").where("account_id", caller.accountId), byCreation(), page, toOrderRecord, {
      stored: storedTotal(db, "accounts", caller.accountId, "order_count"),
    });
  }

  const { provisionDue } = createProvisioner({ db, clock, batch: deps.provisionBatch ?? 100 });

  return {
    create,
    pay,
    renew,
    get,
    getByIds,
    list,
    provisionDue,
    /** Resources of the caller's account (resources.ts {@link listResources}). */
    listResources: (caller: Caller, page: PageRequest, customerId?: string | null) => listResources(db, caller, page, customerId),
    /** A resource of the caller's account (resources.ts {@link getResource}). */
    getResource: (caller: Caller, id: string) => getResource(db, caller, id),
    /** Resources of the caller's account by id (resources.ts {@link getResourcesByIds}). */
    getResourcesByIds: (caller: Caller, ids: readonly string[]) => getResourcesByIds(db, caller, ids),
  };
}

/** The service returned by {@link createOrderService}. */
export type OrderService = ReturnType<typeof createOrderService>;
