/**
 * The order service (docs/api/cloud.md §2-4 `POST /orders`, `GET /orders/{id}`,
 * `POST /orders/{id}/renew`; §6 order callbacks; docs/architecture.md §3, §4, §6, §8). Each
 * operation is a function of its own file that takes its dependencies: create.ts, pay.ts,
 * renew.ts, reads.ts, and the vendor's answer in ../provisioning.ts; {@link createOrderService}
 * binds them to one database and clock. The request's shape is checked in ../order-request.ts,
 * the record and its events are ../order-records.ts and resources are ../resources.ts.
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
import type { Db } from "../../db/index.ts";
import type { Caller } from "../../auth/keys.ts";
import type { Page, PageRequest } from "../../pagination.ts";
import type { CreateOrderInput, RenewOrderInput } from "../order-request.ts";
import type { OrderRecord } from "../order-records.ts";
import { provisionDue } from "../provisioning.ts";
import { getResource, getResourcesByIds, listResources, type ResourceRecord } from "../resources.ts";
import { createOrder } from "./create.ts";
import type { OrderDeps, WriteOptions } from "./deps.ts";
import { payOrder } from "./pay.ts";
import { getOrder, getOrdersByIds, listOrders } from "./reads.ts";
import { renewOrder, type RenewResult } from "./renew.ts";

export type { OrderDeps, WriteOptions } from "./deps.ts";
export type { RenewalRecord, RenewResult } from "./renew.ts";
export { createOrder } from "./create.ts";
export { payOrder } from "./pay.ts";
export { renewOrder } from "./renew.ts";
export { getOrder, getOrdersByIds, listOrders } from "./reads.ts";

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

/** The order operations bound to one database and clock; each names the function it calls. */
export interface OrderService {
  /** {@link createOrder} */
  create(caller: Caller, input: CreateOrderInput, opts?: WriteOptions): Promise<{ order: OrderRecord; replayed: boolean }>;
  /** {@link payOrder} */
  pay(caller: Caller, orderId: string, opts?: WriteOptions): Promise<OrderRecord>;
  /** {@link renewOrder} */
  renew(caller: Caller, orderId: string, input: RenewOrderInput | null | undefined, opts?: WriteOptions): Promise<RenewResult & { replayed: boolean }>;
  /** {@link getOrder} */
  get(caller: Caller, id: string): Promise<OrderRecord>;
  /** {@link getOrdersByIds} */
  getByIds(caller: Caller, ids: readonly string[]): Promise<(OrderRecord | null)[]>;
  /** {@link listOrders} */
  list(caller: Caller, page: PageRequest): Promise<Page<OrderRecord>>;
  /** The vendor simulator's step, run by a worker: provisioning.ts {@link provisionDue}. */
  provisionDue(): Promise<number>;
  /** Resources of the caller's account (resources.ts {@link listResources}). */
  listResources(caller: Caller, page: PageRequest, customerId?: string | null): Promise<Page<ResourceRecord>>;
  /** A resource of the caller's account (resources.ts {@link getResource}). */
  getResource(caller: Caller, id: string): Promise<ResourceRecord>;
  /** Resources of the caller's account by id (resources.ts {@link getResourcesByIds}). */
  getResourcesByIds(caller: Caller, ids: readonly string[]): Promise<(ResourceRecord | null)[]>;
}

/**
 * Binds the order operations to one database, clock and provisioning delay.
 * @param deps database, provisioning delay (milliseconds), clock (default `Date.now`), orders per provisioning step (default 100)
 * @returns the {@link OrderService}
 */
export function createOrderService(deps: OrderServiceDeps): OrderService {
  const { db } = deps;
  const bound: OrderDeps = { db, clock: deps.now ?? Date.now, provisionDelayMs: deps.provisionDelayMs };
  const provisioner = { db, clock: bound.clock, batch: deps.provisionBatch ?? 100 };
  return {
    create: (caller, input, opts) => createOrder(bound, caller, input, opts),
    pay: (caller, orderId, opts) => payOrder(bound, caller, orderId, opts),
    renew: (caller, orderId, input, opts) => renewOrder(bound, caller, orderId, input, opts),
    get: (caller, id) => getOrder(db, caller, id),
    getByIds: (caller, ids) => getOrdersByIds(db, caller, ids),
    list: (caller, page) => listOrders(db, caller, page),
    provisionDue: () => provisionDue(provisioner),
    listResources: (caller, page, customerId) => listResources(db, caller, page, customerId),
    getResource: (caller, id) => getResource(db, caller, id),
    getResourcesByIds: (caller, ids) => getResourcesByIds(db, caller, ids),
  };
}
