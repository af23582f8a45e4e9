/**
 * Per-request context of the generation subgraph: the lazily authenticated caller, DataLoaders
 * and the locale.
 */
import DataLoader from "dataloader";
import type { Caller } from "../../src/auth/keys.ts";
import type { RateLimiter } from "../../src/auth/rate-limit.ts";
import type { PubSub } from "../../src/events/pubsub.ts";
import type { Db } from "../../src/db/index.ts";
import type { GenerationService, TaskRecord } from "../../src/generation/tasks/index.ts";
import { usageReader, type UsageReader } from "../../src/generation/usage.ts";
import { negotiateLocale, type Locale } from "../shared/locale.ts";
import { callerAccess, headerOf, type RequestLike } from "../shared/auth.ts";
import { withLazy } from "../shared/lazy.ts";
import { ownAccountCaller } from "../shared/own-account.ts";
import { RequestBudget, type BudgetLimits } from "../../src/db/budget.ts";
import type { OperatorAuth, Principal } from "../../src/auth/operators/access.ts";
import type { AuditActor } from "../../src/audit/log.ts";
import { adminAccess } from "../shared/admin-access.ts";
import type { Channels } from "../../src/generation/channels/index.ts";

/** What every resolver receives. */
export interface GenerationContext {
  db: Db;
  /** The request's database budget (src/db/budget.ts); every resolver runs inside it. */
  budget: RequestBudget;
  /** Where the dispatcher publishes committed outbox events (subscriptions listen here). */
  pubsub: PubSub;
  service: GenerationService;
  locale: Locale;
  /** The caller holding the `generation` scope; authenticates on first use. @throws AppError 401/403/429 */
  caller(): Promise<Caller>;
  /** The caller when the key is valid, else null (never throws). */
  callerOrNull(): Promise<Caller | null>;
  /**
   * The authenticated caller whatever its scopes: for `viewer` (only the account id) and the
   * `Account` fields, which then check their own scope. @throws AppError 401/403/429
   */
  anyCaller(): Promise<Caller>;
  /**
   * The caller holding the `generation` scope when `accountId` is its account, else null
   * (own-account.ts). @throws AppError 403 for the caller's own account without the scope
   */
  ownAccount(accountId: string): Promise<Caller | null>;
  /** Tasks of the caller by id, batched per request. */
  taskLoader: DataLoader<string, TaskRecord | null>;
  /** The caller's usage totals, each read once per request and only when a field asks for it. */
  usage: UsageReader;
  /** `METHOD path` the router reports for this request (request log), if any. */
  route: { method: string; path: string; status: number | null } | null;
  requestId: string | null;
  /**
   * Authenticates the operator once per request (session, operator token or break-glass
   * ADMIN_TOKEN) and checks its role may use `field` (subgraphs/shared/admin-access.ts).
   * @throws AppError 403 (no ADMIN_TOKEN and no operator credential; role; CSRF), 429 too many failures from the client's address, 401 otherwise
   */
  requireAdmin(field?: string, args?: Record<string, unknown>): Promise<Principal>;
  /** The actor of the request's audit rows (after {@link requireAdmin}). */
  auditActor(): AuditActor;
  /** The channels of this process (README "Channels"). */
  channels?: Channels;
}

/** What the admin fields need: the process's operator authentication and the channels. */
export interface GenerationAdmin {
  auth: OperatorAuth;
  channels?: Channels;
}

/**
 * Builds the context of one request.
 * @param admin the operator authentication (src/auth/operators/access.ts) and the channels
 * @param budgetLimits the request's database budget (default {@link RequestBudget}'s)
 */
export function createContext(
  db: Db,
  service: GenerationService,
  rateLimiter: RateLimiter,
  pubsub: PubSub,
  req: RequestLike,
  admin: GenerationAdmin,
  budgetLimits?: BudgetLimits,
): GenerationContext {
  const header = (name: string) => headerOf(req, name);
  const access = callerAccess(db, rateLimiter, req);
  const caller = () => access.caller("generation");
  const routeHeader = header("x-switchyard-route");
  const match = routeHeader ? /^([A-Z]+) (\/\S*)$/.exec(routeHeader) : null;
  const adminCheck = adminAccess(admin.auth, db, req);
  const eager = {
    db,
    budget: new RequestBudget(budgetLimits),
    pubsub,
    service,
    locale: negotiateLocale(header("accept-language")),
    caller,
    callerOrNull: () => caller().catch(() => null),
    anyCaller: () => access.caller(),
    ownAccount: (accountId: string) => ownAccountCaller(access, accountId, "generation"),
    route: match ? { method: match[1]!, path: match[2]!, status: Number(header("x-switchyard-route-status")) || null } : null,
    requestId: header("x-request-id") ?? null,
    requireAdmin: adminCheck.require,
    auditActor: adminCheck.actor,
    channels: admin.channels,
  };
  return withLazy<typeof eager, Pick<GenerationContext, "usage" | "taskLoader">>(eager, {
    usage: () => usageReader(db, caller, access.totals),
    taskLoader: () => new DataLoader(async (ids) => service.getTasks(await caller(), ids)),
  });
}
