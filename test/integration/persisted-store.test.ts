/**
 * Where APQ documents are kept (router/plugins/usePersistedQueries.store.ts): Redis with a TTL
 * under the deployment's key prefix, or a bounded LRU in memory.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { APQ_MAX_DOCUMENTS, APQ_TTL_SECONDS, createPersistedQueryStore } from "../../router/plugins/usePersistedQueries.store.ts";

const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
afterAll(() => redis.quit());

describe("the persisted query store", () => {
  it("keeps a document in Redis under <prefix>apq:<hash> for 24 hours", async () => {
    const prefix = `switchyard-apq-store-${randomUUID().slice(0, 8)}:`;
    const store = createPersistedQueryStore({ redis, keyPrefix: prefix });
    await store.set("a".repeat(64), "{ models { id } }");
    expect(await store.get("a".repeat(64))).toBe("{ models { id } }");
    expect(await redis.get(`${prefix}apq:${"a".repeat(64)}`)).toBe("{ models { id } }");
    const ttl = await redis.ttl(`${prefix}apq:${"a".repeat(64)}`);
    expect(ttl).toBeGreaterThan(APQ_TTL_SECONDS - 60);
    expect(ttl).toBeLessThanOrEqual(APQ_TTL_SECONDS);
    expect(await store.get("b".repeat(64))).toBeUndefined();
    await redis.del(`${prefix}apq:${"a".repeat(64)}`);
  });

  it("in memory, holds at most APQ_MAX_DOCUMENTS documents, forgetting the least recently used", async () => {
    const store = createPersistedQueryStore();
    const hash = (i: number) => i.toString(16).padStart(64, "0");
    for (let i = 0; i < APQ_MAX_DOCUMENTS; i++) await store.set(hash(i), `query Q${i} { __typename }`);
    expect(await store.get(hash(0))).toBe("query Q0 { __typename }"); // now the most recently used
    await store.set(hash(APQ_MAX_DOCUMENTS), "query Last { __typename }");
    expect(await store.get(hash(1))).toBeUndefined();
    expect(await store.get(hash(0))).toBe("query Q0 { __typename }");
    expect(await store.get(hash(APQ_MAX_DOCUMENTS))).toBe("query Last { __typename }");
  });
});
