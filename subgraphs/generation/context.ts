/**
 * Per-request context of the generation subgraph: the lazily authenticated caller, DataLoaders
 * and the locale.
 */
import DataLoader from "dataloader";
import type { Caller } from "../../src/auth/keys.ts";
import type { RateLimiter } from "../../src/auth/rate-limit.ts";
import type { PubSub } from "../../src/events/pubsub.ts";
import type { Db } from "../../src/db/index.ts";
import type { GenerationService, TaskRecord } from "../../src/generation/tasks.ts";
import { usageReader, type UsageReader } from "../../src/generation/usage.ts";
import { negotiateLocale, type Locale } from "../shared/locale.ts";
import { callerAccess, headerOf, type RequestLike } from "../shared/auth.ts";
import { withLazy } from "../shared/lazy.ts";
import { ownAccountCaller } from "../shared/own-account.ts";
import { RequestBudget, type BudgetLimits } from "../../src/db/budget.ts";
import type { AdminGuard } from "../../src/auth/admin.ts";
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
   * Checks `Authorization: Bearer <ADMIN_TOKEN>` (the channel admin fields), once per request.
   * @throws AppError 403 no ADMIN_TOKEN, 429 too many wrong tokens from the client's address, 401 otherwise
   */
  requireAdmin(): Promise<void>;
  /** The channels of this process (README "Channels"). */
  channels?: Channels;
}

/** What the admin fields need: the process's admin check (ADMIN_TOKEN) and the channels. */
export interface GenerationAdmin {
  guard: AdminGuard;
  channels?: Channels;
}

/**
 * Builds the context of one request.
 * @param admin the admin check (src/auth/admin.ts `createAdminGuard`) and the channels
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
    requireAdmin: adminAccess(admin.guard, req).require,
    channels: admin.channels,
  };
  return withLazy<typeof eager, Pick<GenerationContext, "usage" | "taskLoader">>(eager, {
    usage: () => usageReader(db, caller),
    taskLoader: () => new DataLoader(async (ids) => service.getTasks(await caller(), ids)),
  });
}
