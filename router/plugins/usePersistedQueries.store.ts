/**
 * Where automatic persisted queries (APQ, router/plugins/usePersistedQueries.ts) keep the
 * documents clients registered, by the lowercase hex SHA-256 of their text, so a client's next
 * request can send the hash alone (README "Persisted queries and trusted documents", ADR 0020).
 *
 * With `REDIS_URL`, one Redis key per document (`SET <prefix>apq:<hash> <document> EX 86400`),
 * shared by every router behind a balancer: a document registered through one is found through
 * any. Otherwise a bounded LRU in this process's memory (lru-cache): at most
 * {@link APQ_MAX_DOCUMENTS} documents and {@link APQ_MAX_BYTES} of text, each for
 * {@link APQ_TTL_SECONDS}. A forgotten document costs one round trip: the client's hash-only
 * request gets `PersistedQueryNotFound` and it sends the document again.
 */
import type { Redis } from "ioredis";
import { LRUCache } from "lru-cache";

/** How long a registered document is kept (24 hours), in Redis and in memory alike. */
export const APQ_TTL_SECONDS = 86_400;

/** Most documents the in-memory store holds (least recently used go first). */
export const APQ_MAX_DOCUMENTS = 10_000;

/** Most document text the in-memory store holds, in UTF-16 code units (about 16 MiB of ASCII). */
export const APQ_MAX_BYTES = 16 * 1024 * 1024;

/** The registered documents. */
export interface PersistedQueryStore {
  /**
   * The document registered under a hash.
   * @param hash lowercase hex SHA-256 of the document (already checked for shape)
   * @returns its text, or undefined when none is (or no longer is) registered
   * @throws the Redis client's error when Redis fails
   */
  get(hash: string): Promise<string | undefined>;
  /**
   * Registers a document under its hash (the caller has checked that the hash is the document's).
   * @throws the Redis client's error when Redis fails
   */
  set(hash: string, document: string): Promise<void>;
}

/**
 * Creates the store of one router process.
 * @param options `redis` (REDIS_URL's connection): shared by every router; unset: this process's
 *   memory. `keyPrefix`: prefix of the Redis keys (REDIS_KEY_PREFIX, default `switchyard:`).
 */
export function createPersistedQueryStore(options: { redis?: Redis; keyPrefix?: string } = {}): PersistedQueryStore {
  const { redis } = options;
  if (redis) {
    const prefix = `${options.keyPrefix ?? "switchyard:"}apq:`;
    return {
      get: async (hash) => (await redis.get(prefix + hash)) ?? undefined,
      set: async (hash, document) => void (await redis.set(prefix + hash, document, "EX", APQ_TTL_SECONDS)),
    };
  }
  const cache = new LRUCache<string, string>({
    max: APQ_MAX_DOCUMENTS,
    maxSize: APQ_MAX_BYTES,
    sizeCalculation: (document) => Math.max(1, document.length),
    ttl: APQ_TTL_SECONDS * 1000,
  });
  return {
    get: async (hash) => cache.get(hash),
    set: async (hash, document) => void cache.set(hash, document),
  };
}
