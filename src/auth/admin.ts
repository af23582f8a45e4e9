/**
 * The admin token (docs/architecture.md §2 `ADMIN_TOKEN`): the bearer token of the admin GraphQL mutations
 * (keys, top-ups, catalog). It is not an API key: it is compared with the configured token only,
 * never looked up among keys, and no key is ever accepted in its place. Wrong tokens are
 * throttled per client address ({@link createAdminGuard}).
 */
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { AppError } from "../errors.ts";
import { secretsEqual } from "../digest.ts";

/** Message of the 403 when no `ADMIN_TOKEN` is configured. */
export const ADMIN_DISABLED_MESSAGE = "Admin API is disabled";
/** Message of the 401 for an absent or wrong admin token. */
export const ADMIN_UNAUTHORIZED_MESSAGE = "Invalid or missing admin token";

/** The token of an `Authorization: Bearer <token>` header value (scheme case-insensitive), or null. */
function bearerToken(authorization: string | null | undefined): string | null {
  if (typeof authorization !== "string") return null;
  const match = /^bearer[ \t]+(\S.*)$/i.exec(authorization.trim());
  return match ? match[1]!.trim() : null;
}

/**
 * Checks the admin token of a request in constant time (the comparison takes as long whether the
 * first or the last character differs, and whatever the length presented).
 * @param expected the configured `ADMIN_TOKEN`; unset or empty disables the admin API
 * @param authorization the request's `Authorization` header value (`Bearer <token>`)
 * @returns nothing when the token matches
 * @throws AppError `forbidden` (403) `Admin API is disabled` when no token is configured (checked
 *   first, whatever the request carries); `unauthorized` (401) `Invalid or missing admin token`
 *   for an absent header, another scheme or a wrong token
 * @see docs/architecture.md §2 (admin), §4 (authentication comes first)
 */
export function checkAdminToken(expected: string | null | undefined, authorization: string | null | undefined): void {
  if (!expected) throw new AppError("forbidden", ADMIN_DISABLED_MESSAGE);
  if (!tokenMatches(expected, authorization)) throw new AppError("unauthorized", ADMIN_UNAUTHORIZED_MESSAGE);
}

/** Whether `authorization` presents the token `expected`, compared in constant time (no error built: the scope check asks on every request). */
function tokenMatches(expected: string, authorization: string | null | undefined): boolean {
  const presented = bearerToken(authorization);
  // Compare digests even when nothing was presented, so an absent header costs the same.
  const matches = secretsEqual(presented ?? "", expected);
  return presented !== null && matches;
}

/** The throttle's fixed window, in seconds, counted from an address's first admin check in it. */
export const ADMIN_FAILURE_WINDOW_SECONDS = 60;

/** Who presented an admin token: facts from the router's verified internal context. */
export interface AdminRequest {
  /** The request's `Authorization` header value. */
  authorization: string | null | undefined;
  /** The client's address as the router stated it (`x-switchyard-client-ip`); null when unknown. */
  clientIp: string | null;
  /** The request id, for the log line. */
  requestId: string | null;
}

/** The admin check of a process, throttled per client address. */
export interface AdminGuard {
  /**
   * Checks the admin token of one request. Every check that presents a bearer token takes one of
   * the address's `failuresPerWindow` attempts per window before the comparison, and
   * a right token gives it back; so a burst of guesses is compared at most that many times, and
   * an address that used them up is refused whatever it presents, the right token included, until
   * the window ends (otherwise the answer to a throttled guess would still tell whether it was
   * right). Wrong tokens and refusals are logged at warn with the request id and the address,
   * never the token.
   * @throws AppError `forbidden` (403) when no ADMIN_TOKEN is configured; `rate_limited` (429,
   *   details `{ retry_after_seconds }`) when the address used up its attempts; `unauthorized`
   *   (401) for an absent header, another scheme or a wrong token
   */
  check(request: AdminRequest): Promise<void>;
  /**
   * Whether `authorization` carries the admin token (constant time, neither counted nor logged):
   * for what an admin field already checked with {@link check} answers (a scope bypass).
   */
  matches(authorization: string | null | undefined): boolean;
}

/** Options of {@link createAdminGuard}. */
export interface AdminGuardOptions {
  /** The configured `ADMIN_TOKEN`; unset or empty disables the admin API. */
  adminToken?: string;
  /** `ADMIN_FAILURES_PER_MINUTE`: wrong tokens an address may present per window (default 10). */
  failuresPerWindow?: number;
  /** An ioredis connection (`REDIS_URL`): the attempts are counted across processes. Unset: in this process. */
  redis?: Redis;
  /** Prefix of the Redis keys (default `switchyard:`): `<prefix>adminfail:<address>`. */
  keyPrefix?: string;
  logger: Pick<Logger, "warn">;
}

/**
 * Creates the admin check of a process (docs/architecture.md §2.7): {@link checkAdminToken}'s
 * constant-time comparison behind a throttle of wrong tokens per client address
 * (rate-limiter-flexible; in Redis when given, so the limit holds across every process).
 */
export function createAdminGuard(options: AdminGuardOptions): AdminGuard {
  const { adminToken, logger } = options;
  const settings = { points: options.failuresPerWindow ?? 10, duration: ADMIN_FAILURE_WINDOW_SECONDS };
  const limiter: RateLimiterAbstract = options.redis
    ? new RateLimiterRedis({ ...settings, storeClient: options.redis, keyPrefix: `${options.keyPrefix ?? "switchyard:"}adminfail` })
    : new RateLimiterMemory({ ...settings, keyPrefix: "adminfail" });
  const matches = (authorization: string | null | undefined) => Boolean(adminToken) && tokenMatches(adminToken!, authorization);
  return {
    matches,
    async check({ authorization, clientIp, requestId }) {
      // No token configured (403) and no bearer token presented (401): nothing was guessed.
      if (!adminToken || bearerToken(authorization) === null) return checkAdminToken(adminToken, authorization);
      const address = clientIp ?? "unknown";
      const right = matches(authorization);
      try {
        await limiter.consume(address, 1);
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        const retryAfter = Math.max(1, Math.ceil(error.msBeforeNext / 1000));
        logger.warn(
          { request_id: requestId, client_ip: address, right_token: right, retry_after_seconds: retryAfter },
          "admin token refused: too many wrong tokens",
        );
        throw new AppError("rate_limited", "Too many wrong admin tokens", { retry_after_seconds: retryAfter });
      }
      if (right) {
        await limiter.reward(address, 1);
        return;
      }
      logger.warn({ request_id: requestId, client_ip: address }, "wrong admin token");
      throw new AppError("unauthorized", ADMIN_UNAUTHORIZED_MESSAGE);
    },
  };
}
