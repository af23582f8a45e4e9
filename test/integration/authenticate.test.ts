/**
 * The order of the key checks (src/auth/authenticate.ts; docs/architecture.md §8.3, §9 step 4):
 * key → source-IP allow-list → request signature → rate limit, on a real database and the real
 * in-memory rate limiter.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Db } from "../../src/db/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { createKey } from "../../src/auth/keys.ts";
import { createRateLimiter } from "../../src/auth/rate-limit.ts";
import { signRequest } from "../../src/auth/signatures.ts";
import { sha256Hex } from "../../src/digest.ts";
import { authenticateRequest, type RequestFacts } from "../../src/auth/authenticate.ts";
import type { RateLimitQuota } from "../../src/auth/rate-limit.ts";

let testDb: TestDb;
let db: Db;

beforeAll(async () => {
  testDb = await openTestDb("switchyard-authenticate-");
  db = testDb.db;
  await migrate(db);
});

afterAll(async () => {
  await testDb?.close();
});

function facts(key: string, overrides: Partial<RequestFacts> = {}): RequestFacts {
  return {
    authorization: `Bearer ${key}`,
    clientIp: "203.0.113.7",
    signature: null,
    method: "GET",
    path: "/graphql",
    bodySha256: sha256Hex(""),
    countId: null,
    ...overrides,
  };
}

/** Records what authentication reported to its observer. */
function recorder() {
  const seen: { keyId?: string; quota?: RateLimitQuota; retryAfter?: number } = {};
  return {
    seen,
    observer: {
      authenticated: (caller: { keyId: string }) => (seen.keyId = caller.keyId),
      quota: (quota: RateLimitQuota, retryAfter?: number) => Object.assign(seen, { quota, retryAfter }),
    },
  };
}

describe("authenticateRequest", () => {
  it("refuses a source IP outside the allow-list before counting the rate limit, and still names the key", async () => {
    const created = await createKey(db, { name: "ip", allowIps: ["198.51.100.0/24"], rateLimit: 1 });
    const limiter = createRateLimiter();
    const { seen, observer } = recorder();
    await expect(authenticateRequest(db, limiter, facts(created.key), observer)).rejects.toMatchObject({ code: "forbidden", message: "Source IP not allowed" });
    expect(seen).toEqual({ keyId: created.id });
    // The refused request used none of the one request per second.
    const caller = await authenticateRequest(db, limiter, facts(created.key, { clientIp: "198.51.100.9" }));
    expect(caller.keyId).toBe(created.id);
  });

  it("checks a required signature before the rate limit", async () => {
    const created = await createKey(db, { name: "sig", requireSignature: true, rateLimit: 1 });
    const limiter = createRateLimiter();
    await expect(authenticateRequest(db, limiter, facts(created.key))).rejects.toMatchObject({ code: "unauthorized", message: "Missing request signature" });
    const signature = signRequest(created.webhook_secret, { method: "GET", path: "/graphql", timestamp: Date.now() / 1000 });
    const { seen, observer } = recorder();
    await authenticateRequest(db, limiter, facts(created.key, { signature, countId: "c1" }), observer);
    expect(seen.quota).toMatchObject({ limit: 1, remaining: 0 });
    // The same signature on another client request is a replay, refused before it is counted.
    await expect(authenticateRequest(db, limiter, facts(created.key, { signature, countId: "c2" }))).rejects.toMatchObject({
      message: "Request signature already used",
    });
  });

  it("reports the refusal's quota and Retry-After when the rate limit is exceeded", async () => {
    const created = await createKey(db, { name: "rate", rateLimit: 1 });
    const limiter = createRateLimiter();
    await authenticateRequest(db, limiter, facts(created.key, { countId: "a" }));
    const { seen, observer } = recorder();
    const refused = authenticateRequest(db, limiter, facts(created.key, { countId: "b" }), observer);
    await expect(refused).rejects.toMatchObject({ code: "rate_limited" });
    expect(seen.quota).toMatchObject({ limit: 1, remaining: 0, windowSeconds: 1 });
    expect(seen.retryAfter).toBeGreaterThanOrEqual(1);
    expect(seen.quota?.resetSeconds).toBe(seen.retryAfter);
  });

  it("refuses a missing key before anything else", async () => {
    const { seen, observer } = recorder();
    await expect(authenticateRequest(db, createRateLimiter(), facts("", { authorization: undefined }), observer)).rejects.toMatchObject({
      code: "unauthorized",
    });
    expect(seen).toEqual({});
  });
});
