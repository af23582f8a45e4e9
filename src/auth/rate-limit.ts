/**
 * Key policy (docs/api/cloud.md §5; docs/architecture.md §8 key scopes and rate limit): scopes, the source-IP
 * allow-list, the per-key rate limit and optional request signatures.
 *
 * Every check throws an {@link AppError}, so GraphQL and both REST shims map the failure the same
 * way: 403 `forbidden` for a missing scope or a source IP outside the allow-list, 429
 * `rate_limited` (with `details.retry_after_seconds` for the `Retry-After` header) above the
 * rate limit, 401 `unauthorized` for a missing, wrong or stale request signature.
 *
 * ## Request signatures (`X-Service-Signature`)
 *
 * A key created with `--require-signature` must sign each request. The algorithm, for the README:
 *
 * ```
 * t        = the current time in unix seconds (an integer)
 * body_sha = hex SHA-256 of the raw request body bytes (of the empty string when there is no body)
 * payload  = t + "." + METHOD + "." + path + "." + body_sha
 *            METHOD upper case (GET, POST, ...); path exactly as sent on the request line,
 *            query string included: /openapi/v1/products?category=cdn
 * v1       = hex HMAC-SHA256(secret, payload)   (lower case hex)
 * header   X-Service-Signature: t=<t>,v1=<v1>
 * ```
 *
 * The server accepts the request when one `v1` value matches (several may be sent while a secret
 * rotates: `t=1700000000,v1=<new>,v1=<old>`) and `t` is within 300 seconds of the server's clock,
 * in either direction. Values are compared in constant time. Failures are 401 `unauthorized`:
 * `Missing request signature`, `Invalid request signature` (malformed header or no matching
 * `v1`), `Request signature timestamp outside the tolerance` (a matching `v1` but a stale or
 * future `t`). The secret is the key's `webhook_secret` (printed by `keys create --json`): the API
 * key itself is stored only as a hash, so the server could not verify an HMAC keyed with it.
 *
 * Example (shell):
 * ```
 * t=$(date +%s); body='{"product_id":"p1"}'
 * sha=$(printf '%s' "$body" | sha256sum | cut -d' ' -f1)
 * v1=$(printf '%s' "$t.POST./openapi/v1/orders.$sha" | openssl dgst -sha256 -hmac "$SECRET" -hex | sed 's/^.* //')
 * curl -H "X-Service-Signature: t=$t,v1=$v1" ...
 * ```
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import ipaddr from "ipaddr.js";
import type { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { AppError } from "../errors.ts";
import type { Caller } from "./caller.ts";

// ---------------------------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------------------------

/**
 * Requires a scope of the caller's key (docs/architecture.md §8 key scopes; docs/api/cloud.md §7: 403 for
 * insufficient key permissions).
 * @param caller the authenticated key
 * @param scope a scope such as `orders:write`
 * @returns nothing when the key holds the scope
 * @throws AppError `forbidden` (403) `API key lacks the <scope> scope`, details `{ scope }`
 */
export function requireScope(caller: Pick<Caller, "scopes">, scope: string): void {
  if (!caller.scopes.includes(scope)) {
    throw new AppError("forbidden", `API key lacks the ${scope} scope`, { scope });
  }
}

// ---------------------------------------------------------------------------------------------
// Source IP allow-list
// ---------------------------------------------------------------------------------------------

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Strips `[...]` brackets and an IPv6 zone (`%eth0`). */
function cleanAddress(text: string): string {
  let value = text.trim();
  if (value.startsWith("[") && value.includes("]")) value = value.slice(1, value.indexOf("]"));
  const zone = value.indexOf("%");
  if (zone >= 0) value = value.slice(0, zone);
  return value;
}

/** Parses an address, turning an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) into IPv4. */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const value = cleanAddress(text);
  if (!ipaddr.isValid(value)) return null;
  try {
    return ipaddr.process(value);
  } catch {
    return null;
  }
}

/** Parses an allow-list entry: a CIDR or a plain address (a /32 or /128); null when invalid. */
function parseRange(entry: string): Range | null {
  const text = entry.trim();
  const slash = text.indexOf("/");
  if (slash < 0) {
    const address = parseAddress(text);
    return address ? [address, address.kind() === "ipv4" ? 32 : 128] : null;
  }
  let range: Range;
  try {
    range = ipaddr.parseCIDR(`${cleanAddress(text.slice(0, slash))}${text.slice(slash)}`);
  } catch {
    return null;
  }
  const [address, prefix] = range;
  // An IPv4-mapped IPv6 range (::ffff:10.0.0.0/104) is the IPv4 range it maps (10.0.0.0/8).
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    return [(address as ipaddr.IPv6).toIPv4Address(), prefix - 96];
  }
  return range;
}

