/**
 * Wrong admin tokens are throttled per client address (docs/architecture.md §2.7, issue 20
 * finding 11): at most 10 wrong tokens per address per minute are compared; after that every
 * admin field asked from that address, on either subgraph, is 429 `rate_limited` with
 * `Retry-After`, the right token included, while other addresses are served. Every wrong token is
 * logged at warn with the request id and the address, never the token. With Redis the count holds
 * across processes.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, startStack, type Stack } from "../../bin/stack.ts";
import { createKey } from "../../src/auth/keys.ts";
import { loadConfig } from "../../src/config.ts";
import { parseYuan } from "../../src/money.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { json, lineSink } from "../support/log-sink.ts";
import { CLI_ACTOR } from "../../src/audit/log.ts";
import { createOperator } from "../../src/auth/operators/store.ts";

const ADMIN_TOKEN = "throttle-admin-token-0123456789";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const CLOUD_ADMIN = "{ adminApiKeys(first: 1) { totalCount } }";
const GENERATION_ADMIN = "{ adminChannels { id } }";

/** Settings of a stack that trusts X-Forwarded-For from loopback, so a test can speak from several addresses. */
function settings(database: TestDatabase, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...database.env,
    ADMIN_TOKEN,
    TRUST_PROXY: "loopback",
    PORT: "0",
    GENERATION_PORT: "0",
    CLOUD_PORT: "0",
    LOG_LEVEL: "warn",
    LOG_FORMAT: "json",
    ...extra,
  };
}

/** Asks an admin field through the router as `address`; returns the status, Retry-After and first error code. */
async function ask(routerUrl: string, query: string, token: string, address: string, requestId: string) {
  const response = await fetch(`${routerUrl}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}`, "x-forwarded-for": address, "x-request-id": requestId },
    body: JSON.stringify({ query }),
  });
  const body = (await response.json()) as any;
  return { status: response.status, retryAfter: response.headers.get("retry-after"), code: body.errors?.[0]?.extensions?.code, body };
}

describe("wrong admin tokens from one address", () => {
  const sink = lineSink();
  let database: TestDatabase;
  let stack: Stack;
  beforeAll(async () => {
    database = await createTestDatabase();
    const config = loadConfig(settings(database));
    stack = await startStack(config, undefined, createLogger(config, sink.stream));
  });
  afterAll(async () => {
    await stack?.close();
    await database?.drop();
  });

  it("are compared at most 10 times a minute: of 300 guesses at once, 290 are 429 with Retry-After, and each is logged at warn without the token", {
    timeout: 120_000,
  }, async () => {
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) => ask(stack.url!, CLOUD_ADMIN, `guess-${i}-${ADMIN_TOKEN.slice(0, 4)}`, "203.0.113.7", `guess-${i}`)),
    );
    const limited = answers.filter((a) => a.status === 429);
    expect(answers.filter((a) => a.status === 401)).toHaveLength(10);
    expect(limited).toHaveLength(290);
    for (const answer of limited) {
      expect(answer.code).toBe("rate_limited");
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(answer.retryAfter)).toBeLessThanOrEqual(60);
      expect(answer.body.errors[0].extensions.retry_after_seconds).toBe(Number(answer.retryAfter));
    }
    // Every answer was sent after its check was logged: the lines are all there.
    const warnings = new Map(
      sink.lines
        .map(json)
        .filter((l) => l?.level === 40 && typeof l.request_id === "string")
        .map((l) => [l!.request_id as string, l!]),
    );
    for (let i = 0; i < 300; i++) {
      const line = warnings.get(`guess-${i}`);
      expect(line, `guess-${i}`).toMatchObject({ client_ip: "203.0.113.7" });
      expect(JSON.stringify(line)).not.toContain(`guess-${i}-`);
    }
    expect([...warnings.values()].filter((l) => l.msg === "wrong admin token")).toHaveLength(10);
    expect(sink.lines.some((line) => line.includes(ADMIN_TOKEN))).toBe(false);
  });

  it("refuses that address the right token too, on both subgraphs, until the window passes", async () => {
    const cloud = await ask(stack.url!, CLOUD_ADMIN, ADMIN_TOKEN, "203.0.113.7", "right-but-throttled-1");
    const generation = await ask(stack.url!, GENERATION_ADMIN, ADMIN_TOKEN, "203.0.113.7", "right-but-throttled-2");
    for (const answer of [cloud, generation]) {
      expect(answer.status).toBe(429);
      expect(answer.code).toBe("rate_limited");
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    }
  });

  it("serves the right token from another address", async () => {
    const cloud = await ask(stack.url!, CLOUD_ADMIN, ADMIN_TOKEN, "198.51.100.9", "right-elsewhere-1");
    expect(cloud.status).toBe(200);
    expect(cloud.body.errors).toBeUndefined();
    expect(cloud.body.data.adminApiKeys.totalCount).toBeGreaterThanOrEqual(0);
    const generation = await ask(stack.url!, GENERATION_ADMIN, ADMIN_TOKEN, "198.51.100.9", "right-elsewhere-2");
    expect(generation.body.errors).toBeUndefined();
    expect(generation.body.data.adminChannels).toEqual(expect.any(Array));
  });

  it("counts an admin request once however many admin fields it asks for, and does not count API-key requests", async () => {
    // An API key's reads of scoped types ask whether the request is an admin's (the scope bypass): not a guess.
    const { key } = await createKey(stack.db!, { name: "not-a-guess", balance: parseYuan("1") });
    for (let i = 0; i < 15; i++) {
      const read = await ask(stack.url!, "{ orders(first: 1) { totalCount } vendors(first: 1) { totalCount } }", key, "192.0.2.1", `key-read-${i}`);
      expect(read.body.errors).toBeUndefined();
    }
    const many = `{ a: adminApiKeys(first: 1) { totalCount } b: adminApiKeys(first: 2) { totalCount } c: adminOrders(first: 1) { totalCount } }`;
    const first = await ask(stack.url!, many, "wrong", "192.0.2.1", "aliases-1");
    expect(first.status).toBe(401);
    for (let i = 0; i < 9; i++) expect((await ask(stack.url!, CLOUD_ADMIN, "wrong", "192.0.2.1", `aliases-${i + 2}`)).status).toBe(401);
    expect((await ask(stack.url!, CLOUD_ADMIN, "wrong", "192.0.2.1", "aliases-11")).status).toBe(429);
  });
});

