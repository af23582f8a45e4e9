/**
 * Key policy (docs/api/cloud.md §5 and §7; docs/architecture.md §8): scopes, source-IP allow-lists, the per-key
 * rate limit and request signatures.
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { AppError } from "../../src/errors.ts";
import { checkSourceIp } from "../../src/auth/allow-list.ts";
import { createRateLimiter } from "../../src/auth/rate-limit.ts";
import { requireScope } from "../../src/auth/scopes.ts";
import { signRequest, verifyRequestSignature } from "../../src/auth/signatures.ts";
import { sha256Hex } from "../../src/digest.ts";
import { appErrorThrownBy as appErrorOf } from "../support/errors.ts";

async function rejectionOf(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error("expected a rejection");
}

describe("scopes", () => {
  const caller = { scopes: ["orders:read", "catalog:read"] };

  it("lets a key use what its scopes allow", () => {
    expect(() => requireScope(caller, "orders:read")).not.toThrow();
  });

  it("refuses a key without the scope with 403 forbidden naming the scope", () => {
    const error = appErrorOf(() => requireScope(caller, "orders:write"));
    expect(error.code).toBe("forbidden");
    expect(error.status).toBe(403);
    expect(error.message).toBe("API key lacks the orders:write scope");
    expect(error.details).toEqual({ scope: "orders:write" });
  });
});

describe("source IP allow-list", () => {
  const allowed = (allowIps: string[] | null, ip: string | null) => {
    try {
      checkSourceIp({ allowIps }, ip);
      return true;
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe("forbidden");
      expect((error as AppError).message).toBe("Source IP not allowed");
      return false;
    }
  };

  it("allows any address when the key has no list", () => {
    expect(allowed(null, "198.51.100.7")).toBe(true);
    expect(allowed(null, null)).toBe(true);
  });

  it("matches IPv4 CIDRs and treats a plain IPv4 address as /32", () => {
    const list = ["203.0.113.0/24", "198.51.100.7"];
    expect(allowed(list, "203.0.113.1")).toBe(true);
    expect(allowed(list, "203.0.113.255")).toBe(true);
    expect(allowed(list, "203.0.114.1")).toBe(false);
    expect(allowed(list, "198.51.100.7")).toBe(true);
    expect(allowed(list, "198.51.100.8")).toBe(false);
  });

  it("matches IPv6 CIDRs and treats a plain IPv6 address as /128", () => {
    const list = ["2001:db8::/32", "::1"];
    expect(allowed(list, "2001:db8:1234::5")).toBe(true);
    expect(allowed(list, "2001:db9::5")).toBe(false);
    expect(allowed(list, "::1")).toBe(true);
    expect(allowed(list, "[::1]")).toBe(true);
    expect(allowed(list, "::2")).toBe(false);
  });

  it("treats an IPv4-mapped IPv6 source as its IPv4 address", () => {
    expect(allowed(["127.0.0.0/8"], "::ffff:127.0.0.1")).toBe(true);
    expect(allowed(["10.0.0.5"], "::ffff:10.0.0.5")).toBe(true);
    expect(allowed(["10.0.0.5"], "::ffff:10.0.0.6")).toBe(false);
    expect(allowed(["::ffff:10.0.0.0/104"], "10.1.2.3")).toBe(true);
  });

  it("never lets IPv4 match an IPv6 range or the reverse", () => {
    expect(allowed(["::/0"], "192.0.2.1")).toBe(false);
    expect(allowed(["0.0.0.0/0"], "2001:db8::1")).toBe(false);
    expect(allowed(["0.0.0.0/0"], "192.0.2.1")).toBe(true);
  });

  it("refuses an unknown or unparsable source and ignores invalid list entries", () => {
    expect(allowed(["0.0.0.0/0"], null)).toBe(false);
    expect(allowed(["0.0.0.0/0"], "not-an-ip")).toBe(false);
    expect(allowed(["garbage", "10.0.0.0/33", "192.0.2.0/24"], "192.0.2.9")).toBe(true);
    expect(allowed([], "192.0.2.9")).toBe(false);
  });
});

describe("rate limit", () => {
  it("allows N requests per second per key, then 429 rate_limited with retry_after_seconds", async () => {
    const limiter = createRateLimiter();
    const caller = { keyId: "key_a", rateLimit: 3 };
    for (let i = 0; i < 3; i++) await limiter.consume(caller);
    const error = await rejectionOf(limiter.consume(caller));
    expect(error.code).toBe("rate_limited");
    expect(error.status).toBe(429);
    const retryAfter = error.details?.retry_after_seconds as number;
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(1);
  });

  it("counts each key separately", async () => {
    const limiter = createRateLimiter();
    await limiter.consume({ keyId: "key_a", rateLimit: 1 });
    await expect(limiter.consume({ keyId: "key_b", rateLimit: 1 })).resolves.toMatchObject({ limit: 1, remaining: 0 });
    await expect(limiter.consume({ keyId: "key_a", rateLimit: 1 })).rejects.toMatchObject({ code: "rate_limited" });
  });

  it("does not limit a key without a rate limit, and reports no quota for it", async () => {
    const limiter = createRateLimiter();
    for (let i = 0; i < 50; i++) await expect(limiter.consume({ keyId: "key_free", rateLimit: null })).resolves.toBeNull();
  });

  it("reports the quota each request leaves: limit, window, remaining and whole seconds to the reset", async () => {
    const limiter = createRateLimiter();
    const caller = { keyId: "key_quota", rateLimit: 3 };
    const quotas = [await limiter.consume(caller, "req_1"), await limiter.consume(caller, "req_1"), await limiter.consume(caller, "req_2")];
    // The second subgraph of req_1 gets req_1's quota: one request, one count.
    expect(quotas.map((q) => q?.remaining)).toEqual([2, 2, 1]);
    for (const quota of quotas) expect(quota).toMatchObject({ limit: 3, windowSeconds: 1, resetSeconds: 1 });
  });

  it("counts one client request fanned out to two subgraphs once", async () => {
    const limiter = createRateLimiter();
    const caller = { keyId: "key_fan", rateLimit: 2 };
    await limiter.consume(caller, "req_1");
    await limiter.consume(caller, "req_1"); // the second subgraph of the same request
    await limiter.consume(caller, "req_2");
    await limiter.consume(caller, "req_2");
    const error = await rejectionOf(limiter.consume(caller, "req_3"));
    expect(error.code).toBe("rate_limited");
    // The refused request stays refused for its other subgraph, without counting again.
    await expect(limiter.consume(caller, "req_3")).rejects.toMatchObject({ code: "rate_limited" });
  });

  it("forgets request ids after their TTL", async () => {
    const limiter = createRateLimiter({ requestMemoTtlMs: 0 });
    const caller = { keyId: "key_ttl", rateLimit: 1 };
    await limiter.consume(caller, "req_1");
    await expect(limiter.consume(caller, "req_1")).rejects.toMatchObject({ code: "rate_limited" });
  });

  it("takes another store through limiterFactory and refuses REDIS_URL without one", async () => {
    const made: number[] = [];
    const limiter = createRateLimiter({
      redisUrl: "redis://127.0.0.1:6379",
      limiterFactory: (points) => {
        made.push(points);
        return new RateLimiterMemory({ points, duration: 1 });
      },
    });
    await limiter.consume({ keyId: "key_r", rateLimit: 5 });
    expect(made).toEqual([5]);
    expect(() => createRateLimiter({ redisUrl: "redis://127.0.0.1:6379" })).toThrow(/limiterFactory/);
  });
});

describe("request signatures", () => {
  const secret = "whsec_test_secret";
  const body = '{"product_id":"prod_1","quantity":1}';
  const path = "/openapi/v1/orders?dry_run=1";
  const t = 1_700_000_000;

  it("follows the documented algorithm: HMAC-SHA256 over t.METHOD.path.sha256(body)", () => {
    const header = signRequest(secret, { method: "post", path, body, timestamp: t });
    const expected = createHmac("sha256", secret)
      .update(`${t}.POST.${path}.${sha256Hex(body)}`)
      .digest("hex");
    expect(header).toBe(`t=${t},v1=${expected}`);
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex(Buffer.from(body))).toBe(sha256Hex(body));
  });

  it("accepts a valid signature within 300 seconds either way", () => {
    const header = signRequest(secret, { method: "POST", path, body, timestamp: t });
    for (const now of [t, t + 300, t - 300]) {
      expect(() => verifyRequestSignature(secret, header, { method: "POST", path, bodySha256: sha256Hex(body), nowSeconds: now })).not.toThrow();
    }
  });

  it("refuses a missing signature", () => {
    const error = appErrorOf(() => verifyRequestSignature(secret, null, { method: "GET", path, bodySha256: sha256Hex(""), nowSeconds: t }));
    expect(error.code).toBe("unauthorized");
    expect(error.status).toBe(401);
    expect(error.message).toBe("Missing request signature");
    expect(appErrorOf(() => verifyRequestSignature(secret, "  ", { method: "GET", path, bodySha256: sha256Hex(""), nowSeconds: t })).message).toBe(
      "Missing request signature",
    );
  });

  it("refuses a signature over another body, path, method or secret, and a malformed header", () => {
    const header = signRequest(secret, { method: "POST", path, body, timestamp: t });
    const check = (h: string, method: string, p: string, b: string) =>
      appErrorOf(() => verifyRequestSignature(secret, h, { method, path: p, bodySha256: sha256Hex(b), nowSeconds: t }));
    for (const error of [
      check(header, "POST", path, `${body} `),
      check(header, "POST", "/openapi/v1/orders", body),
      check(header, "PUT", path, body),
      check(signRequest("whsec_other", { method: "POST", path, body, timestamp: t }), "POST", path, body),
      check("garbage", "POST", path, body),
      check(`t=${t}`, "POST", path, body),
      check(`t=abc,v1=${"0".repeat(64)}`, "POST", path, body),
      check(`t=${t},v1=short`, "POST", path, body),
    ]) {
      expect(error.code).toBe("unauthorized");
      expect(error.message).toBe("Invalid request signature");
    }
  });

  it("refuses a correctly signed request whose timestamp is more than 300 seconds away", () => {
    const header = signRequest(secret, { method: "GET", path, body: "", timestamp: t });
    for (const now of [t + 301, t - 301]) {
      const error = appErrorOf(() => verifyRequestSignature(secret, header, { method: "GET", path, bodySha256: sha256Hex(""), nowSeconds: now }));
      expect(error.code).toBe("unauthorized");
      expect(error.message).toBe("Request signature timestamp outside the tolerance");
    }
  });

  it("accepts any of several v1 values while a secret rotates", () => {
    const oldSig = signRequest("whsec_old", { method: "POST", path, body, timestamp: t }).split("v1=")[1];
    const newSig = signRequest(secret, { method: "POST", path, body, timestamp: t }).split("v1=")[1];
    const rotated = `t=${t},v1=${oldSig},v1=${newSig}`;
    expect(() => verifyRequestSignature(secret, rotated, { method: "POST", path, bodySha256: sha256Hex(body), nowSeconds: t })).not.toThrow();
    expect(() => verifyRequestSignature("whsec_old", rotated, { method: "POST", path, bodySha256: sha256Hex(body), nowSeconds: t })).not.toThrow();
    expect(() => verifyRequestSignature("whsec_third", rotated, { method: "POST", path, bodySha256: sha256Hex(body), nowSeconds: t })).toThrow(
      "Invalid request signature",
    );
  });
});
