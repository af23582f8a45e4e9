/**
 * Redis across instances (scale-out issue item 2): pub/sub fan-out between separate connections,
 * rate-limit counters and the request-id dedupe shared by two limiters, and a second router-only
 * stack whose graphql-ws subscriber sees a task caused through the first stack's REST API.
 * Runs against the Redis on 127.0.0.1:6379 (REDIS_URL overrides); every key and channel of a run
 * starts with its own prefix, deleted at the end.
 */
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRateLimiter, type RateLimiter } from "../../src/auth/rate-limit.ts";
import { loadConfig } from "../../src/config.ts";
import { accountTopic, eventStream, type OutboxMessage } from "../../src/events/pubsub.ts";
import { createPubSub, createRedisPubSub, type RedisPubSub } from "../../src/events/redis-pubsub.ts";
import { startStack, type Stack } from "../../bin/stack.ts";
import { waitForEvent, waitForState } from "../support/events.ts";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { collect, wsClient } from "../support/graphql-ws.ts";

const REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";
const PREFIX = `switchyard-test:${process.pid}:${randomUUID().slice(0, 8)}:`;

/** A plain connection for looking at Redis from outside the code under test. */
let admin: Redis;
/** Everything opened by a test, closed at the end even when the test fails. */
const cleanups: (() => Promise<unknown> | unknown)[] = [];

beforeAll(async () => {
  admin = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  expect(await admin.ping()).toBe("PONG");
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  let cursor = "0";
  do {
    const [next, keys] = await admin.scan(cursor, "MATCH", `${PREFIX}*`, "COUNT", 500);
    if (keys.length) await admin.del(...keys);
    cursor = next;
  } while (cursor !== "0");
  await admin.quit();
});

function pubsub(prefix = PREFIX): RedisPubSub {
  const instance = createRedisPubSub(REDIS_URL, { keyPrefix: prefix });
  cleanups.push(() => instance.close());
  return instance;
}

/** Subscriber count of a channel as Redis sees it. */
async function numsub(topic: string, prefix = PREFIX): Promise<number> {
  const [, count] = (await admin.pubsub("NUMSUB", `${prefix}events:${topic}`)) as [string, number];
  return Number(count);
}

