/**
 * Per-request context of the cloud subgraph: the caller (checked per scope), the admin check of
 * the admin mutations, DataLoaders and the facts the router forwards (request id, idempotency key).
 */
import DataLoader from "dataloader";
import { withLazy } from "../shared/lazy.ts";
import type { Caller } from "../../src/auth/keys.ts";
import type { RateLimiter } from "../../src/auth/rate-limit.ts";
import type { Db } from "../../src/db/index.ts";
import { getProductsByIds, getVendorsByIds, listProductsOfVendors, type ProductRecord, type VendorRecord } from "../../src/cloud/catalog.ts";
import type { OrderRecord } from "../../src/cloud/order-records.ts";
import type { ResourceRecord } from "../../src/cloud/resources.ts";
import { getDomainsByNames, type DomainRecord } from "../../src/cloud/domains.ts";
import { getPurgeTasksByIds, listPurgeTasksOfDomains, type PurgeTaskRecord } from "../../src/cloud/purge.ts";
import { getStatement, getTransactionsByIds, type StatementRecord, type TransactionRecord } from "../../src/cloud/billing.ts";
import { getTasksOfKey, type TaskRecord } from "../../src/generation/tasks/index.ts";
import { listDeliveriesOfAggregates, type WebhookDeliveryRecord } from "../../src/events/deliveries.ts";
import type { Page } from "../../src/pagination.ts";
import type { OperatorAuth, Principal } from "../../src/auth/operators/access.ts";
import type { AuditActor } from "../../src/audit/log.ts";
import { adminAccess } from "../shared/admin-access.ts";
import { callerAccess, headerOf, type RequestLike } from "../shared/auth.ts";
import { ownAccountCaller } from "../shared/own-account.ts";
import type { CloudServices } from "./services.ts";
import { RequestBudget, type BudgetLimits } from "../../src/db/budget.ts";

/** What every cloud resolver receives. */
export interface CloudContext {
  db: Db;
  /** The request's database budget (src/db/budget.ts); every resolver runs inside it. */
  budget: RequestBudget;
  services: CloudServices;
  /** The caller holding `scope`. @throws AppError 401/403/429 */
  caller(scope?: string): Promise<Caller>;
  /** The caller when the key passes every policy, else null. */
  callerOrNull(): Promise<Caller | null>;
  /**
   * The caller holding `scope` when `accountId` is its account, else null (own-account.ts).
   * @throws AppError 403 for the caller's own account without `scope`
   */
  ownAccount(accountId: string, scope: string): Promise<Caller | null>;
  /**
   * Authenticates the operator once per request (console session, operator token or break-glass
   * ADMIN_TOKEN; API keys play no part) and checks its role may use `field` (`Type.field`) with
   * `args` (subgraphs/shared/admin-access.ts).
   * @returns who is acting
   * @throws AppError 403 (`Admin API is disabled` with no ADMIN_TOKEN and no operator credential;
   *   a role that may not use the field; a session write without CSRF token), 429 when the
   *   client's address presented too many wrong credentials, 401 otherwise
   */
  requireAdmin(field?: string, args?: Record<string, unknown>): Promise<Principal>;
  /** The actor of the request's audit rows (after {@link requireAdmin}). */
  auditActor(): AuditActor;
  /** Whether an operator is acting: what an admin mutation answers is read without key scopes. */
  isAdmin(): boolean;
  /** The session id the router's sign-in route made (`adminSignIn` only), and the cookie's session. */
  sessionFacts: { newSession: string | null; session: string | null; clientIp: string | null };
  /** The operator authentication of the process (sign-in, sign-out). */
  operatorAuth: OperatorAuth;
  requestId: string | null;
  products: DataLoader<string, ProductRecord | null>;
  vendors: DataLoader<string, VendorRecord | null>;
  /** Orders of the caller's account by id. */
  orders: DataLoader<string, OrderRecord | null>;
  /** Resources of the caller's account by id. */
  resources: DataLoader<string, ResourceRecord | null>;
  /** Domains of the caller's account by name (null: unknown or another account's). */
  domains: DataLoader<string, DomainRecord | null>;
  /** Purge tasks of the caller's account by id. */
  purgeTasks: DataLoader<string, PurgeTaskRecord | null>;
  /** Transactions of the caller's account's customers by id (`txn_<n>`). */
  transactions: DataLoader<string, TransactionRecord | null>;
  /**
   * Monthly statements of the caller's account by id (`stm_YYYY-MM`), each read once per request
   * as `statement(id:)` reads it (which requests its export); null for an id it refuses.
   */
  statements: DataLoader<string, StatementRecord | null>;
  /** Tasks of the calling key by id (`node` for task ids; the generation subgraph serves their fields). */
  tasks: DataLoader<string, TaskRecord | null>;
  /** A page of a vendor's products (`Vendor.products`). */
  vendorProducts: DataLoader<ChildListKey & { after: string | null }, Page<ProductRecord>, string>;
  /** An order's newest callback deliveries (`Order.deliveries`), of the order's account. */
  orderDeliveries: DataLoader<ChildListKey & { accountId: string }, WebhookDeliveryRecord[], string>;
  /** A domain's newest purge tasks (`Domain.purgeTasks`), of the caller's account. */
  domainPurgeTasks: DataLoader<ChildListKey, PurgeTaskRecord[], string>;
}

