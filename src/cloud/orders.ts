/**
 * Cloud-resource orders and resources (docs/api/cloud.md §2-4 `POST /orders`, `GET /orders/{id}`,
 * `POST /orders/{id}/renew`, `GET /resources`; §6 order callbacks; docs/architecture.md §3, §4, §6, §8).
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
 */
import type { Knex } from "knex";
import { AppError, isAppError } from "../errors.ts";
import { debit, credit } from "../ledger/index.ts";
import { appendOutbox } from "../events/outbox.ts";
import { claimBatch, isUniqueViolation, type Db } from "../db/index.ts";
import { newId } from "../ids.ts";
import type { Caller } from "../auth/keys.ts";
import { formatYuan, type MilliYuan } from "../money.ts";
import { keysetPage, type Page, type PageRequest } from "../pagination.ts";
import { withIdempotency } from "./idempotency.ts";
import { appendTransactionEvent, checkCustomerId, ensureCustomer } from "./customers.ts";
import { addAccountOrders, addCustomerFrozen, storedTotal } from "../ledger/totals.ts";
import { toProductRecord, type BillingCycle, type ProductRecord } from "./catalog.ts";

/** Overall order state (docs/architecture.md §8 `status`). */
export type OrderStatus = "unpaid" | "provisioning" | "active" | "failed";
/** Payment state (docs/architecture.md §8 `payment_status`). */
export type PaymentStatus = "unpaid" | "paid" | "refunded";
/** Provisioning state (docs/architecture.md §8 `provisioning_status`). */
export type ProvisioningStatus = "pending" | "provisioning" | "active" | "failed";

/** An order as the domain sees it: money in milli-yuan, times ISO 8601. */
export interface OrderRecord {
  id: string;
  accountId: string;
  /** The key that created the order: it receives the order's callbacks. */
  keyId: string;
  clientOrderNo: string;
  productId: string;
  quantity: number;
  billingCycle: string;
  customerId: string;
  contact: string | null;
  metadata: Record<string, unknown>;
  /** Cycle price × quantity, milli-yuan, fixed at creation. */
  amount: MilliYuan;
  paymentStatus: PaymentStatus;
  provisioningStatus: ProvisioningStatus;
  status: OrderStatus;
  resourceId: string | null;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A resource held by a customer (docs/api/cloud.md §2 "Resource"). */
export interface ResourceRecord {
  id: string;
  accountId: string;
  orderId: string;
  productId: string;
  customerId: string;
  status: "active" | "expired";
  expiresAt: string;
  createdAt: string;
}

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

/** Quantity bounds of one order. */
export const MAX_QUANTITY = 1000;
/** Renewal periods bounds. */
export const MAX_RENEW_PERIODS = 36;
/** Largest metadata object accepted, as serialized JSON characters. */
export const MAX_METADATA_CHARS = 8192;
/** How long {@link OrderService.provisionDue} leases the orders it claims (another worker skips them meanwhile). */
export const PROVISION_LEASE_MS = 60_000;
/** The failure reason the vendor simulator gives for `metadata.simulate: "fail"`. */
export const SIMULATED_FAILURE_REASON = "Vendor rejected the order (simulated)";

/** A validated create-order body (docs/api/cloud.md §2). */
export interface OrderRequest {
  clientOrderNo: string;
  productId: string;
  quantity: number;
  billingCycle: string;
  customerId: string;
  contact: string | null;
  metadata: Record<string, unknown>;
}

/** Converts an `orders` row. */
export function toOrderRecord(row: any): OrderRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    keyId: row.key_id,
    clientOrderNo: row.client_order_no,
    productId: row.product_id,
    quantity: Number(row.quantity),
    billingCycle: row.billing_cycle,
    customerId: row.customer_id,
    contact: row.contact ?? null,
    metadata: typeof row.metadata === "string" ? JSON.parse(row.metadata) : (row.metadata ?? {}),
    amount: Number(row.amount),
    paymentStatus: row.payment_status,
    provisioningStatus: row.provisioning_status,
    status: row.status,
    resourceId: row.resource_id ?? null,
    failureReason: row.failure_reason ?? null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Converts a `resources` row. */
export function toResourceRecord(row: any): ResourceRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    orderId: row.order_id,
    productId: row.product_id,
    customerId: row.customer_id,
    status: row.status,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
  };
}