/**
 * True when an allow-list entry is a valid IP address or CIDR range (IPv4 or IPv6), the forms
 * {@link ipInAllowList} understands.
 * @see docs/architecture.md §2 `keys create --allow-ip`
 */
export function isValidAllowListEntry(entry: string): boolean {
  return typeof entry === "string" && entry.length <= 100 && parseRange(entry) !== null;
}

const rangeCache = new WeakMap<readonly string[], Range[]>();

function rangesOf(allowIps: readonly string[]): Range[] {
  let ranges = rangeCache.get(allowIps);
  if (!ranges) {
    ranges = allowIps.map(parseRange).filter((r): r is Range => r !== null);
    rangeCache.set(allowIps, ranges);
  }
  return ranges;
}

/**
 * True when an address falls in an allow-list (a CIDR, or a plain address as /32 or /128).
 * IPv4-mapped IPv6 addresses count as the IPv4 address they map. Invalid entries never match.
 * @param ip the source address (`203.0.113.7`, `::1`, `::ffff:203.0.113.7`, `[::1]`)
 * @param allowIps CIDRs such as `203.0.113.0/24`, `2001:db8::/32`, `198.51.100.7`
 */
export function ipInAllowList(ip: string, allowIps: readonly string[]): boolean {
  const address = parseAddress(ip);
  if (!address) return false;
  return rangesOf(allowIps).some(([base, prefix]) => base.kind() === address.kind() && address.match(base, prefix));
}

/**
 * Checks the request's source address against the key's allow-list (docs/api/cloud.md §5: keys
 * have an allowed source IP list; §7: 403 when the source IP is not allowed).
 * @param caller the authenticated key; `allowIps` null allows any address
 * @param ip the source address of the request; null when unknown (then only a key without a list passes)
 * @returns nothing when allowed
 * @throws AppError `forbidden` (403) `Source IP not allowed`
 */
export function checkSourceIp(caller: Pick<Caller, "allowIps">, ip: string | null): void {
  if (caller.allowIps === null || caller.allowIps === undefined) return;
  if (ip === null || !ipInAllowList(ip, caller.allowIps)) {
    throw new AppError("forbidden", "Source IP not allowed");
  }
}

// ---------------------------------------------------------------------------------------------
// Rate limit
// ---------------------------------------------------------------------------------------------

/** Length of the rate-limit window in seconds: `--rate-limit N` allows N requests per window. */
export const RATE_LIMIT_WINDOW_SECONDS = 1;

/**
 * A key's rate limit as one request left it: the policy (`limit` per `windowSeconds`) and the
 * service limit (`remaining`, `resetSeconds`) of draft-ietf-httpapi-ratelimit-headers, which the
 * router sends as `RateLimit-Policy` and `RateLimit` (router/request-report.ts).
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
    const store = (value: string) => client.set(memoKey, value, "PX", Math.max(1, ttlMs)).then(() => undefined, () => undefined);
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

// ---------------------------------------------------------------------------------------------
// Signatures (shared by request signatures here and webhook signatures in events/webhooks.ts)
// ---------------------------------------------------------------------------------------------

/** Request-signature tolerance in seconds, in both directions (issue 3 item 8). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/**
 * Hex SHA-256 of a raw body.
 * @param body the raw bytes or text (UTF-8); undefined or null hashes the empty body
 * @returns 64 lower-case hex digits
 */
export function sha256Hex(body: string | Uint8Array | null | undefined): string {
  return createHash("sha256").update(body ?? "").digest("hex");
}

/**
 * Hex HMAC-SHA256 of a payload.
 * @param secret the shared secret (UTF-8)
 * @param payload the signed text or bytes
 * @returns 64 lower-case hex digits
 */
export function hmacSha256Hex(secret: string, payload: string | Uint8Array): string {
  return createHmac("sha256", secret).update(payload).digest("hex");
}

/** A parsed `t=<seconds>,v1=<hex>[,v1=<hex>...]` header. */
export interface ParsedSignatureHeader {
  /** Unix seconds. */
  timestamp: number;
  /** Every `v1` value, lower case. */
  signatures: string[];
}

/**
 * Parses a signature header `t=<unix seconds>,v1=<hex>[,v1=<hex>...]` (docs/architecture.md §8; unknown
 * schemes such as `v0=` are ignored, as Stripe does).
 * @returns the timestamp and the `v1` values, or null when `t` or every well-formed `v1` is missing
 */
