/**
 * Per-request context of the cloud subgraph: the caller (checked per scope), the admin check of
 * the admin mutations, DataLoaders and the facts the router forwards (request id, idempotency key).
 */
import DataLoader from "dataloader";
import { withLazy } from "../shared/lazy.ts";
import type { Caller } from "../../src/auth/keys.ts";
import type { RateLimiter } from "../../src/auth/policy.ts";
import type { Db } from "../../src/db/index.ts";
import { getProductsByIds, getVendorsByIds, type ProductRecord, type VendorRecord } from "../../src/cloud/catalog.ts";
import type { OrderRecord, ResourceRecord } from "../../src/cloud/orders.ts";
import { checkAdminToken } from "../../src/auth/admin.ts";
import { callerAccess, headerOf, type RequestLike } from "../shared/auth.ts";
import type { CloudServices } from "./services.ts";

/** What every cloud resolver receives. */
export interface CloudContext {
  db: Db;
  services: CloudServices;
  /** The caller holding `scope`. @throws AppError 401/403/429 */
  caller(scope?: string): Promise<Caller>;
  /** The caller when the key passes every policy, else null. */
  callerOrNull(): Promise<Caller | null>;
  /**
   * Checks that the request carries the admin token (`Authorization: Bearer <ADMIN_TOKEN>`); API
   * keys play no part.
   * @throws AppError 403 `Admin API is disabled` when no ADMIN_TOKEN is set, 401 otherwise
   */
  requireAdmin(): void;
  /** Whether the request carries the admin token: what an admin mutation answers is read without key scopes. */
  isAdmin(): boolean;
  requestId: string | null;
  products: DataLoader<string, ProductRecord | null>;
  vendors: DataLoader<string, VendorRecord | null>;
  /** Orders of the caller's account by id. */
  orders: DataLoader<string, OrderRecord | null>;
  /** Resources of the caller's account by id. */
  resources: DataLoader<string, ResourceRecord | null>;
}

/**
 * Builds the context of one request.
 * @param adminToken the configured ADMIN_TOKEN; unset disables the admin mutations
 */
export function createCloudContext(db: Db, services: CloudServices, rateLimiter: RateLimiter, req: RequestLike, adminToken?: string): CloudContext {
  const access = callerAccess(db, rateLimiter, req);
  const anyCaller = async () => (await access.caller())!;
  const requireAdmin = () => checkAdminToken(adminToken, headerOf(req, "authorization"));
  let admin: boolean | undefined;
  const eager = {
    db,
    services,
    caller: (scope?: string) => access.caller(scope),
    callerOrNull: access.callerOrNull,
    requireAdmin,
    isAdmin: () =>
      (admin ??= (() => {
        try {
          requireAdmin();
          return true;
        } catch {
          return false;
        }
      })()),
    requestId: headerOf(req, "x-request-id") ?? null,
  };
  return withLazy<typeof eager, Pick<CloudContext, "products" | "vendors" | "orders" | "resources">>(eager, {
    products: () => new DataLoader((ids) => getProductsByIds(db, ids as string[])),
    vendors: () => new DataLoader((ids) => getVendorsByIds(db, ids as string[])),
    orders: () => new DataLoader(async (ids) => services.orders.getByIds(await anyCaller(), ids as string[])),
    resources: () => new DataLoader(async (ids) => services.orders.getResourcesByIds(await anyCaller(), ids as string[])),
  });
}
