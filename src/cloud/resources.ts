/**
 * Resources: what an active order gives its customer (docs/api/cloud.md §2 "Resource", §4
 * `GET /resources`). A resource is created when its order is provisioned (provisioning.ts) and its
 * expiry moved by renewals (orders/renew.ts); this file reads them and holds the expiry arithmetic.
 */
import { AppError } from "../errors.ts";
import type { Db } from "../db/index.ts";
import { placeholders, selectRows } from "../db/rows.ts";
import type { Caller } from "../auth/keys.ts";
import { byCreation, keysetPage, type Page, type PageRequest } from "../pagination.ts";
import type { ResourceStatus } from "./states.ts";

/** A resource held by a customer (docs/api/cloud.md §2 "Resource"). */
export interface ResourceRecord {
  id: string;
  accountId: string;
  orderId: string;
  productId: string;
  customerId: string;
  status: ResourceStatus;
  expiresAt: string;
  createdAt: string;
}

/** A `resources` row (the threshold is bigint: a string on PostgreSQL). */
export interface ResourceRow {
  id: string;
  account_id: string;
  order_id: string;
  product_id: string;
  customer_id: string;
  status: ResourceStatus;
  expires_at: string;
  created_at: string;
  usage_threshold_bytes: number | string | null;
}

/** The columns {@link toResourceRecord} reads, quoted for fixed SQL text (src/db/rows.ts). */
const RESOURCE_RECORD_COLUMNS = '"id", "account_id", "order_id", "product_id", "customer_id", "status", "expires_at", "created_at"';

/** Converts a `resources` row. */
export function toResourceRecord(row: ResourceRow): ResourceRecord {
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
 * Lists the resources of the caller's account, newest first, optionally of one customer
 * (docs/api/cloud.md §4 `GET /resources`).
 * @param page `first` (1-100) and the opaque cursor `after`
 * @param customerId only this customer's resources
 * @throws AppError `invalid_request` (400, field `cursor`) for a bad cursor
 */
export async function listResources(db: Db, caller: Caller, page: PageRequest, customerId?: string | null): Promise<Page<ResourceRecord>> {
  const query = db("resources").where("account_id", caller.accountId);
  if (customerId != null && customerId !== "") query.andWhere("customer_id", customerId);
  return keysetPage(query, byCreation(), page, toResourceRecord);
}

/**
 * Reads a resource of the caller's account.
 * @throws AppError `not_found` (404) `Resource not found` for an unknown id or another account's
 */
export async function getResource(db: Db, caller: Caller, id: string): Promise<ResourceRecord> {
  const row =
    typeof id === "string" && id.length > 0 && id.length <= 40 ? await db("resources").where({ id, account_id: caller.accountId }).first() : undefined;
  if (!row) throw new AppError("not_found", "Resource not found");
  return toResourceRecord(row);
}

/**
 * Reads many resources of the caller's account in one query (for DataLoader).
 * @returns one entry per id, null where unknown or another account's
 */
export async function getResourcesByIds(db: Db, caller: Caller, ids: readonly string[]): Promise<(ResourceRecord | null)[]> {
  if (ids.length === 0) return [];
  const unique = [...new Set(ids)];
  const rows = await selectRows<ResourceRow>(
    db,
    `select ${RESOURCE_RECORD_COLUMNS} from "resources" where "id" in (${placeholders(unique.length)}) and "account_id" = ?`,
    [...unique, caller.accountId],
  );
  const byId = new Map(rows.map((r) => [r.id, toResourceRecord(r)]));
  return ids.map((id) => byId.get(id) ?? null);
}