describe("wrong admin tokens across processes (PostgreSQL and Redis)", () => {
  const prefix = `switchyard-test:admin-throttle:${randomUUID().slice(0, 8)}:`;
  let database: TestDatabase;
  let first: Stack;
  let second: Stack;
  beforeAll(async () => {
    database = await createTestDatabase("switchyard-admin-throttle-", { postgres: true });
    const env = settings(database, { REDIS_URL, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: "silent" });
    first = await startStack(loadConfig(env));
    second = await startStack(loadConfig(env));
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it("are counted together: after 10 wrong tokens through one process, the next through another is 429", async () => {
    for (let i = 0; i < 10; i++) expect((await ask(first.url!, CLOUD_ADMIN, `wrong-${i}`, "203.0.113.50", `across-${i}`)).status).toBe(401);
    const elsewhere = await ask(second.url!, GENERATION_ADMIN, ADMIN_TOKEN, "203.0.113.50", "across-right");
    expect(elsewhere.status).toBe(429);
    expect(elsewhere.code).toBe("rate_limited");
    expect((await ask(second.url!, CLOUD_ADMIN, ADMIN_TOKEN, "203.0.113.51", "across-other")).status).toBe(200);
  });
});

describe("wrong operator passwords across processes (PostgreSQL and Redis)", () => {
  const prefix = `switchyard-test:operator-throttle:${randomUUID().slice(0, 8)}:`;
  const PASSWORD = "the operator's right password";
  let database: TestDatabase;
  let first: Stack;
  let second: Stack;
  beforeAll(async () => {
    database = await createTestDatabase("switchyard-operator-throttle-", { postgres: true });
    const env = settings(database, { REDIS_URL, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: "silent", ADMIN_FAILURES_PER_MINUTE: "4" });
    first = await startStack(loadConfig(env));
    second = await startStack(loadConfig(env));
    await createOperator(first.db!, CLI_ACTOR, { email: "ops@example.com", role: "owner", password: PASSWORD });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });
  const signIn = (url: string, password: string, address: string) =>
    fetch(`${url}/admin/session`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": address },
      body: JSON.stringify({ email: "ops@example.com", password }),
    });

  it("are counted per account across processes and addresses: 4 wrong passwords from 4 addresses through one process, then the right one through another is 429", async () => {
    for (let i = 0; i < 4; i++) expect((await signIn(first.url!, `wrong password ${i}`, `198.51.100.${i + 1}`)).status).toBe(401);
    const refused = await signIn(second.url!, PASSWORD, "198.51.100.99");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});