describe("Redis pub/sub", () => {
  it("delivers each instance's events to the other, on separate connections, in publish order", async () => {
    const a = pubsub();
    const b = pubsub();
    const topic = `orders-${randomUUID()}`;
    const seenByA: any[] = [];
    const seenByB: any[] = [];
    const arrived = new EventEmitter();
    a.subscribe(topic, (event) => {
      seenByA.push(event);
      arrived.emit("seen");
    });
    b.subscribe(topic, (event) => {
      seenByB.push(event);
      arrived.emit("seen");
    });
    await Promise.all([a.whenSubscribed(topic), b.whenSubscribed(topic)]);
    expect(await numsub(topic)).toBe(2);

    // Not awaited one by one: order must come from the connection, not from the test pacing.
    const sent = [
      ...Array.from({ length: 200 }, (_, i) => a.publish(topic, { from: "a", n: i, nested: { text: "狐狸 🦊", list: [i] } })),
      ...Array.from({ length: 200 }, (_, i) => b.publish(topic, { from: "b", n: i })),
    ];
    await Promise.all(sent);
    await waitForState(
      arrived,
      "seen",
      async () => [seenByA.length, seenByB.length],
      ([x, y]) => x === 400 && y === 400,
      5_000,
    );

    for (const seen of [seenByA, seenByB]) {
      for (const from of ["a", "b"]) {
        expect(seen.filter((e) => e.from === from).map((e) => e.n)).toEqual(Array.from({ length: 200 }, (_, i) => i));
      }
    }
    expect(seenByB.find((e) => e.from === "a" && e.n === 7)).toEqual({ from: "a", n: 7, nested: { text: "狐狸 🦊", list: [7] } });
  });

  it("subscribes a topic on its first local handler and unsubscribes when the last one leaves", async () => {
    const a = pubsub();
    const b = pubsub();
    const topic = `t-${randomUUID()}`;
    const first: unknown[] = [];
    const second: unknown[] = [];
    const arrived = new EventEmitter();
    const offFirst = a.subscribe(topic, (e) => first.push(e));
    const offSecond = a.subscribe(topic, (e) => {
      second.push(e);
      arrived.emit("seen");
    });
    await a.whenSubscribed(topic);
    expect(await numsub(topic)).toBe(1); // one Redis subscription for both handlers

    await b.publish(topic, 1);
    await waitForState(
      arrived,
      "seen",
      async () => second.length,
      (n) => n === 1,
    );
    expect(first).toEqual([1]);

    offFirst();
    offFirst(); // idempotent
    await b.publish(topic, 2);
    await waitForState(
      arrived,
      "seen",
      async () => second.length,
      (n) => n === 2,
    );
    expect(first).toEqual([1]);
    expect(await numsub(topic)).toBe(1);

    offSecond();
    await waitUntil(
      () => numsub(topic),
      (n) => n === 0,
    );

    // Subscribing again after the last one left works (SUBSCRIBE after UNSUBSCRIBE on one connection).
    const again: unknown[] = [];
    const offAgain = a.subscribe(topic, (e) => {
      again.push(e);
      arrived.emit("seen");
    });
    offAgain();
    const last = a.subscribe(topic, (e) => {
      again.push(e);
      arrived.emit("seen");
    });
    await a.whenSubscribed(topic);
    await b.publish(topic, 3);
    await waitForState(
      arrived,
      "seen",
      async () => again,
      (list) => list.length === 1,
    );
    expect(again).toEqual([3]);
    last();
  });

  it("keeps key prefixes apart and lets one throwing handler not stop the others", async () => {
    const a = pubsub();
    const other = pubsub(`${PREFIX}other:`);
    const topic = `t-${randomUUID()}`;
    const got: unknown[] = [];
    const foreign: unknown[] = [];
    const arrived = new EventEmitter();
    const originalError = console.error;
    console.error = () => {};
    try {
      a.subscribe(topic, () => {
        throw new Error("handler bug");
      });
      a.subscribe(topic, (e) => {
        got.push(e);
        arrived.emit("seen");
      });
      other.subscribe(topic, (e) => {
        foreign.push(e);
        arrived.emit("seen");
      });
      await Promise.all([a.whenSubscribed(topic), other.whenSubscribed(topic)]);
      await a.publish(topic, { ok: true });
      // A marker published after it on each prefix: once it arrives, anything else would have too
      // (one Redis connection delivers in publish order).
      await a.publish(topic, { marker: true });
      await other.publish(topic, { marker: true });
      await waitForState(
        arrived,
        "seen",
        async () => got.length + foreign.length,
        (n) => n >= 3,
      );
    } finally {
      console.error = originalError;
    }
    expect(got).toEqual([{ ok: true }, { marker: true }]);
    expect(foreign).toEqual([{ marker: true }]);
  });

  it("serves eventStream: ready once subscribed, events from another instance in order, close unsubscribes", async () => {
    const a = pubsub();
    const b = pubsub();
    const topic = accountTopic(`acc_${randomUUID()}`);
    const stream = eventStream<{ n: number }>(a, topic, (e) => e.n % 2 === 0);
    await stream.ready;
    for (let n = 0; n < 10; n++) void b.publish(topic, { n });
    const got: number[] = [];
    for await (const event of stream) {
      got.push(event.n);
      if (got.length === 5) break; // `break` calls return(), which closes the stream
    }
    expect(got).toEqual([0, 2, 4, 6, 8]);
    await waitUntil(
      () => numsub(topic),
      (n) => n === 0,
    );
  });

  it("is chosen by createPubSub when REDIS_URL is set; in-process otherwise; close is idempotent", async () => {
    const inProcess = createPubSub({});
    expect(inProcess.redis).toBeUndefined();
    const local: unknown[] = [];
    inProcess.subscribe("t", (e) => local.push(e));
    await inProcess.publish("t", 1);
    expect(local).toEqual([1]);
    await inProcess.close();

    const redis = createPubSub({ redisUrl: REDIS_URL, redisKeyPrefix: PREFIX });
    expect(redis.redis).toBeDefined();
    expect(redis.redis!.status).toBe("wait"); // lazy: nothing opened until used
    await redis.connect();
    expect(redis.redis!.status).toBe("ready");
    await redis.close();
    await redis.close();
    expect(redis.redis!.status).toBe("end");
    await expect(redis.publish("t", 1)).rejects.toThrow(/closed/);
  });
});