export function parseSignatureHeader(header: string): ParsedSignatureHeader | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === "t") {
      if (!/^\d{1,12}$/.test(value)) return null;
      timestamp = Number(value);
    } else if (name === "v1" && /^[0-9a-fA-F]{64}$/.test(value)) {
      signatures.push(value.toLowerCase());
    }
  }
  return timestamp === null || signatures.length === 0 ? null : { timestamp, signatures };
}

/**
 * Checks a signature header against the expected HMAC, in constant time per candidate.
 * @param header the header value (null or empty: missing)
 * @param expectedFor computes the expected hex HMAC for the header's timestamp
 * @param toleranceSeconds allowed clock difference, both directions
 * @param nowSeconds the current unix time in seconds
 * @returns the signature that matched: its timestamp and hex HMAC (the same for every header that
 *   signs the same content at the same second, however its `v1` values are arranged)
 * @throws AppError `unauthorized` (401): `Missing request signature`, `Invalid request signature`,
 *   `Request signature timestamp outside the tolerance`
 */
export function verifySignatureHeader(
  header: string | null | undefined,
  expectedFor: (timestamp: number) => string,
  toleranceSeconds: number,
  nowSeconds: number,
): VerifiedSignature {
  if (!header || !header.trim()) throw new AppError("unauthorized", "Missing request signature");
  const parsed = parseSignatureHeader(header);
  if (!parsed) throw new AppError("unauthorized", "Invalid request signature");
  const expected = Buffer.from(expectedFor(parsed.timestamp), "hex");
  let matched = false;
  for (const candidate of parsed.signatures) {
    // Every candidate is compared (no early exit) so timing does not tell which one matched.
    if (timingSafeEqual(Buffer.from(candidate, "hex"), expected)) matched = true;
  }
  if (!matched) throw new AppError("unauthorized", "Invalid request signature");
  if (Math.abs(nowSeconds - parsed.timestamp) > toleranceSeconds) {
    throw new AppError("unauthorized", "Request signature timestamp outside the tolerance");
  }
  return { timestamp: parsed.timestamp, hmac: expected.toString("hex") };
}

/** A signature that verified: its `t` and the HMAC it matched. */
export interface VerifiedSignature {
  /** Unix seconds. */
  timestamp: number;
  /** The matching hex HMAC. */
  hmac: string;
}

/** What a request signature covers (see the module docstring). */
export interface SignedRequest {
  /** HTTP method; upper-cased before signing. */
  method: string;
  /** The request target as sent: path and query string, e.g. `/openapi/v1/orders?x=1`. */
  path: string;
  /** The raw body (empty or absent: the empty body). */
  body?: string | Uint8Array | null;
  /** Unix seconds. */
  timestamp: number;
}

function requestPayload(timestamp: number, method: string, path: string, bodySha256: string): string {
  return `${timestamp}.${method.toUpperCase()}.${path}.${bodySha256.toLowerCase()}`;
}

/**
 * Signs a request the way clients must (issue 3 item 8; algorithm in the module docstring).
 * @param secret the key's `webhook_secret`
 * @param request method, path with query, raw body, unix-seconds timestamp
 * @returns the `X-Service-Signature` header value `t=<t>,v1=<hex>`
 */
export function signRequest(secret: string, request: SignedRequest): string {
  const t = Math.floor(request.timestamp);
  return `t=${t},v1=${hmacSha256Hex(secret, requestPayload(t, request.method, request.path, sha256Hex(request.body)))}`;
}

/**
 * Verifies a request's `X-Service-Signature` (docs/api/cloud.md §5; algorithm in the module
 * docstring): one `v1` must match, `t` within {@link SIGNATURE_TOLERANCE_SECONDS} of now.
 * @param secret the key's `webhook_secret`
 * @param header the `X-Service-Signature` value, null when absent
 * @param request method, path with query, hex SHA-256 of the raw body ({@link sha256Hex}), now in unix seconds
 * @returns the signature that matched (for the replay check, {@link RateLimiter.claimSignature})
 * @throws AppError `unauthorized` (401): `Missing request signature`, `Invalid request signature`,
 *   `Request signature timestamp outside the tolerance`
 */
export function verifyRequestSignature(
  secret: string,
  header: string | null,
  request: { method: string; path: string; bodySha256: string; nowSeconds: number },
): VerifiedSignature {
  return verifySignatureHeader(
    header,
    (t) => hmacSha256Hex(secret, requestPayload(t, request.method, request.path, request.bodySha256)),
    SIGNATURE_TOLERANCE_SECONDS,
    request.nowSeconds,
  );
}
