/**
 * The order in which a request's key and its policy are checked (docs/api/generation.md §5,
 * docs/api/cloud.md §5 and §7; docs/architecture.md §8.3, §9 step 4): the key (401, 403
 * `key_disabled`), its source-IP allow-list (403), its request signature when sent or required
 * (401, each signature once), then its rate limit (429). The first check that fails decides the
 * answer, and a request refused earlier is never counted against the rate limit. Scopes are
 * checked per field afterwards (scopes.ts), not here.
 */
import { randomUUID } from "node:crypto";
import { AppError } from "../errors.ts";
import type { Db } from "../db/index.ts";
import type { Caller } from "./caller.ts";
import { authenticate } from "./keys.ts";
import { checkSourceIp } from "./allow-list.ts";
import { verifyRequestSignature } from "./signatures.ts";
import { RATE_LIMIT_WINDOW_SECONDS, type RateLimiter, type RateLimitQuota } from "./rate-limit.ts";

/** What one client request states about itself, as the router saw it (docs/architecture.md §2.12). */
export interface RequestFacts {
  /** The `Authorization` header value (`Bearer sy_...`); absent when not sent. */
  authorization: string | null | undefined;
  /** The client's address; null when unknown (then only a key without an allow-list passes). */
  clientIp: string | null;
  /** The `X-Service-Signature` header value; null when not sent. */
  signature: string | null;
  /** The HTTP method the signature covers. */
  method: string;
  /** The request target the signature covers: path and query string as sent. */
  path: string;
  /** Hex SHA-256 of the raw body the signature covers. */
  bodySha256: string;
  /**
   * The id the router minted for the client request (never the client's `X-Request-Id`): one
   * client request reaching both subgraphs counts once and may show its signature twice. Null
   * when unknown: the request then counts on its own.
   */
  countId: string | null;
}

/** Who wants to know what authentication found, even when a later check refuses the request. */
export interface AuthenticationObserver {
  /** The key authenticated (called before its policy is checked). */
  authenticated?(caller: Caller): void;
  /**
   * The key's rate-limit quota after this request; on a 429, remaining 0 with
   * `retryAfterSeconds` (the `Retry-After` value). Not called for a key without a rate limit.
   */
  quota?(quota: RateLimitQuota, retryAfterSeconds?: number): void;
}

/**
 * Authenticates a request and applies its key's policy, in the order of the module docstring.
 * @param db the key store
 * @param rateLimiter the per-key rate limiter (shared per process, or backed by Redis)
 * @param facts the request's key header, client address, signature and what it covers, count id
 * @param observer told of the key and of its quota as soon as they are known
 * @param lookupKey finds the key of the `Authorization` value (default `authenticate` of keys.ts;
 *   subgraphs/shared/auth.ts shares one lookup among the subgraphs of one client request)
 * @returns the caller, when every check passes
 * @throws AppError `unauthorized` (401: missing or unknown key, missing, invalid, stale or reused
 *   signature), `key_disabled` (403), `forbidden` (403 `Source IP not allowed`), `rate_limited`
 *   (429 with `details.retry_after_seconds`)
 */
export async function authenticateRequest(
  db: Db,
  rateLimiter: RateLimiter,
  facts: RequestFacts,
  observer: AuthenticationObserver = {},
  lookupKey: (authorization: string | null | undefined) => Promise<Caller> = (authorization) => authenticate(db, authorization),
): Promise<Caller> {
  const caller = await lookupKey(facts.authorization);
  observer.authenticated?.(caller);
  checkSourceIp(caller, facts.clientIp);
  if (caller.requireSignature || facts.signature) {
    const verified = verifyRequestSignature(caller.signingSecret ?? "", facts.signature, {
      method: facts.method,
      path: facts.path,
      bodySha256: facts.bodySha256,
      nowSeconds: Math.floor(Date.now() / 1000),
    });
    await rateLimiter.claimSignature(caller.keyId, verified, facts.countId ?? randomUUID());
  }
  let quota: RateLimitQuota | null;
  try {
    quota = await rateLimiter.consume(caller, facts.countId);
  } catch (error) {
    const retryAfter =
      error instanceof AppError && error.code === "rate_limited" ? (error.details as { retry_after_seconds?: unknown }).retry_after_seconds : undefined;
    if (typeof retryAfter === "number" && caller.rateLimit) {
      observer.quota?.({ limit: caller.rateLimit, windowSeconds: RATE_LIMIT_WINDOW_SECONDS, remaining: 0, resetSeconds: retryAfter }, retryAfter);
    }
    throw error;
  }
  if (quota) observer.quota?.(quota);
  return caller;
}
