/**
 * The provisioning lease: the vendor simulator's step that settles paid orders
 * (docs/architecture.md §8 `PROVISION_DELAY_MS`; docs/api/cloud.md §3 order.provisioned → active,
 * §6 callbacks). Run by a worker; many workers share the due orders through a lease, and every
 * settlement is a compare-and-swap on `status` in its own transaction, so no order is settled
 * twice.
 */
import { credit } from "../ledger/index.ts";
import { addCustomerFrozen } from "../ledger/totals.ts";
import { claimBatch, type Db } from "../db/index.ts";
import { newId } from "../ids.ts";
import { appendTransactionEvent } from "./customers.ts";
import { monthsOfCycle, type BillingCycle } from "./catalog.ts";
import { toOrderRecord, writeOrderEvent, type OrderRow } from "./order-records.ts";
import { addMonthsUtc } from "./resources.ts";

/** How long {@link provisionDue} leases the orders it claims (another worker skips them meanwhile). */
export const PROVISION_LEASE_MS = 60_000;
/** The failure reason the vendor simulator gives for `metadata.simulate: "fail"`. */
export const SIMULATED_FAILURE_REASON = "Vendor rejected the order (simulated)";

/** The months of a billing cycle: the product's definition, else what the name implies, else 1. */
function monthsOf(cycles: BillingCycle[] | null, cycle: string): number {
  return cycles?.find((c) => c.cycle === cycle)?.months ?? monthsOfCycle(cycle) ?? 1;
}

/** What the provisioner needs. */
export interface ProvisionerDeps {
  db: Db;
  /** The clock in epoch milliseconds. */
  clock: () => number;
  /** Orders settled per step. */
  batch: number;
}

/** The ISO 8601 text of a moment of the deps' clock (default now). */
function isoAt(deps: Pick<ProvisionerDeps, "clock">, ms: number = deps.clock()): string {
  return new Date(ms).toISOString();
}

/** Fails a provisioning order: CAS → failed, full refund, stock back, events. */
async function failProvisioning(deps: ProvisionerDeps, row: OrderRow): Promise<boolean> {
  return deps.db.transaction(async (trx) => {
    const at = isoAt(deps);
    const updated = await trx("orders").where({ id: row.id, status: "provisioning" }).update({
      status: "failed",
      provisioning_status: "failed",
      payment_status: "refunded",
      failure_reason: SIMULATED_FAILURE_REASON,
      provision_due_at: null,
      updated_at: at,
    });
    if (updated !== 1) return false;
    const order = toOrderRecord({
      ...row,
      status: "failed",
      provisioning_status: "failed",
      payment_status: "refunded",
      failure_reason: SIMULATED_FAILURE_REASON,
      updated_at: at,
    });
    const ref = `order:${order.id}:refund`;
    await addCustomerFrozen(trx, order.accountId, order.customerId, -order.amount);
    await credit(trx, "refund", {
      accountId: order.accountId,
      customerId: order.customerId,
      keyId: order.keyId,
      amount: order.amount,
      ref,
      orderId: order.id,
      reason: SIMULATED_FAILURE_REASON,
    });
    await trx("products").where("id", order.productId).whereNotNull("stock").increment("stock", order.quantity);
    await writeOrderEvent(trx, "order.failed", order, null);
    await appendTransactionEvent(trx, ref, { accountId: order.accountId, keyId: order.keyId, requestId: null });
    return true;
  });
}

/** Activates a provisioning order: CAS → active, a resource expiring one cycle from now, event. */
async function activate(deps: ProvisionerDeps, row: OrderRow): Promise<boolean> {
  return deps.db.transaction(async (trx) => {
    const nowMs = deps.clock();
    const at = isoAt(deps, nowMs);
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
      expires_at: isoAt(deps, addMonthsUtc(nowMs, months)),
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
 * @param deps database, clock, orders per call
 * @returns how many orders this call settled
 * @throws the first settlement's error, after the rest of the batch was settled
 * @see docs/api/cloud.md §3 (order.provisioned → active) and §6
 */
export async function provisionDue(deps: ProvisionerDeps): Promise<number> {
  const { db, clock, batch } = deps;
  // Lease the batch (provision_due_at pushed forward) so other workers skip it; settling clears
  // provision_due_at, and a settlement that failed is retried once the lease has passed.
  const now = clock();
  const due = await claimBatch<OrderRow>(
    db,
    "orders",
    (q) => q.where("status", "provisioning").andWhere("provision_due_at", "<=", isoAt(deps, now)),
    [{ column: "provision_due_at" }, { column: "id" }],
    batch,
    { provision_due_at: isoAt(deps, now + PROVISION_LEASE_MS) },
  );
  let settled = 0;
  let firstError: unknown;
  for (const row of due) {
    try {
      const metadata = JSON.parse(row.metadata);
      const done = metadata?.simulate === "fail" ? await failProvisioning(deps, row) : await activate(deps, row);
      if (done) settled++;
    } catch (error) {
      // The rest of the claimed batch is still settled; this order is retried after its lease.
      firstError ??= error;
    }
  }
  if (firstError !== undefined) throw firstError;
  return settled;
}
