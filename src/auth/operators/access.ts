/**
 * Who an admin request comes from (issue 23 §1; docs/adr/0022-operators-and-audit.md): an
 * operator's console session (the router states the session cookie and the `X-CSRF-Token` header
 * in its signed context), an operator's API token (`Authorization: Bearer syop_…`), or the
 * break-glass `ADMIN_TOKEN` (src/auth/admin.ts; acts as `owner`, every use logged at warn).
 * Wrong tokens are throttled per address and per token; wrong passwords per account and per
 * address (rate-limiter-flexible, in Redis when set), each with `ADMIN_FAILURES_PER_MINUTE`
 * attempts per 60 s window taken before the comparison and given back when it holds.
 */
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import type { Db } from "../../db/index.ts";
import { AppError } from "../../errors.ts";
import { ADMIN_FAILURE_WINDOW_SECONDS, ADMIN_UNAUTHORIZED_MESSAGE, type AdminGuard } from "../admin.ts";
import type { OperatorRole } from "./roles.ts";
import { verifyPassword } from "./passwords.ts";
import { csrfMatches, endSession, operatorOfSession, startSession, type SessionSettings } from "./sessions.ts";
import { credentialsOf, operatorOfToken, OPERATOR_TOKEN_PREFIX, parseOperatorToken } from "./store.ts";

/** Who is acting on an admin request. */
export interface Principal {
  /** The operator's id; null for break-glass. */
  operatorId: string | null;
  /** The operator's email, or `break-glass`. */
  actor: string;
  role: OperatorRole;
  /** How the request proved it. */
  via: "session" | "token" | "break-glass";
  /** For a session: whether the request carried the session's CSRF token (every write needs it). */
  csrfOk: boolean;
}

/** The credentials of one admin request, as the router's signed context states them. */
export interface AdminCredentials {
  authorization: string | null | undefined;
  /** The console session cookie's value. */
  session: string | null | undefined;
  /** The `X-CSRF-Token` header's value. */
  csrf: string | null | undefined;
  clientIp: string | null;
  requestId: string | null;
}

/** Message of the 401 for a session that ended, expired or never was. */
export const SESSION_ENDED_MESSAGE = "Session ended: sign in again";
/** Message of the 401 for a wrong email or password (the same for both). */
export const SIGN_IN_FAILED_MESSAGE = "Wrong email or password";

/** Operator authentication of a process. */
export interface OperatorAuth {
  /** The break-glass check (ADMIN_TOKEN), as before operators. */
  guard: AdminGuard;
  sessions: SessionSettings;
  /**
   * Authenticates an admin request.
   * @throws AppError 401 `unauthorized` (wrong token, ended session), 429 `rate_limited` (details
   *   `retry_after_seconds`), 403 `forbidden` (no credential and no ADMIN_TOKEN configured)
   */
  authenticate(db: Db, credentials: AdminCredentials): Promise<Principal>;
  /**
   * Signs an operator in with email and password, storing the session the router made.
   * @throws AppError 401 {@link SIGN_IN_FAILED_MESSAGE} (unknown email, wrong password, disabled
   *   operator alike), 429 `rate_limited` when the account or the address used up its attempts
   */
  signIn(
    db: Db,
    input: { email: string; password: string; sessionId: string; clientIp: string | null; requestId: string | null },
  ): Promise<{ operator: { id: string; email: string; role: OperatorRole }; expiresAt: string }>;
  /** Ends a session on the server. */
  signOut(db: Db, sessionId: string): Promise<boolean>;
}

/** Options of {@link createOperatorAuth}. */
export interface OperatorAuthOptions {
  guard: AdminGuard;
  sessions: SessionSettings;
  /** `ADMIN_FAILURES_PER_MINUTE` (default 10). */
  failuresPerWindow?: number;
  redis?: Redis;
  keyPrefix?: string;
  logger: Pick<Logger, "warn" | "info">;
}

function bearer(authorization: string | null | undefined): string | null {
  const match = typeof authorization === "string" ? /^bearer[ \t]+(\S.*)$/i.exec(authorization.trim()) : null;
  return match ? match[1]!.trim() : null;
}

