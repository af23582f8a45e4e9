/**
 * The admin check of one subgraph request, the same in both subgraphs (issue 23 §1;
 * docs/adr/0022-operators-and-audit.md): who the request comes from (src/auth/operators/access.ts:
 * a console session, an operator token, or the break-glass ADMIN_TOKEN), read from the router's
 * verified internal context, never HTTP headers; then whether the operator's role may use the
 * admin field (src/auth/operators/roles.ts, the one table), and for a console session whether a
 * write carries its CSRF token. However many admin fields a request asks for, it is authenticated
 * (and counted) once.
 */
import type { Db } from "../../src/db/index.ts";
import { AppError } from "../../src/errors.ts";
import type { AuditActor } from "../../src/audit/log.ts";
import type { OperatorAuth, Principal } from "../../src/auth/operators/access.ts";
import { ADMIN_FIELD_ROLES, mayUseAdminField } from "../../src/auth/operators/roles.ts";
import { headerOf, type RequestLike } from "./auth.ts";
import { noteRetryAfter } from "./caller-report.ts";

/** The admin check of one request. */
export interface AdminAccess {
  /**
   * Authenticates the request once, then checks that its role may use `field` (`Type.field`)
   * with `args`, and that a console session's write carries the CSRF token.
   * @returns who is acting
   * @throws AppError 403 `forbidden` (no ADMIN_TOKEN and no operator credential; a role that may
   *   not use the field; a session write without its CSRF token), 429 `rate_limited` (the router
   *   answers `Retry-After`), 401 `unauthorized`
   */
  require(field?: string, args?: Record<string, unknown>): Promise<Principal>;
  /** Whether an operator was authenticated on this request, or it carries the ADMIN_TOKEN (not counted, not logged). */
  isAdmin(): boolean;
  /** The actor of the request's audit rows. @throws Error before {@link require} resolved */
  actor(): AuditActor;
}

/** The message of the 403 for a field the role may not use. */
export const ROLE_FORBIDDEN_MESSAGE = "Your operator role may not use this field";

/**
 * Builds the admin check of one subgraph request.
 * @param req the request as the context builder sees it (the verified internal headers)
 */
export function adminAccess(auth: OperatorAuth, db: Db, req: RequestLike): AdminAccess {
  let authenticated: Promise<Principal> | undefined;
  let principal: Principal | null = null;
  let admin: boolean | undefined;
  const requestId = headerOf(req, "x-request-id") ?? null;
  const authenticate = () =>
    auth
      .authenticate(db, {
        authorization: headerOf(req, "authorization"),
        session: headerOf(req, "x-switchyard-session"),
        csrf: headerOf(req, "x-switchyard-csrf"),
        clientIp: headerOf(req, "x-switchyard-client-ip") ?? null,
        requestId,
      })
      .then(
        (found) => (principal = found),
        (error: unknown) => {
          if (error instanceof AppError && error.code === "rate_limited") {
            noteRetryAfter(req, (error.details as { retry_after_seconds: number }).retry_after_seconds);
          }
          throw error;
        },
      );
  return {
    async require(field, args) {
      authenticated ??= authenticate();
      const found = await authenticated;
      if (field !== undefined) {
        if (!mayUseAdminField(found.role, field, args)) throw new AppError("forbidden", ROLE_FORBIDDEN_MESSAGE);
        if (field.startsWith("Mutation.") && !found.csrfOk) throw new AppError("forbidden", "Missing or wrong CSRF token");
      }
      return found;
    },
    isAdmin() {
      if (principal !== null) return true;
      admin ??= auth.guard.matches(headerOf(req, "authorization"));
      return admin;
    },
    actor() {
      if (!principal) throw new Error("admin actor read before the admin check");
      return { operatorId: principal.operatorId, actor: principal.actor, role: principal.role, requestId };
    },
  };
}

type Resolver = (
  parent: unknown,
  args: Record<string, unknown>,
  ctx: { requireAdmin(field?: string, args?: Record<string, unknown>): Promise<unknown> },
  info: unknown,
) => unknown;

/**
 * Wraps every admin field of a resolver map that the role table lists
 * ({@link ADMIN_FIELD_ROLES}) with the role check, so that no admin resolver runs for a role that
 * may not use it, whatever the resolver itself checks.
 * @returns the same map, admin fields wrapped
 */
export function guardAdminFields<R extends Record<string, unknown>>(resolvers: R): R {
  const out: Record<string, unknown> = { ...resolvers };
  for (const key of Object.keys(ADMIN_FIELD_ROLES)) {
    const [type, field] = key.split(".") as [string, string];
    const fields = out[type] as Record<string, Resolver> | undefined;
    const resolve = fields?.[field];
    if (typeof resolve !== "function") continue;
    out[type] = {
      ...fields,
      [field]: async (parent: unknown, args: Record<string, unknown>, ctx: Parameters<Resolver>[2], info: unknown) => {
        await ctx.requireAdmin(key, args);
        return resolve(parent, args, ctx, info);
      },
    };
  }
  return out as R;
}
