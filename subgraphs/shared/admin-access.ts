/**
 * The admin check of one subgraph request, the same in both subgraphs: the process's
 * {@link AdminGuard} (src/auth/admin.ts: constant-time comparison, wrong tokens throttled per client
 * address) fed with the facts of the router's verified internal context, never HTTP headers.
 * However many admin fields a request asks for, it is checked (and counted) once.
 */
import type { AdminGuard } from "../../src/auth/admin.ts";
import { AppError } from "../../src/errors.ts";
import { headerOf, type RequestLike } from "./auth.ts";
import { noteRetryAfter } from "./caller-report.ts";

/** The admin check of one request. */
export interface AdminAccess {
  /**
   * Checks the request's admin token, once per request.
   * @throws AppError 403 `forbidden` (no ADMIN_TOKEN), 429 `rate_limited` (the address presented
   *   too many wrong tokens; the router answers `Retry-After`), 401 `unauthorized`
   */
  require(): Promise<void>;
  /** Whether the request carries the admin token (neither counted nor logged: see {@link AdminGuard.matches}). */
  isAdmin(): boolean;
}

/**
 * Builds the admin check of one subgraph request.
 * @param req the request as the context builder sees it (the verified internal headers)
 */
export function adminAccess(guard: AdminGuard, req: RequestLike): AdminAccess {
  let checked: Promise<void> | undefined;
  let admin: boolean | undefined;
  const check = () =>
    guard
      .check({
        authorization: headerOf(req, "authorization"),
        clientIp: headerOf(req, "x-switchyard-client-ip") ?? null,
        requestId: headerOf(req, "x-request-id") ?? null,
      })
      .catch((error: unknown) => {
        if (error instanceof AppError && error.code === "rate_limited") {
          noteRetryAfter(req, (error.details as { retry_after_seconds: number }).retry_after_seconds);
        }
        throw error;
      });
  return {
    require: () => (checked ??= check()),
    isAdmin: () => (admin ??= guard.matches(headerOf(req, "authorization"))),
  };
}
