/**
 * The nonces of signed router→subgraph requests already served (README "Security model": each
 * signed subgraph request is accepted once, through any router). A subgraph claims a request's
 * nonce after its signature verified and before anything runs; a nonce already claimed is a
 * replay. The claim lasts as long as the request could still verify: until its `issuedAt` plus
 * the tolerance of internal-context.ts (and a margin for clocks that differ between processes).
 *
 * With `REDIS_URL`, one Redis key per nonce (`SET <prefix>hop:<nonce> 1 NX PX <ttl>`), so every
 * subgraph process behind a balancer shares the claims; otherwise a store in this process's memory,
 * bounded: beyond `maxEntries` live nonces a claim fails (the request is refused with 503) rather
 * than forgetting a nonce that could still be replayed.
 */
import type { Redis } from "ioredis";

/** Seconds a nonce is remembered beyond the end of its request's window (clock differences between processes). */
const CLOCK_MARGIN_SECONDS = 30;

/** Default bound of the in-process store: about 3,000 subgraph requests per second for five minutes. */
const DEFAULT_MAX_ENTRIES = 1_000_000;

/** The in-process store holds {@link NonceStoreOptions.maxEntries} live nonces: the request cannot be remembered. */
export class NonceStoreFullError extends Error {
  constructor() {
    super("Too many subgraph requests within the signature window for the in-process nonce store (set REDIS_URL)");
    this.name = "NonceStoreFullError";
  }
}

/** Claims nonces once. */
export interface NonceStore {
  /**
   * Claims the nonce of one verified subgraph request.
   * @param nonce the request's nonce (already checked for shape by the verifier)
   * @param issuedAt the request's `issuedAt`, Unix seconds (already checked to be within the tolerance)
   * @param toleranceSeconds how long after `issuedAt` the request verifies
   * @returns true the first time, false when the nonce was already claimed (a replay)
   * @throws NonceStoreFullError (in-process store at its bound); the Redis client's error when Redis fails
   */
  claim(nonce: string, issuedAt: number, toleranceSeconds: number): Promise<boolean>;
}

/** Options of {@link createNonceStore}. */
export interface NonceStoreOptions {
  /** An ioredis connection (`REDIS_URL`): the claims are shared by every process. Unset: this process's memory. */
  redis?: Redis;
  /** Prefix of the Redis keys (default `switchyard:`): `<prefix>hop:<nonce>`. */
  keyPrefix?: string;
  /** Live nonces the in-process store holds at most (default 1,000,000). */
  maxEntries?: number;
}

/**
 * Creates the store of one process (shared by the subgraphs it runs).
 * @returns the store: in Redis when `redis` is given, else in memory
 */
export function createNonceStore(options: NonceStoreOptions = {}): NonceStore {
  const { redis } = options;
  if (redis) {
    const prefix = `${options.keyPrefix ?? "switchyard:"}hop:`;
    return {
      async claim(nonce, issuedAt, toleranceSeconds) {
        const ttlMs = Math.max(1000, (issuedAt + toleranceSeconds + CLOCK_MARGIN_SECONDS) * 1000 - Date.now());
        return (await redis.set(`${prefix}${nonce}`, "1", "PX", ttlMs, "NX")) === "OK";
      },
    };
  }
  return memoryStore(options.maxEntries ?? DEFAULT_MAX_ENTRIES);
}

/**
 * The in-process store: nonces grouped by their `issuedAt` second, so a whole second's nonces
 * are dropped at once when it leaves the window (no timer, no scan of single entries).
 */
function memoryStore(maxEntries: number): NonceStore {
  const bySecond = new Map<number, Set<string>>();
  let size = 0;
  let prunedAt = 0;
  const prune = (nowSeconds: number, toleranceSeconds: number) => {
    if (nowSeconds === prunedAt) return;
    prunedAt = nowSeconds;
    for (const [second, nonces] of bySecond) {
      if (second + toleranceSeconds + CLOCK_MARGIN_SECONDS >= nowSeconds) continue;
      size -= nonces.size;
      bySecond.delete(second);
    }
  };
  return {
    async claim(nonce, issuedAt, toleranceSeconds) {
      prune(Math.floor(Date.now() / 1000), toleranceSeconds);
      let nonces = bySecond.get(issuedAt);
      if (nonces?.has(nonce)) return false;
      if (size >= maxEntries) throw new NonceStoreFullError();
      if (!nonces) {
        nonces = new Set();
        bySecond.set(issuedAt, nonces);
      }
      nonces.add(nonce);
      size++;
      return true;
    },
  };
}