/**
 * Adds calendar months in UTC, clamping the day to the target month's length
 * (2024-01-31 + 1 month = 2024-02-29).
 * @param from epoch milliseconds
 * @param months whole months (may be 0)
 * @returns epoch milliseconds
 */
export function addMonthsUtc(from: number, months: number): number {
  const d = new Date(from);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(d.getUTCDate(), lastDay), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/**
 * True when `value` is a fully qualified host name to accelerate: 2-127 dot-separated labels of
 * letters, digits and inner hyphens (1-63 characters each), at most 253 characters, a
 * non-numeric top-level label; no wildcard, trailing dot, IP address, port or scheme.
 */
export function isHostname(value: string): boolean {
  if (value.length === 0 || value.length > 253) return false;
  const labels = value.split(".");
  if (labels.length < 2) return false;
  if (!labels.every((l) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(l))) return false;
  return !/^\d+$/.test(labels[labels.length - 1]!);
}

function invalid(field: string, message: string): AppError {
  return new AppError("validation_failed", message, { field });
}

/**
 * Length of a value's JSON text; Infinity when it is nested too deeply to serialize (a RangeError
 * of JSON.stringify): thousands of levels, far over any size limit anyway.
 */
function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value).length;
  } catch {
    return Infinity;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Validates the shape of a create-order body (everything that does not need the catalog).
 * Unknown top-level fields are ignored.
 * @param body the parsed JSON body, snake_case as in docs/api/cloud.md §2
 * @returns the validated request
 * @throws AppError `invalid_request` (400) when the body is not a JSON object;
 *   `validation_failed` (422) naming the first bad field (`client_order_no`, `product_id`,
 *   `quantity`, `billing_cycle`, `customer`, `customer.customer_id`, `customer.contact`, `metadata`)
 */
export function parseOrderBody(body: unknown): OrderRequest {
  if (!isPlainObject(body)) throw new AppError("invalid_request", "Request body must be a JSON object");
  const b = body;

  const clientOrderNo = b.client_order_no;
  if (clientOrderNo === undefined || clientOrderNo === null || clientOrderNo === "") throw invalid("client_order_no", "client_order_no is required");
  if (typeof clientOrderNo !== "string" || clientOrderNo.length > 64 || /[\s\u0000-\u001f\u007f]/.test(clientOrderNo)) {
    throw invalid("client_order_no", "client_order_no must be a string of 1-64 characters without spaces");
  }

  const productId = b.product_id;
  if (productId === undefined || productId === null || productId === "") throw invalid("product_id", "product_id is required");
  if (typeof productId !== "string" || productId.length > 40) throw invalid("product_id", "product_id must be a string of at most 40 characters");

  const quantity = b.quantity;
  if (quantity === undefined || quantity === null) throw invalid("quantity", "quantity is required");
  if (typeof quantity !== "number" || !Number.isInteger(quantity) || quantity < 1 || quantity > MAX_QUANTITY) {
    throw invalid("quantity", `quantity must be an integer from 1 to ${MAX_QUANTITY}`);
  }

  const billingCycle = b.billing_cycle;
  if (billingCycle === undefined || billingCycle === null || billingCycle === "") throw invalid("billing_cycle", "billing_cycle is required");
  if (typeof billingCycle !== "string" || billingCycle.length > 20) throw invalid("billing_cycle", "billing_cycle must be a string naming one of the product's billing cycles");

  const customer = b.customer;
  if (customer === undefined || customer === null) throw invalid("customer", "customer is required");
  if (!isPlainObject(customer)) throw invalid("customer", "customer must be an object with customer_id and contact");
  if (customer.customer_id === undefined || customer.customer_id === null || customer.customer_id === "") {
    throw invalid("customer.customer_id", "customer.customer_id is required");
  }
  const customerId = checkCustomerId(customer.customer_id, "customer.customer_id");
  let contact: string | null = null;
  if (customer.contact !== undefined && customer.contact !== null) {
    if (typeof customer.contact !== "string" || customer.contact.trim() === "" || customer.contact.length > 200 || customer.contact.includes("\u0000")) {
      throw invalid("customer.contact", "customer.contact must be a non-empty string of at most 200 characters");
    }
    contact = customer.contact;
  }

  let metadata: Record<string, unknown> = {};
  if (b.metadata !== undefined && b.metadata !== null) {
    if (!isPlainObject(b.metadata)) throw invalid("metadata", "metadata must be a JSON object");
    if (jsonLength(b.metadata) > MAX_METADATA_CHARS) throw invalid("metadata", `metadata must be at most ${MAX_METADATA_CHARS} characters of JSON`);
    metadata = { ...b.metadata };
  }

  return { clientOrderNo, productId, quantity, billingCycle, customerId, contact, metadata };
}

/** The months of a billing cycle: the product's definition, else the usual names, else 1. */
function monthsOf(cycles: BillingCycle[] | null, cycle: string): number {
  const defined = cycles?.find((c) => c.cycle === cycle);
  if (defined) return defined.months;
  return ({ monthly: 1, quarterly: 3, semiannual: 6, yearly: 12, annual: 12 } as Record<string, number>)[cycle] ?? 1;
}

async function loadProduct(trx: Knex.Transaction, id: string): Promise<(ProductRecord & { vendorActive: boolean }) | null> {
  const row = await trx("products as p").leftJoin("vendors as v", "v.id", "p.vendor_id").where("p.id", id).first("p.*", "v.status as vendor_status");
  if (!row) return null;
  return { ...toProductRecord(row), vendorActive: row.vendor_status === "active" };
}

/** The data of an order event (docs/api/cloud.md §6: order_id, client_order_no, resource_id, status; docs/architecture.md §8 names). */
function orderPayload(order: OrderRecord): Record<string, unknown> {
  return {
    order_id: order.id,
    client_order_no: order.clientOrderNo,
    resource_id: order.resourceId,
    status: order.status,
    payment_status: order.paymentStatus,
    provisioning_status: order.provisioningStatus,
    amount: formatYuan(order.amount),
    failure_reason: order.failureReason,
  };
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
  const batch = deps.provisionBatch ?? 100;

  async function writeOrderEvent(trx: Knex.Transaction, topic: string, order: OrderRecord, requestId: string | null | undefined, extra?: Record<string, unknown>) {
    await appendOutbox(trx, {
      topic,
      accountId: order.accountId,
      aggregateId: order.id,
      keyId: order.keyId,
      requestId: requestId ?? null,
      payload: { ...orderPayload(order), ...extra },
    });
  }

  /**
   * Tries to pay an unpaid order inside `trx`: debit the customer's wallet (conditional on
   * balance + credit line), move unpaid → provisioning (compare-and-swap), take the stock, and
   * write `order.paid` and `billing.transaction.created`. Any failure after the debit throws and
   * so rolls the whole transaction back.
   * @returns the paid order, or null when the wallet does not cover it (nothing written)
   * @throws AppError `conflict` when the order is no longer unpaid or the stock is short
   */
  async function payInside(trx: Knex.Transaction, order: OrderRecord, product: ProductRecord, requestId: string | null | undefined): Promise<OrderRecord | null> {
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
   * settled later by {@link provisionDue}. With an idempotency key, a retry with the same body
   * replays the first result (the order as it was then) with `replayed: true`.
   * Order of checks: body shape (400/422) → product and its rules (422) → duplicate
   * `client_order_no` (409) → stock (409) → payment.
   * @param caller the authenticated key
   * @param body the REST body: client_order_no, product_id, quantity, billing_cycle,
   *   customer{customer_id, contact}, metadata
   * @param opts `idempotencyKey`, `requestId` (echoed in callbacks)
   * @returns the order and whether it is a replay
   * @throws AppError `invalid_request` (400) for a non-object body or an over-long key;
   *   `validation_failed` (422, `details.field`: the fields of {@link parseOrderBody}, `product_id`
   *   "product_id does not name a product" / "product is not available", `billing_cycle`,
   *   `metadata.<required field>`, `metadata.domain` for a bad host name);
   *   `conflict` (409) for a duplicate `client_order_no`, insufficient stock, or an idempotency
   *   key used with another body or still running
   */
  async function create(caller: Caller, body: unknown, opts: WriteOptions = {}): Promise<{ order: OrderRecord; replayed: boolean }> {
    const request = parseOrderBody(body);
    const { result, replayed } = await withIdempotency(
      db,
      { accountId: caller.accountId, key: opts.idempotencyKey, operation: "order.create", request: body },
      async (trx) => {
        const product = await loadProduct(trx, request.productId);
        if (!product) throw invalid("product_id", "product_id does not name a product");
        if (product.status !== "available" || !product.vendorActive) throw invalid("product_id", "product is not available");
        const cycle = product.billingCycles.find((c) => c.cycle === request.billingCycle);
        if (!cycle) {
          throw invalid("billing_cycle", `billing_cycle must be one of: ${product.billingCycles.map((c) => c.cycle).join(", ")}`);
        }
        const metadata = { ...request.metadata };
        for (const field of product.requiredFields) {
          const value = metadata[field];
          if (typeof value !== "string" || value.trim() === "") throw invalid(`metadata.${field}`, `metadata.${field} is required by this product and must be a non-empty string`);
        }
        if (product.requiredFields.includes("domain")) {
          const domain = String(metadata.domain).trim().toLowerCase();
          if (!isHostname(domain)) throw invalid("metadata.domain", "metadata.domain must be a valid host name such as www.example.com");
          metadata.domain = domain;
        }

        const duplicate = await trx("orders").where({ account_id: caller.accountId, client_order_no: request.clientOrderNo }).first("id");
        if (duplicate) throw new AppError("conflict", "client_order_no is already used by another order", { field: "client_order_no", order_id: duplicate.id });
        if (product.stock != null && request.quantity > product.stock) {
          throw new AppError("conflict", "insufficient stock", { field: "quantity", stock: product.stock });
        }

        const id = newId("ord");
        const at = iso();
        const row = {
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
    const row = typeof id === "string" && id.length > 0 && id.length <= 40 ? await executor("orders").where({ id, account_id: caller.accountId }).first() : undefined;
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
      if (order.status !== "unpaid") throw new AppError("conflict", `Only an unpaid order can be paid; this order is ${order.status}`, { status: order.status });
      const product = await loadProduct(trx, order.productId);
      if (!product || product.status !== "available" || !product.vendorActive) throw new AppError("conflict", "The order's product is not available", { field: "product_id" });
      if (product.stock != null && order.quantity > product.stock) throw new AppError("conflict", "insufficient stock", { field: "quantity", stock: product.stock });
      const paid = await payInside(trx, order, product, opts.requestId);
      if (!paid) throw new AppError("insufficient_balance");
      return paid;
    });
  }

  /**
   * Validates a renew body (docs/architecture.md §8: `{"periods": 1, "billing_cycle"?: "..."}`); an absent body
   * means the defaults.
   * @throws AppError `invalid_request` (400) for a body that is not an object;
   *   `validation_failed` (422, field `periods` or `billing_cycle`)
   */
  function parseRenewBody(body: unknown): { periods: number; billingCycle: string | null } {
    if (body === undefined || body === null) return { periods: 1, billingCycle: null };
    if (!isPlainObject(body)) throw new AppError("invalid_request", "Request body must be a JSON object");
    let periods = 1;
    if (body.periods !== undefined && body.periods !== null) {
      if (typeof body.periods !== "number" || !Number.isInteger(body.periods) || body.periods < 1 || body.periods > MAX_RENEW_PERIODS) {
        throw invalid("periods", `periods must be an integer from 1 to ${MAX_RENEW_PERIODS}`);
      }
      periods = body.periods;
    }
    let billingCycle: string | null = null;
    if (body.billing_cycle !== undefined && body.billing_cycle !== null) {
      if (typeof body.billing_cycle !== "string" || body.billing_cycle === "" || body.billing_cycle.length > 20) {
        throw invalid("billing_cycle", "billing_cycle must be a string naming one of the product's billing cycles");
      }
      billingCycle = body.billing_cycle;
    }
    return { periods, billingCycle };
  }

  /**
   * Renews an active order's resource (docs/api/cloud.md §4 `POST /orders/{id}/renew`): charges
   * cycle price × quantity × periods from the customer's wallet and extends the resource's expiry
   * by months × periods (calendar months, UTC, from the later of the current expiry and now).
   * Writes ledger ref `order:<id>:renew:<n>`, `order.paid` (with `renewal`) and
   * `billing.transaction.created`. Idempotent under operation `order.renew`.
   * @param caller the authenticated key
   * @param orderId an order of the caller's account
   * @param body `{periods?: 1-36 (default 1), billing_cycle?: a cycle of the product (default the order's)}`
   * @param opts `idempotencyKey`, `requestId`
   * @returns the order, its resource, the renewal, and whether it is a replay
   * @throws AppError `invalid_request` (400) for a non-object body; `not_found` (404)
   *   `Order not found`; `validation_failed` (422, `periods`, `billing_cycle`); `conflict` (409)
   *   when the order or its resource is not active, the product is offline, or the idempotency key
   *   conflicts; `insufficient_balance` (402) when the wallet does not cover the renewal
   */
  async function renew(caller: Caller, orderId: string, body: unknown, opts: WriteOptions = {}): Promise<RenewResult & { replayed: boolean }> {
    const request = parseRenewBody(body);
    const { result, replayed } = await withIdempotency(
      db,
      { accountId: caller.accountId, key: opts.idempotencyKey, operation: "order.renew", request: { order_id: orderId, body: body ?? null } },
      async (trx): Promise<RenewResult> => {
        const order = toOrderRecord(await orderRow(trx, caller, orderId));
        const product = await loadProduct(trx, order.productId);
        const cycles = product?.billingCycles ?? [];
        const cycleName = request.billingCycle ?? order.billingCycle;
        const cycle = cycles.find((c) => c.cycle === cycleName);
        if (!cycle) throw invalid("billing_cycle", `billing_cycle must be one of: ${cycles.map((c) => c.cycle).join(", ")}`);
        if (order.status !== "active") throw new AppError("conflict", `Only an active order can be renewed; this order is ${order.status}`, { status: order.status });
        if (!product || product.status === "offline") throw new AppError("conflict", "The order's product is offline and cannot be renewed", { field: "product_id" });

        // Take the order's row first (a row lock on PostgreSQL) so concurrent renewals of one
        // order run one after the other and number themselves correctly.
        const at = iso();
        const locked = await trx("orders").where({ id: order.id, status: "active" }).update({ updated_at: at });
        if (locked !== 1) throw new AppError("conflict", "Only an active order can be renewed", { status: order.status });
        const resourceRow = order.resourceId ? await trx("resources").where({ id: order.resourceId, account_id: caller.accountId }).first() : undefined;
        if (!resourceRow || resourceRow.status !== "active") throw new AppError("conflict", "The order's resource is not active and cannot be renewed", { status: resourceRow?.status ?? null });

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
        const moved = await trx("resources").where({ id: resourceRow.id, expires_at: previous, status: "active" }).update({ expires_at: expiresAt, updated_at: at });
        if (moved !== 1) throw new AppError("conflict", "The resource changed during the renewal; retry");

        const renewedOrder: OrderRecord = { ...order, updatedAt: at };
        const entry = await trx("ledger_entries").where("ref", ref).first("id");
        const transactionId = `txn_${entry.id}`;
        const renewal: RenewalRecord = { number, periods: request.periods, billingCycle: cycle.cycle, amount, transactionId, previousExpiresAt: previous, expiresAt };
        await writeOrderEvent(trx, "order.paid", renewedOrder, opts.requestId, {
          renewal: { number, periods: request.periods, billing_cycle: cycle.cycle, amount: formatYuan(amount), transaction_id: transactionId, expires_at: expiresAt },
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
    const rows = await db("orders").whereIn("id", [...new Set(ids)]).andWhere("account_id", caller.accountId);
    const byId = new Map(rows.map((r: any) => [r.id as string, toOrderRecord(r)]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  /**
   * Lists the caller's account's orders, newest first (keyset on creation time, then id).
   * @param page `first` (1-100) and the opaque cursor `after`
   * @throws AppError `invalid_request` (400, field `cursor`) for a bad cursor
   */
  async function list(caller: Caller, page: PageRequest): Promise<Page<OrderRecord>> {
    return keysetPage(db("orders").where("account_id", caller.accountId), ["created_at", "id"], page, toOrderRecord, { stored: storedTotal(db, "accounts", caller.accountId, "order_count") });
  }

  /** Fails a provisioning order: CAS → failed, full refund, stock back, events. */
  async function failProvisioning(row: any): Promise<boolean> {
    return db.transaction(async (trx) => {
      const at = iso();
      const updated = await trx("orders").where({ id: row.id, status: "provisioning" }).update({
        status: "failed",
        provisioning_status: "failed",
        payment_status: "refunded",
        failure_reason: SIMULATED_FAILURE_REASON,
        provision_due_at: null,
        updated_at: at,
      });
      if (updated !== 1) return false;
      const order = toOrderRecord({ ...row, status: "failed", provisioning_status: "failed", payment_status: "refunded", failure_reason: SIMULATED_FAILURE_REASON, updated_at: at });
      const ref = `order:${order.id}:refund`;
      await addCustomerFrozen(trx, order.accountId, order.customerId, -order.amount);
      await credit(trx, "refund", { accountId: order.accountId, customerId: order.customerId, keyId: order.keyId, amount: order.amount, ref, orderId: order.id, reason: SIMULATED_FAILURE_REASON });
      await trx("products").where("id", order.productId).whereNotNull("stock").increment("stock", order.quantity);
      await writeOrderEvent(trx, "order.failed", order, null);
      await appendTransactionEvent(trx, ref, { accountId: order.accountId, keyId: order.keyId, requestId: null });
      return true;
    });
  }

  /** Activates a provisioning order: CAS → active, a resource expiring one cycle from now, event. */
  async function activate(row: any): Promise<boolean> {
    return db.transaction(async (trx) => {
      const nowMs = clock();
      const at = iso(nowMs);
      const resourceId = newId("res");
      const updated = await trx("orders").where({ id: row.id, status: "provisioning" }).update({
        status: "active",
        provisioning_status: "active",
        resource_id: resourceId,
        provision_due_at: null,
        updated_at: at,
      });
      if (updated !== 1) return false;
      await addCustomerFrozen(trx, row.account_id, row.customer_id, -Number(row.amount));
      const product = await trx("products").where("id", row.product_id).first("billing_cycles");
      const months = monthsOf(product ? JSON.parse(product.billing_cycles) : null, row.billing_cycle);
      await trx("resources").insert({
        id: resourceId,
        account_id: row.account_id,
        order_id: row.id,
        product_id: row.product_id,
        customer_id: row.customer_id,
        status: "active",
        expires_at: iso(addMonthsUtc(nowMs, months)),
        created_at: at,
        updated_at: at,
      });
      const order = toOrderRecord({ ...row, status: "active", provisioning_status: "active", resource_id: resourceId, updated_at: at });
      await writeOrderEvent(trx, "order.provisioned", order, null);
      return true;
    });
  }

  /**
   * The vendor simulator's step (run by a worker; docs/architecture.md §8 `PROVISION_DELAY_MS`): settles every
   * `provisioning` order whose `provision_due_at` has passed, each in its own transaction with a
   * compare-and-swap on `status` (so two workers never both settle one). The batch is claimed
   * first with a lease of {@link PROVISION_LEASE_MS} ({@link claimBatch}: `FOR UPDATE SKIP LOCKED`
   * on PostgreSQL), so many workers share the due orders. `metadata.simulate ===
   * "fail"` → `failed` with reason {@link SIMULATED_FAILURE_REASON}, `payment_status` `refunded`,
   * a full refund (ledger ref `order:<id>:refund`), stock restored, `order.failed` and
   * `billing.transaction.created`; otherwise → `active` with a new resource (`res_…`, expiring
   * one billing cycle from now) and `order.provisioned`.
   * @returns how many orders this call settled
   * @see docs/api/cloud.md §3 (order.provisioned → active) and §6
   */
  async function provisionDue(): Promise<number> {
    // Lease the batch (provision_due_at pushed forward) so other workers skip it; settling clears
    // provision_due_at, and a settlement that failed is retried once the lease has passed.
    const now = clock();
    const due = await claimBatch(
      db,
      "orders",
      (q) => q.where("status", "provisioning").andWhere("provision_due_at", "<=", iso(now)),
      [{ column: "provision_due_at" }, { column: "id" }],
      batch,
      { provision_due_at: iso(now + PROVISION_LEASE_MS) },
    );
    let settled = 0;
    let firstError: unknown;
    for (const row of due) {
      try {
        const metadata = JSON.parse(row.metadata);
        const done = metadata?.simulate === "fail" ? await failProvisioning(row) : await activate(row);
        if (done) settled++;
      } catch (error) {
        // The rest of the claimed batch is still settled; this order is retried after its lease.
        firstError ??= error;
      }
    }
    if (firstError !== undefined) throw firstError;
    return settled;
  }

  /**
   * Lists the resources of the caller's account, newest first, optionally of one customer
   * (docs/api/cloud.md §4 `GET /resources`).
   * @param page `first` (1-100) and the opaque cursor `after`
   * @param customerId only this customer's resources
   * @throws AppError `invalid_request` (400, field `cursor`) for a bad cursor
   */
  async function listResources(caller: Caller, page: PageRequest, customerId?: string | null): Promise<Page<ResourceRecord>> {
    const query = db("resources").where("account_id", caller.accountId);
    if (customerId != null && customerId !== "") query.andWhere("customer_id", customerId);
    return keysetPage(query, ["created_at", "id"], page, toResourceRecord);
  }

  /**
   * Reads a resource of the caller's account.
   * @throws AppError `not_found` (404) `Resource not found` for an unknown id or another account's
   */
  async function getResource(caller: Caller, id: string): Promise<ResourceRecord> {
    const row = typeof id === "string" && id.length > 0 && id.length <= 40 ? await db("resources").where({ id, account_id: caller.accountId }).first() : undefined;
    if (!row) throw new AppError("not_found", "Resource not found");
    return toResourceRecord(row);
  }

  /**
   * Reads many resources of the caller's account in one query (for DataLoader).
   * @returns one entry per id, null where unknown or another account's
   */
  async function getResourcesByIds(caller: Caller, ids: readonly string[]): Promise<(ResourceRecord | null)[]> {
    if (ids.length === 0) return [];
    const rows = await db("resources").whereIn("id", [...new Set(ids)]).andWhere("account_id", caller.accountId);
    const byId = new Map(rows.map((r: any) => [r.id as string, toResourceRecord(r)]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  return { create, pay, renew, get, getByIds, list, provisionDue, listResources, getResource, getResourcesByIds };
}

/** The service returned by {@link createOrderService}. */
export type OrderService = ReturnType<typeof createOrderService>;