/** One parent's list in a per-parent list loader: the parent and the page size. */
export interface ChildListKey {
  parent: string;
  first: number;
}

/**
 * A DataLoader of lists under many parents (no N+1): the keys of one batch asking for the same
 * page (equal arguments but the parent) are read together by one call of `read`, one SQL
 * statement for all their parents. Not cached: lists change, and a subscription's context lives
 * for hours (each event reads them afresh, one statement per batch still).
 * @param argsOf the arguments of a key other than its parent, as a string
 * @param read reads the lists of `parents` for the arguments of `sample`
 */
function childListLoader<K extends ChildListKey, V>(
  argsOf: (key: K) => string,
  read: (parents: string[], sample: K) => Promise<Map<string, V>>,
): DataLoader<K, V, string> {
  return new DataLoader<K, V, string>(
    async (keys) => {
      const groups = new Map<string, K[]>();
      for (const key of keys) {
        const args = argsOf(key);
        const group = groups.get(args);
        if (group) group.push(key);
        else groups.set(args, [key]);
      }
      const lists = new Map<string, Map<string, V> | Error>();
      await Promise.all(
        [...groups].map(([args, members]) =>
          read(
            members.map((key) => key.parent),
            members[0]!,
          ).then(
            (found) => lists.set(args, found),
            (error: unknown) => lists.set(args, error instanceof Error ? error : new Error(String(error))),
          ),
        ),
      );
      return keys.map((key) => {
        const found = lists.get(argsOf(key))!;
        return found instanceof Error ? found : found.get(key.parent)!;
      });
    },
    { cache: false },
  );
}

/**
 * Builds the context of one request.
 * @param admin the process's operator authentication (src/auth/operators/access.ts; no ADMIN_TOKEN and no operator: the admin fields answer 403)
 * @param budgetLimits the request's database budget (default {@link RequestBudget}'s)
 */
export function createCloudContext(
  db: Db,
  services: CloudServices,
  rateLimiter: RateLimiter,
  req: RequestLike,
  admin: OperatorAuth,
  budgetLimits?: BudgetLimits,
): CloudContext {
  const access = callerAccess(db, rateLimiter, req);
  const anyCaller = async () => (await access.caller())!;
  const adminCheck = adminAccess(admin, db, req);
  const eager = {
    db,
    budget: new RequestBudget(budgetLimits),
    services,
    caller: (scope?: string) => access.caller(scope),
    callerOrNull: access.callerOrNull,
    ownAccount: (accountId: string, scope: string) => ownAccountCaller(access, accountId, scope),
    requireAdmin: adminCheck.require,
    auditActor: adminCheck.actor,
    isAdmin: adminCheck.isAdmin,
    sessionFacts: {
      newSession: headerOf(req, "x-switchyard-new-session") ?? null,
      session: headerOf(req, "x-switchyard-session") ?? null,
      clientIp: headerOf(req, "x-switchyard-client-ip") ?? null,
    },
    operatorAuth: admin,
    requestId: headerOf(req, "x-request-id") ?? null,
  };
  return withLazy<
    typeof eager,
    Pick<
      CloudContext,
      | "products"
      | "vendors"
      | "orders"
      | "resources"
      | "domains"
      | "purgeTasks"
      | "transactions"
      | "statements"
      | "tasks"
      | "vendorProducts"
      | "orderDeliveries"
      | "domainPurgeTasks"
    >
  >(eager, {
    products: () => new DataLoader((ids) => getProductsByIds(db, ids as string[])),
    vendors: () => new DataLoader((ids) => getVendorsByIds(db, ids as string[])),
    orders: () => new DataLoader(async (ids) => services.orders.getByIds(await anyCaller(), ids as string[])),
    resources: () => new DataLoader(async (ids) => services.orders.getResourcesByIds(await anyCaller(), ids as string[])),
    domains: () => new DataLoader(async (names) => getDomainsByNames(db, await anyCaller(), names, services.stepMs)),
    purgeTasks: () => new DataLoader(async (ids) => getPurgeTasksByIds(db, await anyCaller(), ids, services.stepMs)),
    transactions: () => new DataLoader(async (ids) => getTransactionsByIds(db, await anyCaller(), ids)),
    statements: () =>
      new DataLoader(async (ids) => {
        const caller = await anyCaller();
        return Promise.all(ids.map((id) => getStatement(db, caller, id).catch(() => null)));
      }),
    tasks: () => new DataLoader(async (ids) => getTasksOfKey(db, await anyCaller(), ids)),
    vendorProducts: () =>
      childListLoader(
        (key) => `${key.first}:${key.after ?? ""}`,
        (vendorIds, { first, after }) => listProductsOfVendors(db, vendorIds, { first, after }),
      ),
    orderDeliveries: () =>
      childListLoader(
        (key) => `${key.first}:${key.accountId}`,
        (orderIds, { first, accountId }) => listDeliveriesOfAggregates(db, accountId, orderIds, first),
      ),
    domainPurgeTasks: () =>
      childListLoader(
        (key) => String(key.first),
        async (domains, { first }) => listPurgeTasksOfDomains(db, await anyCaller(), domains, first, services.stepMs),
      ),
  });
}
