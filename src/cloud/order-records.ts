/**
 * An order as the domain sees it and as its callbacks carry it (docs/api/cloud.md §2 "Order", §6
 * order callbacks; docs/architecture.md §8 names): the record, its row conversion and the outbox
 * event every order move writes. The moves themselves are in orders/ (payment, renewal) and
 * provisioning.ts (the vendor's answer).
 */
import type { Knex } from "knex";
import { appendOutbox } from "../events/outbox.ts";
import { formatYuan, type MilliYuan } from "../money.ts";
import type { OrderStatus, PaymentStatus, ProvisioningStatus } from "./states.ts";

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

/** An `orders` row (money and quantity may come back as strings on PostgreSQL; `metadata` as JSON text). */
export interface OrderRow {
  id: string;
  account_id: string;
  key_id: string;
  client_order_no: string;
  product_id: string;
  quantity: number | string;
  billing_cycle: string;
  customer_id: string;
  contact: string | null;
  metadata: string;
  amount: number | string;
  payment_status: PaymentStatus;
  provisioning_status: ProvisioningStatus;
  status: OrderStatus;
  resource_id: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
}

/** The columns {@link toOrderRecord} reads, quoted for fixed SQL text (src/db/rows.ts). */
export const ORDER_RECORD_COLUMNS =
  '"id", "account_id", "key_id", "client_order_no", "product_id", "quantity", "billing_cycle", "customer_id", "contact", "metadata", "amount", "payment_status", "provisioning_status", "status", "resource_id", "failure_reason", "created_at", "updated_at"';

/** Converts an `orders` row. */
export function toOrderRecord(row: OrderRow): OrderRecord {
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
 * Writes an order event to the outbox inside the transaction that made the change, so the event
 * exists exactly when the change does (docs/architecture.md §6).
 * @param topic `order.created`, `order.paid`, `order.provisioned` or `order.failed`
 * @param order the order as it is after the change
 * @param requestId the request id echoed in the callback, if any
 * @param extra further payload fields (a renewal's facts)
 */
export async function writeOrderEvent(
  trx: Knex.Transaction,
  topic: string,
  order: OrderRecord,
  requestId: string | null | undefined,
  extra?: Record<string, unknown>,
): Promise<void> {
  await appendOutbox(trx, {
    topic,
    accountId: order.accountId,
    aggregateId: order.id,
    keyId: order.keyId,
    requestId: requestId ?? null,
    payload: { ...orderPayload(order), ...extra },
  });
}