describe("rate limit shared through Redis", () => {
  /** Two "instances": each limiter has its own connection, as two processes would. */
  function twoLimiters(): [RateLimiter, RateLimiter] {
    const make = () => {
      const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
      cleanups.push(() => client.quit());
      return createRateLimiter({ redisUrl: REDIS_URL, redis: client, keyPrefix: PREFIX });
    };
    return [make(), make()];
  }

  it("allows N requests per second for a key in total, not per instance", async () => {
    const [a, b] = twoLimiters();
    const caller = { keyId: `key_${randomUUID()}`, rateLimit: 5 };
    const outcomes = await Promise.allSettled([...Array.from({ length: 6 }, () => a.consume(caller)), ...Array.from({ length: 6 }, () => b.consume(caller))]);
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(5);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected").map((o) => o.reason);
    expect(refused).toHaveLength(7);
    for (const error of refused) {
      expect(error).toMatchObject({ code: "rate_limited", status: 429, details: { retry_after_seconds: 1 } });
    }
    expect(await admin.get(`${PREFIX}rl5:${caller.keyId}`)).toBe("12"); // the one counter both instances used
  });

  it("counts one request id once across both instances and gives both its outcome", async () => {
    const [a, b] = twoLimiters();
    const caller = { keyId: `key_${randomUUID()}`, rateLimit: 2 };
    // The same client request reaching both subgraphs on two instances at once (and twice on one).
    const quotas = await Promise.all([a.consume(caller, "req_1"), b.consume(caller, "req_1"), a.consume(caller, "req_1"), b.consume(caller, "req_1")]);
    expect(await admin.get(`${PREFIX}rl2:${caller.keyId}`)).toBe("1");
    // Every instance reports the quota the one count left (for the RateLimit headers).
    for (const quota of quotas) expect(quota).toMatchObject({ limit: 2, remaining: 1, resetSeconds: 1 });
    await b.consume(caller, "req_2");
    await a.consume(caller, "req_2");
    expect(await admin.get(`${PREFIX}rl2:${caller.keyId}`)).toBe("2");

    const refused = await b.consume(caller, "req_3").catch((e) => e);
    expect(refused).toMatchObject({ code: "rate_limited", details: { retry_after_seconds: 1 } });
    // After the window has passed, req_3 on the other instance keeps its refusal (the stored
    // outcome, not a new count), while a new request id is counted in the new window.
    await waitUntil(
      () => admin.exists(`${PREFIX}rl2:${caller.keyId}`),
      (n) => n === 0,
    ); // the window's counter expired
    await expect(a.consume(caller, "req_3")).rejects.toMatchObject({ code: "rate_limited" });
    await expect(a.consume(caller, "req_4")).resolves.toMatchObject({ limit: 2, remaining: 1 });
    expect(await admin.get(`${PREFIX}rl2:${caller.keyId}`)).toBe("1");
    expect(await admin.get(`${PREFIX}rlreq:${caller.keyId}:req_4`)).toBe("ok:1:1");
    expect(await admin.pttl(`${PREFIX}rlreq:${caller.keyId}:req_4`)).toBeGreaterThan(5_000);
  });

  it("counts itself when the instance that took a request id died before storing an outcome", async () => {
    const [a] = twoLimiters();
    const caller = { keyId: `key_${randomUUID()}`, rateLimit: 3 };
    await admin.set(`${PREFIX}rlreq:${caller.keyId}:req_orphan`, "pending", "PX", 10_000);
    const quick = createRateLimiter({ redisUrl: REDIS_URL, redis: admin, keyPrefix: PREFIX, requestPendingWaitMs: 100 });
    await quick.consume(caller, "req_orphan");
    expect(await admin.get(`${PREFIX}rl3:${caller.keyId}`)).toBe("1");
    await a.consume(caller, "req_orphan"); // now stored: not counted again
    expect(await admin.get(`${PREFIX}rl3:${caller.keyId}`)).toBe("1");
  });

  it("still refuses REDIS_URL without a Redis store (no silent per-instance counters)", () => {
    expect(() => createRateLimiter({ redisUrl: REDIS_URL })).toThrow(/REDIS_URL/);
  });
});

