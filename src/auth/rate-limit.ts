/**
 * The per-key rate limit (docs/api/cloud.md §7: 429 `rate_limited`; docs/architecture.md §2.4
 * counters in Redis, §8.3 `--rate-limit`), and the store of request signatures already seen, which
 * lives beside the counters because it needs the same store (memory or Redis) and the same count id.
 */
import type { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { AppError } from "../errors.ts";
import type { Caller } from "./caller.ts";
import { SIGNATURE_TOLERANCE_SECONDS, type VerifiedSignature } from "./signatures.ts";

/** Length of the rate-limit window in seconds: `--rate-limit N` allows N requests per window. */
export const RATE_LIMIT_WINDOW_SECONDS = 1;

/**
 * A key's rate limit as one request left it: the policy (`limit` per `windowSeconds`) and the
 * service limit (`remaining`, `resetSeconds`) of draft-ietf-httpapi-ratelimit-headers, which the
 * router sends as `RateLimit-Policy` and `RateLimit` (router/request-report.ts, filled by router/plugins/useRequestReport.ts).
 */
export interface RateLimitQuota {
  /** Requests allowed per window (the key's `--rate-limit`). */
  limit: number;
  /** The window in seconds ({@link RATE_LIMIT_WINDOW_SECONDS}). */
  windowSeconds: number;
  /** Requests left in the current window after this one (0 when this one was refused). */
  remaining: number;
  /** Whole seconds until the window resets (≥ 1; on a 429 the same value as `Retry-After`). */
  resetSeconds: number;
}

/** A per-key rate limiter (docs/architecture.md §8: `--rate-limit N` allows N requests per second). */
export interface RateLimiter {
  /**
   * Counts one request of the caller's key. The same `requestId` of the same key counts once
   * within a few seconds (one client request fanned out to two subgraphs), and gets the first
   * call's outcome.
   * @param caller the key; `rateLimit` null (or not positive) means unlimited
   * @param requestId the client request's id, when known
   * @returns the key's quota after this request; null for an unlimited key (or, rarely, when
   *   another instance counted the request and left no quota behind)
   * @throws AppError `rate_limited` (429) with details `{ retry_after_seconds }` (an integer ≥ 1)
   */
  consume(caller: Pick<Caller, "keyId" | "rateLimit">, requestId?: string | null): Promise<RateLimitQuota | null>;
  /**
   * Refuses a replayed request signature: the first request (count id) to present a signature
   * claims it for twice the tolerance (the whole time it could verify); the same request reaching
   * another subgraph may present it again, any other request may not. In Redis when configured,
   * so a replay through another router is refused too.
   * @param keyId the signing key
   * @param signature what {@link verifyRequestSignature} returned
   * @param countId the router-minted id of the client request (its count id)
   * @throws AppError `unauthorized` (401) `Request signature already used`
   */
  claimSignature(keyId: string, signature: VerifiedSignature, countId: string): Promise<void>;
}

/** Options of {@link createRateLimiter}. */
export interface RateLimiterOptions {
  /** `REDIS_URL`: counters shared by every instance. Needs `redis` (or a `limiterFactory`). */
  redisUrl?: string;
  /**
   * An ioredis connection (`REDIS_URL`; the pub/sub's command connection): the counters live in
   * Redis (`RateLimiterRedis`) and the request-id dedupe too (`SET key NX PX`), so every instance
   * shares both. Unset: both in this process's memory.
   */
  redis?: Redis;
  /** Prefix of the Redis keys (default `switchyard:`): counters `<prefix>rl<N>:<keyId>`, request ids `<prefix>rlreq:<keyId>:<requestId>`. */
  keyPrefix?: string;
  /**
   * Makes the rate-limiter-flexible limiter of one limit (points per 1-second window): the plug
   * for another store. Default: `RateLimiterRedis` on `redis` when given, else `RateLimiterMemory`.
   */
  limiterFactory?: (pointsPerSecond: number) => RateLimiterAbstract;
  /** How long a request id is remembered, in milliseconds (default 10000). */
  requestMemoTtlMs?: number;
  /** How many request ids are remembered at most in memory (default 10000; the oldest are dropped). */
  requestMemoMax?: number;
  /**
   * With `redis`: how long a call waits for another instance that is counting the same request id
   * before counting it itself (default 2000 ms; only reached when that instance died mid-count).
   */
  requestPendingWaitMs?: number;
}

/**
 * Creates the per-key rate limiter (docs/architecture.md §2 pub/sub and rate-limit counters, §8 rate limit;
 * docs/api/cloud.md §7: 429 `rate_limited`). One fixed 1-second window per key, counted by
 * rate-limiter-flexible: in memory by default, in Redis with `redis` so the limit holds across
 * every instance (N per second in total, not per instance).
 *
 * The request-id dedupe (one client request fanned out to two subgraphs counts once and gets one
 * outcome) is a memo in memory by default. With `redis` it is a Redis key per key and request id:
 * the first caller takes it with `SET key pending NX PX ttl`, counts, and stores the outcome
 * (`ok` or `429:<retry after seconds>`); a caller on any instance that finds the key waits for the
 * outcome and returns it without counting. Calls in flight in one process are coalesced; nothing
 * decided is kept only in memory.
 * @param options `redis` and `keyPrefix` (the Redis store), `limiterFactory` (another store), request-id memo size and TTL
 * @returns the limiter
 * @throws Error when `redisUrl` is set without `redis` or a `limiterFactory`: per-instance
 *   counters would silently multiply the limit by the number of instances, so this fails at start instead
 */
export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  if (options.redisUrl && !options.redis && !options.limiterFactory) {
    throw new Error("REDIS_URL is set but no Redis rate-limit store is wired in: pass redis (an ioredis connection) or limiterFactory to createRateLimiter");
  }
  const redis = options.redis;
  const prefix = options.keyPrefix ?? "switchyard:";
  const factory =
    options.limiterFactory ??
    (redis
      ? (points: number) => new RateLimiterRedis({ storeClient: redis, points, duration: RATE_LIMIT_WINDOW_SECONDS, keyPrefix: `${prefix}rl${points}` })
      : (points: number) => new RateLimiterMemory({ points, duration: RATE_LIMIT_WINDOW_SECONDS, keyPrefix: `rl${points}` }));
  const ttlMs = options.requestMemoTtlMs ?? 10_000;
  const maxMemo = options.requestMemoMax ?? 10_000;
  const pendingWaitMs = options.requestPendingWaitMs ?? 2_000;
  const limiters = new Map<number, RateLimiterAbstract>();
  const memo = new Map<string, { expiresAt: number; outcome: Promise<RateLimitQuota | null> }>();

  function limiterFor(points: number): RateLimiterAbstract {
    let limiter = limiters.get(points);
    if (!limiter) {
      limiter = factory(points);
      limiters.set(points, limiter);
    }
    return limiter;
  }

  const limitedError = (points: number, retryAfter: number) =>
    new AppError("rate_limited", `Rate limit of ${points} requests per second exceeded`, { retry_after_seconds: retryAfter });

  const resetSecondsOf = (res: RateLimiterRes) => Math.max(1, Math.ceil(res.msBeforeNext / 1000));

  async function count(keyId: string, points: number): Promise<RateLimitQuota> {
    let res: RateLimiterRes;
    try {
      res = await limiterFor(points).consume(keyId, 1);
    } catch (error) {
      if (error instanceof RateLimiterRes) throw limitedError(points, resetSecondsOf(error));
      throw error;
    }
    return { limit: points, windowSeconds: RATE_LIMIT_WINDOW_SECONDS, remaining: Math.max(0, res.remainingPoints), resetSeconds: resetSecondsOf(res) };
  }

  function remember(key: string, outcome: Promise<RateLimitQuota | null>, now: number): void {
    // Drop expired entries from the front (insertion order is expiry order), then the oldest over the cap.
    for (const [k, v] of memo) {
      if (v.expiresAt > now && memo.size < maxMemo) break;
      memo.delete(k);
    }
    memo.delete(key); // re-inserted at the end, so insertion order stays expiry order
    memo.set(key, { expiresAt: now + ttlMs, outcome });
  }

  /**
   * Turns a stored outcome (`ok:<remaining>:<reset seconds>`, `429:<retry after>`) into the call's
   * result; undefined while the first caller is still counting.
   */
  function settle(stored: string | null, points: number): RateLimitQuota | null | undefined {
    if (stored?.startsWith("ok")) {
      const [remaining, resetSeconds] = stored.split(":").slice(1).map(Number);
      // A bare `ok` (written by an older instance) carries no quota.
      if (!Number.isInteger(remaining) || !Number.isInteger(resetSeconds)) return null;
      return { limit: points, windowSeconds: RATE_LIMIT_WINDOW_SECONDS, remaining: remaining!, resetSeconds: resetSeconds! };
    }
    if (stored?.startsWith("429:")) throw limitedError(points, Math.max(1, Number(stored.slice(4)) || 1));
    return undefined;
  }

  /** The Redis dedupe: the first caller of any instance counts; the others take its stored outcome. */
  async function countOnceInRedis(client: Redis, keyId: string, requestId: string, points: number): Promise<RateLimitQuota | null> {
    const memoKey = `${prefix}rlreq:${keyId}:${requestId}`;
    const deadline = Date.now() + pendingWaitMs;
    for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
      if ((await client.set(memoKey, "pending", "PX", Math.max(1, ttlMs), "NX")) === "OK") break; // ours to count
      const settled = settle(await client.get(memoKey), points);
      if (settled !== undefined) return settled;
      if (Date.now() >= deadline) break; // the counting instance died: count here, the limit must hold
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    // Storing the outcome is best effort: this call's answer stands even if Redis fails now (the
    // other subgraph's call then waits out the pending key and counts itself).
    const store = (value: string) =>
      client.set(memoKey, value, "PX", Math.max(1, ttlMs)).then(
        () => undefined,
        () => undefined,
      );
    let quota: RateLimitQuota;
    try {
      quota = await count(keyId, points);
    } catch (error) {
      if (error instanceof AppError) await store(`429:${(error.details as { retry_after_seconds: number }).retry_after_seconds}`);
      else await client.del(memoKey).catch(() => undefined); // not counted (Redis trouble): let a retry count
      throw error;
    }
    await store(`ok:${quota.remaining}:${quota.resetSeconds}`);
    return quota;
  }

  const inflight = new Map<string, Promise<RateLimitQuota | null>>();
  // Signatures seen: key → count id of the request that presented it first, until it expires.
  const signaturesSeen = new Map<string, { countId: string; expiresAt: number }>();
  const signatureTtlMs = 2 * SIGNATURE_TOLERANCE_SECONDS * 1000;
  const replayed = () => new AppError("unauthorized", "Request signature already used");

  return {
    async claimSignature(keyId, signature, countId) {
      const id = `${keyId}:${signature.timestamp}:${signature.hmac}`;
      if (redis) {
        const key = `${prefix}sig:${id}`;
        if ((await redis.set(key, countId, "PX", signatureTtlMs, "NX")) === "OK") return;
        if ((await redis.get(key)) !== countId) throw replayed();
        return;
      }
      const now = Date.now();
      for (const [k, v] of signaturesSeen) {
        if (v.expiresAt > now && signaturesSeen.size < maxMemo * 10) break;
        signaturesSeen.delete(k);
      }
      const seen = signaturesSeen.get(id);
      if (seen && seen.expiresAt > now) {
        if (seen.countId !== countId) throw replayed();
        return;
      }
      signaturesSeen.set(id, { countId, expiresAt: now + signatureTtlMs });
    },
    consume(caller, requestId) {
      const points = caller.rateLimit;
      if (points === null || points === undefined || !(points > 0)) return Promise.resolve(null);
      if (!requestId) return count(caller.keyId, points);
      const key = `${caller.keyId}\u0000${requestId}`;
      if (redis) {
        // Coalesce this process's concurrent calls; the outcome itself is decided and kept in Redis.
        let outcome = inflight.get(key);
        if (!outcome) {
          outcome = countOnceInRedis(redis, caller.keyId, requestId, points).finally(() => inflight.delete(key));
          outcome.catch(() => undefined);
          inflight.set(key, outcome);
        }
        return outcome;
      }
      const now = Date.now();
      const seen = memo.get(key);
      if (seen && seen.expiresAt > now) return seen.outcome;
      const outcome = count(caller.keyId, points);
      outcome.catch(() => undefined); // the memo's copy must not be an unhandled rejection
      remember(key, outcome, now);
      return outcome;
    },
  };
}