/** Creates the operator authentication of a process (one per process, like the admin guard). */
export function createOperatorAuth(options: OperatorAuthOptions): OperatorAuth {
  const { guard, logger, sessions } = options;
  const settings = { points: options.failuresPerWindow ?? 10, duration: ADMIN_FAILURE_WINDOW_SECONDS };
  const limiter = (name: string): RateLimiterAbstract =>
    options.redis
      ? new RateLimiterRedis({ ...settings, storeClient: options.redis, keyPrefix: `${options.keyPrefix ?? "switchyard:"}${name}` })
      : new RateLimiterMemory({ ...settings, keyPrefix: name });
  const byAddress = limiter("opfail-ip");
  const byAccount = limiter("opfail-account");

  /** Takes one attempt of each key before comparing; gives them back when `check` holds. */
  async function throttled<T>(keys: [RateLimiterAbstract, string][], requestId: string | null, check: () => Promise<T | null>): Promise<T | null> {
    for (const [store, key] of keys) {
      try {
        await store.consume(key, 1);
      } catch (error) {
        if (!(error instanceof RateLimiterRes)) throw error;
        const retryAfter = Math.max(1, Math.ceil(error.msBeforeNext / 1000));
        logger.warn({ request_id: requestId, throttled: key, retry_after_seconds: retryAfter }, "operator credential refused: too many failures");
        throw new AppError("rate_limited", "Too many failed sign-ins", { retry_after_seconds: retryAfter });
      }
    }
    const found = await check();
    if (found) for (const [store, key] of keys) await store.reward(key, 1);
    return found;
  }

  return {
    guard,
    sessions,
    async authenticate(db, credentials) {
      const token = bearer(credentials.authorization);
      const address = credentials.clientIp ?? "unknown";
      if (token?.startsWith(OPERATOR_TOKEN_PREFIX)) {
        const parsed = parseOperatorToken(token);
        const operator = await throttled(
          [
            [byAddress, address],
            [byAccount, parsed?.id ?? "malformed"],
          ],
          credentials.requestId,
          async () => (parsed ? operatorOfToken(db, parsed) : null),
        );
        if (!operator) {
          logger.warn({ request_id: credentials.requestId, client_ip: address, token_id: parsed?.id ?? null }, "wrong operator token");
          throw new AppError("unauthorized", ADMIN_UNAUTHORIZED_MESSAGE);
        }
        return { operatorId: operator.id, actor: operator.email, role: operator.role, via: "token", csrfOk: true };
      }
      if (!token && credentials.session) {
        const operator = await operatorOfSession(db, credentials.session, sessions);
        if (!operator) throw new AppError("unauthorized", SESSION_ENDED_MESSAGE);
        return {
          operatorId: operator.id,
          actor: operator.email,
          role: operator.role,
          via: "session",
          csrfOk: csrfMatches(credentials.session, credentials.csrf),
        };
      }
      await guard.check({ authorization: credentials.authorization, clientIp: credentials.clientIp, requestId: credentials.requestId });
      logger.warn({ request_id: credentials.requestId, client_ip: address }, "break-glass ADMIN_TOKEN used");
      return { operatorId: null, actor: "break-glass", role: "owner", via: "break-glass", csrfOk: true };
    },
    async signIn(db, input) {
      const email = typeof input.email === "string" ? input.email.trim().toLowerCase() : "";
      const address = input.clientIp ?? "unknown";
      const found = await throttled(
        [
          [byAddress, address],
          [byAccount, `email:${email}`],
        ],
        input.requestId,
        async () => {
          const credentials = email ? await credentialsOf(db, email) : null;
          const right = await verifyPassword(String(input.password ?? ""), credentials?.passwordHash);
          return right && credentials?.operator.status === "active" ? credentials.operator : null;
        },
      );
      if (!found) {
        logger.warn({ request_id: input.requestId, client_ip: address }, "operator sign-in failed");
        throw new AppError("unauthorized", SIGN_IN_FAILED_MESSAGE);
      }
      const expiresAt = await startSession(db, found.id, input.sessionId, sessions);
      logger.info({ request_id: input.requestId, client_ip: address, operator_id: found.id }, "operator signed in");
      return { operator: { id: found.id, email: found.email, role: found.role }, expiresAt };
    },
    async signOut(db, sessionId) {
      const ended = await endSession(db, sessionId);
      if (ended) logger.info("operator signed out");
      return ended;
    },
  };
}