describe("two routers on one Redis", () => {
  let first: TestStack;
  let second: Stack;
  let secondDataDir: string;

  beforeAll(async () => {
    first = await startTestStack({ REDIS_URL, REDIS_KEY_PREFIX: PREFIX, SIMULATOR_STEP_MS: "150", TASK_POLL_INTERVAL_MS: "20" });
    secondDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-router-"));
    // A second process-like stack with only the router role, finding the subgraphs by URL.
    second = await startStack(
      loadConfig({
        DATA_DIR: secondDataDir,
        PORT: "0",
        LOG_LEVEL: "silent",
        REDIS_URL,
        REDIS_KEY_PREFIX: PREFIX,
        GENERATION_URL: first.stack.generationUrl!,
        CLOUD_URL: first.stack.cloudUrl!,
        SUBGRAPH_SECRET: first.stack.subgraphSecret!,
      }),
      ["router"],
    );
  });

  afterAll(async () => {
    await second?.close();
    await first?.close();
    if (secondDataDir) fs.rmSync(secondDataDir, { recursive: true, force: true });
  });

  it("delivers to a graphql-ws subscriber on the second router a task caused through the first router's REST API", async () => {
    const { key, account_id: accountId } = await first.createKey("100");
    const topic = accountTopic(accountId);
    // An observer on its own connection, like a third process: the stack's events go through Redis.
    const observer = pubsub();
    const published: OutboxMessage[] = [];
    observer.subscribe(topic, (e) => published.push(e as OutboxMessage));
    await observer.whenSubscribed(topic);

    const client = wsClient(second.url!, { Authorization: `Bearer ${key}` });
    cleanups.push(() => client.dispose());
    let taskId = "";
    const nexts = new EventEmitter();
    const terminal = waitForEvent<any>(nexts, "next", (event) => event.data?.tasks?.id === taskId && event.data.tasks.statusCode === 1, 15_000);
    const sub = collect(client, `subscription { tasks { id statusCode } }`, {}, (event) => nexts.emit("next", event));
    // The subscription is live once the subgraph's Redis subscriber joined the observer on the channel.
    await waitUntil(
      () => numsub(topic),
      (n) => n === 2,
    );

    const submitted = await first.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a heron over a lake", model_id: 52 } });
    expect(submitted.status).toBe(200);
    taskId = submitted.body.data.task_id;
    await terminal; // the terminal event on the second router
    sub.stop();
    const { events, error } = await sub.done;
    expect(error).toBeUndefined();
    const codes = events.filter((e) => e.data?.tasks?.id === taskId).map((e) => e.data.tasks.statusCode);
    expect(codes.at(-1)).toBe(1);
    expect(codes.length).toBeGreaterThanOrEqual(2);

    const viaRedis = published.filter((e) => e.topic === "task.status_changed" && e.aggregateId === taskId);
    expect(viaRedis.length).toBeGreaterThanOrEqual(codes.length);
    expect(viaRedis.map((e) => e.id)).toEqual([...viaRedis.map((e) => e.id)].sort((x, y) => x - y));
    // The second router answers about the same task.
    const seen = await fetch(`${second.url}/api/v1/tasks/${taskId}`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json());
    expect(seen.data).toMatchObject({ task_id: taskId, status: 1 });
  });

  it("holds a key's rate limit across both routers and counts a request fanned out to both subgraphs once", async () => {
    const { key, id: keyId } = await first.createKey("0", { rateLimit: 3 });
    const get = (base: string) => fetch(`${base}/openapi/v1/vendors`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);
    const statuses = await Promise.all([first.url, second.url!, first.url, second.url!, first.url, second.url!].map(get));
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
    // Read now: the counter lives one window, and the request below may outlast it on a loaded machine.
    expect(await admin.get(`${PREFIX}rl3:${keyId}`)).toBe("6");

    const fan = await first.createKey("0", { rateLimit: 1 });
    const response = await fetch(`${second.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${fan.key}` },
      body: JSON.stringify({ query: `{ viewer { id balance { amount } orders(first: 1) { totalCount } } }` }),
    }).then((r) => r.json());
    expect(response.errors).toBeUndefined();
    expect(response.data.viewer).toMatchObject({ id: fan.account_id, orders: { totalCount: 0 } });
    expect(await admin.get(`${PREFIX}rl1:${fan.id}`)).toBe("1");
  });
});
