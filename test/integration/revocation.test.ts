/**
 * Disabling a key ends its open subscriptions (security issue "Trust at the edges", item 5):
 * graphql-ws sockets close with 4403 and SSE streams end, whether the CLI (its own process, only
 * the database) or the admin mutation disabled the key, on every router (Redis across processes);
 * a subgraph never delivers an event to a disabled key even when nobody told it; and one socket
 * holds at most 100 subscriptions.
 */
import { signSubgraphRequest } from "../../subgraphs/shared/internal-context.ts";
import { sseEvents } from "../support/graphql-ws.ts";
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createClient, type Client } from "graphql-ws";
import WebSocket from "ws";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setKeyStatus, createKey } from "../../src/auth/keys.ts";
import { KEY_DISABLED_EVENT, KEYS_TOPIC } from "../../src/auth/revocation.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { accountTopic, type OutboxMessage } from "../../src/events/pubsub.ts";
import { loadConfig } from "../../src/config.ts";
import { parseYuan } from "../../src/money.ts";
import type { Db } from "../../src/db/index.ts";
import { startStack, type Stack } from "../../bin/stack.ts";
import { GRAPHQL_WS_MAX_OPERATIONS } from "../../router/websocket.ts";
import { waitForEvent } from "../support/events.ts";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { runCli } from "../support/process.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";

const ORDER_EVENTS = `subscription { orderEvents { event order { id status customer { customerId contact } } } }`;
const TASKS = `subscription { tasks { id statusCode } }`;
const ADMIN_TOKEN = "revocation-admin-token";
// (The gateway drops `extensions.http` from a subgraph's error in a stream it relays over SSE.)
const KEY_DISABLED_ERROR = expect.objectContaining({ message: "API key is disabled", extensions: expect.objectContaining({ code: "key_disabled" }) });

/** A graphql-ws client on `url` (a router, or a subgraph's `/graphql`) that records how its socket closed. */
function watchedClient(url: string, key: string): { client: Client; closed: Promise<{ code: number; reason: string }> } {
  let resolveClosed: (event: { code: number; reason: string }) => void = () => {};
  const closed = new Promise<{ code: number; reason: string }>((resolve) => (resolveClosed = resolve));
  const wsUrl = `${url.replace(/^http/, "ws").replace(/\/graphql$/, "")}/graphql`;
  const client = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: `Bearer ${key}` },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => {}, // a close is what the tests look at, through `closed`
    on: { closed: (event: any) => resolveClosed({ code: event.code, reason: String(event.reason) }) },
  });
  return { client, closed };
}

/** The events of one subscription as they arrive, and how it ended. */
interface Recorded {
  events: any[];
  /** Settles when the subscription completes or errors (with the error). */
  ended: Promise<{ error?: any }>;
  /** Resolves with the first event (already received or later) that `match` accepts. */
  waitFor(match: (event: any) => boolean): Promise<any>;
  stop(): void;
}

function recorder(): Omit<Recorded, "ended" | "stop"> & { push(event: any): void } {
  const events: any[] = [];
  const waiters = new Set<() => void>();
  return {
    events,
    push(event) {
      events.push(event);
      for (const check of [...waiters]) check();
    },
    waitFor(match) {
      return new Promise((resolve) => {
        const check = () => {
          const found = events.find(match);
          if (found === undefined) return;
          waiters.delete(check);
          resolve(found);
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** Subscribes over graphql-ws and records every event. */
function record(client: Client, query: string, extensions?: Record<string, unknown>): Recorded {
  const rec = recorder();
  let stop = () => {};
  const ended = new Promise<{ error?: any }>((resolve) => {
    stop = client.subscribe({ query, extensions }, { next: (value) => rec.push(value), error: (error) => resolve({ error }), complete: () => resolve({}) });
  });
  return { events: rec.events, waitFor: rec.waitFor, ended, stop: () => stop() };
}

/** Subscribes over SSE (`Accept: text/event-stream`) and records every event until the stream ends. */
function recordSse(url: string, key: string, query: string): Recorded {
  const rec = recorder();
  const controller = new AbortController();
  const ended = (async () => {
    const response = await fetch(`${url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${key}` },
      body: JSON.stringify({ query }),
      signal: controller.signal,
    });
    try {
      for await (const event of sseEvents(response.body!)) rec.push(event);
      return {};
    } catch (error) {
      return { error };
    }
  })();
  return { events: rec.events, waitFor: rec.waitFor, ended, stop: () => controller.abort() };
}

/**
 * Waits for something the code under test must do; on old code it never happens, and the test
 * fails with what it waited for instead of a bare test timeout. Never a measure of speed.
 */
function within<T>(promise: Promise<T>, what: string, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`still waiting for ${what} after ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Order numbers (and the domains made of them) from fixed letters and a counter. */
let orders = 0;
function orderBody(customerId: string) {
  const no = `rv${process.pid}x${++orders}x${randomBytes(3).toString("hex")}`;
  return {
    client_order_no: no,
    product_id: "prd_cdn_standard",
    quantity: 1,
    billing_cycle: "monthly",
    customer: { customer_id: customerId, contact: "ops@example.com" },
    metadata: { domain: `${no}.example.com` },
  };
}

/** Every order the tests placed, in order. */
const placedOrders = new Set<string>();

/** Places an order through a router's REST API. @returns the order id */
async function placeOrder(routerUrl: string, key: string, customerId = "c1"): Promise<string> {
  const response = await fetch(`${routerUrl}/openapi/v1/orders`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(orderBody(customerId)),
  });
  const body: any = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(201);
  placedOrders.add(body.data.order_id);
  return body.data.order_id;
}

/** The environment that points a CLI process at the database of a running stack. */
function databaseEnvOf(db: Db): Record<string, string> {
  const connection = db.client.config.connection;
  return connection.connectionString ? { DATABASE_URL: connection.connectionString } : { DATA_DIR: path.dirname(connection.filename) };
}

const orderIdOf = (event: any) => event?.data?.orderEvents?.order?.id;

/** What the subscriptions had received, and which orders existed, when a key was disabled. */
interface Cut {
  counts: number[];
  placedBefore: Set<string>;
}

/** Notes the moment of a disable (call it as soon as the disable returned). */
function cutAt(subscriptions: Recorded[]): Cut {
  return { counts: subscriptions.map((s) => s.events.length), placedBefore: new Set(placedOrders) };
}

/**
 * What a subscription of a disabled key got after the disable: at most events already on their
 * way (published before the disable committed: those of orders placed before it), then at most
 * the `key_disabled` error as its last result. Nothing of an order placed after the disable.
 */
function expectNothingNewAfter(events: any[], placedBefore: Set<string>) {
  events.forEach((event, i) => {
    if (event.errors) {
      expect(event.errors).toEqual([KEY_DISABLED_ERROR]);
      expect(i, "the key_disabled error is the last result").toBe(events.length - 1);
    } else {
      expect(placedBefore.has(orderIdOf(event)), `an event caused after the disable: ${JSON.stringify(event)}`).toBe(true);
    }
  });
}

/**
 * Places orders (through `routerUrl` with `key`) until every subscription saw one of them: a
 * subscription goes live a moment after it is sent, and an order's events may all pass before.
 */
async function untilLive(routerUrl: string, key: string, subscriptions: Recorded[]): Promise<void> {
  const placed = new Set<string>();
  await waitUntil(
    async () => {
      if (subscriptions.every((s) => s.events.some((e) => placed.has(orderIdOf(e))))) return true;
      placed.add(await placeOrder(routerUrl, key));
      return false;
    },
    Boolean,
    20_000,
  );
}

describe("disabling a key ends its subscriptions on the router (one process)", () => {
  let t: TestStack;
  let upstream: FakeUpstream;
  beforeAll(async () => {
    // A provider whose tasks move only when a test says so: a task can change after the disable.
    upstream = await startFakeUpstream();
    t = await startTestStack({ ADMIN_TOKEN, GENERATION_UPSTREAM_URL: upstream.url });
  });
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
  });

  /**
   * A key to disable with a second (control) key on the same account: orders the control key places
   * are events of the account, which `orderEvents` of both keys would show.
   */
  async function keysOfOneAccount() {
    const doomed = await t.createKey("100");
    const control = await t.createKey("0", { accountId: doomed.account_id });
    await topUpCustomer(t.stack.db!, { accountId: doomed.account_id, customerId: "c1", amount: parseYuan("100000") });
    return { doomed, control };
  }

  /**
   * After the key is disabled: an order placed by the control key reaches the control subscriber
   * (so it went through the whole pipeline), and nothing new reaches the disabled key's.
   */
  async function expectNoEventAfterDisable(control: { key: string }, controlSub: Recorded, revoked: Recorded[], cut: Cut) {
    const after = await placeOrder(t.url, control.key);
    await controlSub.waitFor((e) => orderIdOf(e) === after && e.data.orderEvents.event === "order.provisioned");
    for (const [i, sub] of revoked.entries()) expectNothingNewAfter(sub.events.slice(cut.counts[i]), cut.placedBefore);
  }

  it("closes the key's graphql-ws socket with 4403 when `switchyard keys disable` runs in another process, and no later order or task event reaches it", {
    timeout: 60_000,
  }, async () => {
    const { doomed, control } = await keysOfOneAccount();
    const { client, closed } = watchedClient(t.url, doomed.key);
    const watcher = watchedClient(t.url, control.key);
    const orderSub = record(client, ORDER_EVENTS);
    const taskSub = record(client, TASKS);
    const controlSub = record(watcher.client, ORDER_EVENTS);
    try {
      await untilLive(t.url, control.key, [orderSub, controlSub]);
      // The leak of the issue: another key's order, with its customer's contact, reaches this key.
      expect(orderSub.events.at(-1).data.orderEvents.order.customer).toEqual({ customerId: "c1", contact: "ops@example.com" });
      const upstreamId = `up-${randomUUID()}`;
      upstream.onSubmit({ kind: "accept", taskId: upstreamId });
      const submitted = await t.rest("POST", "/api/v1/video/generations", { key: doomed.key, body: { prompt: "a heron", model_id: 52 } });
      expect(submitted.status).toBe(200);
      const taskId = submitted.body.data.task_id;
      await taskSub.waitFor((e) => e.data?.tasks?.id === taskId);

      const cli = await runCli(["keys", "disable", doomed.id], databaseEnvOf(t.stack.db!));
      expect(cli.code, cli.stderr).toBe(0);
      const cut = cutAt([orderSub]);
      const tasksAtDisable = taskSub.events.length;
      // The task finishes after the disable: an event of the key, never delivered to it.
      const published = waitForEvent<OutboxMessage>(
        t.stack.pubsub!,
        accountTopic(doomed.account_id),
        (m) => m.aggregateId === taskId && m.payload.status === 1,
      );
      upstream.setTask(upstreamId, { status: 1, result: "https://cdn.example.com/heron.mp4" });

      expect(await within(closed, "the socket to close")).toMatchObject({ code: 4403 });
      await expectNoEventAfterDisable(control, controlSub, [orderSub], cut);
      await published;
      expect(taskSub.events.slice(tasksAtDisable).filter((e) => e.data?.tasks)).toEqual([]);
    } finally {
      await client.dispose();
      await watcher.client.dispose();
    }
  });

  it("closes the key's graphql-ws socket with 4403 when the admin mutation disables the key", async () => {
    const { doomed, control } = await keysOfOneAccount();
    const { client, closed } = watchedClient(t.url, doomed.key);
    const watcher = watchedClient(t.url, control.key);
    const orderSub = record(client, ORDER_EVENTS);
    const controlSub = record(watcher.client, ORDER_EVENTS);
    try {
      await untilLive(t.url, control.key, [orderSub, controlSub]);
      const disabled = await t.graphql(
        `mutation($input: AdminSetApiKeyStatusInput!) { adminSetApiKeyStatus(input: $input) { apiKey { id status } } }`,
        { input: { keyId: doomed.id, status: "DISABLED" } },
        undefined,
        { authorization: `Bearer ${ADMIN_TOKEN}` },
      );
      expect(disabled.body.data.adminSetApiKeyStatus.apiKey).toEqual({ id: doomed.id, status: "DISABLED" });
      const cut = cutAt([orderSub]);
      expect(await within(closed, "the socket to close")).toMatchObject({ code: 4403 });
      await expectNoEventAfterDisable(control, controlSub, [orderSub], cut);
    } finally {
      await client.dispose();
      await watcher.client.dispose();
    }
  });

  it("ends the key's SSE subscription stream with a key_disabled error, then complete, when the key is disabled", async () => {
    const { doomed, control } = await keysOfOneAccount();
    const watcher = watchedClient(t.url, control.key);
    const sse = recordSse(t.url, doomed.key, ORDER_EVENTS);
    const controlSub = record(watcher.client, ORDER_EVENTS);
    try {
      await untilLive(t.url, control.key, [sse, controlSub]);
      await setKeyStatus(t.stack.db!, doomed.id, "disabled"); // what `keys disable` calls
      const cut = cutAt([sse]);
      expect(await within(sse.ended, "the SSE stream to end")).toEqual({});
      await expectNoEventAfterDisable(control, controlSub, [sse], cut);
      // The error comes from the router or from the subgraph, whichever heard first.
      expect(sse.events.at(-1)).toEqual(expect.objectContaining({ errors: [KEY_DISABLED_ERROR] }));
    } finally {
      sse.stop();
      await watcher.client.dispose();
    }
  });

  it("a router told on the `keys` topic ends the key's graphql-ws socket (4403) and SSE stream by itself", async () => {
    const { doomed, control } = await keysOfOneAccount();
    const { client, closed } = watchedClient(t.url, doomed.key);
    const wsSub = record(client, ORDER_EVENTS);
    const sse = recordSse(t.url, doomed.key, ORDER_EVENTS);
    const other = await t.createKey("0", { accountId: doomed.account_id });
    const bystander = watchedClient(t.url, other.key);
    const bystanderSub = record(bystander.client, ORDER_EVENTS);
    try {
      await untilLive(t.url, control.key, [wsSub, sse, bystanderSub]);
      // Only the routers' topic, not the account's: the subgraphs hear nothing and the key stays
      // active, so whatever ends here was ended by the router.
      await t.stack.pubsub!.publish(KEYS_TOPIC, {
        id: 0,
        topic: KEY_DISABLED_EVENT,
        accountId: doomed.account_id,
        aggregateId: doomed.id,
        payload: { key_id: doomed.id },
        createdAt: new Date().toISOString(),
        keyId: null,
        requestId: null,
      });
      expect(await within(closed, "the socket to close")).toEqual({ code: 4403, reason: "Forbidden: API key is disabled" });
      expect(await within(sse.ended, "the SSE stream to end")).toEqual({});
      expect(sse.events.at(-1)).toEqual({ errors: [{ message: "API key is disabled", extensions: { code: "key_disabled", http: { status: 403 } } }] });
      // Another key of the account keeps its subscription.
      const after = await placeOrder(t.url, control.key);
      await bystanderSub.waitFor((e) => orderIdOf(e) === after);
    } finally {
      sse.stop();
      await client.dispose();
      await bystander.client.dispose();
    }
  });

  it("a subgraph ends a subscription with key_disabled, delivering nothing more, when the key was disabled without any announcement", async () => {
    const { doomed, control } = await keysOfOneAccount();
    // Straight to the cloud subgraph's own graphql-ws, signed as the router signs: no router in
    // between to close anything.
    const { client } = watchedClient(t.stack.cloudUrl!, doomed.key);
    const watcher = watchedClient(t.url, control.key);
    const signed = signSubgraphRequest(t.stack.subgraphSecret!, {
      audience: "cloud",
      query: ORDER_EVENTS,
      headers: { authorization: `Bearer ${doomed.key}`, "x-switchyard-client-ip": "127.0.0.1" },
    });
    const sub = record(client, signed.query!, signed.extensions!);
    const controlSub = record(watcher.client, ORDER_EVENTS);
    try {
      await untilLive(t.url, control.key, [sub, controlSub]);
      // Behind the back of everything: no outbox row, so no pub/sub message.
      await t.stack.db!("api_keys").where("id", doomed.id).update({ status: "disabled" });
      const cut = cutAt([sub]);
      const after = await placeOrder(t.url, control.key);
      // Its last result is the error, then it completes.
      expect(await within(sub.ended, "the subscription to end")).toEqual({});
      await controlSub.waitFor((e) => orderIdOf(e) === after && e.data.orderEvents.event === "order.provisioned");
      expectNothingNewAfter(sub.events.slice(cut.counts[0]), cut.placedBefore);
      expect(sub.events.at(-1)).toEqual({ data: null, errors: [KEY_DISABLED_ERROR] });
    } finally {
      await client.dispose();
      await watcher.client.dispose();
    }
  });

  it(`refuses the ${GRAPHQL_WS_MAX_OPERATIONS + 1}st subscription on one socket with too_many_subscriptions while the first ${GRAPHQL_WS_MAX_OPERATIONS} go on receiving events`, {
    timeout: 60_000,
  }, async () => {
    const { doomed: owner, control } = await keysOfOneAccount();
    const { client } = watchedClient(t.url, owner.key);
    const subs = Array.from({ length: GRAPHQL_WS_MAX_OPERATIONS }, () => record(client, ORDER_EVENTS));
    try {
      await untilLive(t.url, control.key, subs);
      const refused = record(client, ORDER_EVENTS);
      const { error } = await within(refused.ended, "the subscription to be refused");
      expect(error).toEqual([
        expect.objectContaining({
          message: expect.stringContaining(`at most ${GRAPHQL_WS_MAX_OPERATIONS}`),
          extensions: { code: "too_many_subscriptions", http: { status: 429 } },
        }),
      ]);
      const after = await placeOrder(t.url, control.key);
      await Promise.all(subs.map((sub) => sub.waitFor((e) => orderIdOf(e) === after)));
      // A place freed by a subscription that ended is taken again.
      subs[0]!.stop();
      await subs[0]!.ended;
      const another = record(client, ORDER_EVENTS);
      const next = await placeOrder(t.url, control.key);
      await another.waitFor((e) => orderIdOf(e) === next);
    } finally {
      await client.dispose();
    }
  });
});

describe("disabling a key ends its subscriptions on every router (PostgreSQL and Redis, two routers)", () => {
  const REDIS_URL = process.env.REDIS_URL || "redis://127.0.0.1:6379";
  const PREFIX = `switchyard-test:revoke:${randomUUID().slice(0, 8)}:`;
  let database: TestDatabase;
  let first: Stack;
  let second: Stack;
  let routerOnlyDir: string;

  beforeAll(async () => {
    database = await createTestDatabase("switchyard-revoke-", { postgres: true });
    const common = { LOG_LEVEL: "silent", REDIS_URL, REDIS_KEY_PREFIX: PREFIX, PORT: "0" };
    first = await startStack(
      loadConfig({
        ...database.env,
        ...common,
        GENERATION_PORT: "0",
        CLOUD_PORT: "0",
        TASK_POLL_INTERVAL_MS: "50",
        SIMULATOR_STEP_MS: "50",
        PROVISION_DELAY_MS: "60",
      }),
    );
    routerOnlyDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-revoke-router-"));
    second = await startStack(
      loadConfig({
        ...common,
        DATA_DIR: routerOnlyDir,
        GENERATION_URL: first.generationUrl!,
        CLOUD_URL: first.cloudUrl!,
        SUBGRAPH_SECRET: first.subgraphSecret!,
      }),
      ["router"],
    );
  });

  afterAll(async () => {
    await second?.close();
    await first?.close();
    await database?.drop();
    if (routerOnlyDir) fs.rmSync(routerOnlyDir, { recursive: true, force: true });
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${PREFIX}*`, "COUNT", 500);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
    await redis.quit();
  });

  it("closes with 4403 the key's sockets on both routers when `switchyard keys disable` runs in a process of its own", { timeout: 90_000 }, async () => {
    const doomed = await createKey(first.db!, { name: "doomed", balance: parseYuan("10") });
    const control = await createKey(first.db!, { name: "control", accountId: doomed.account_id });
    await topUpCustomer(first.db!, { accountId: doomed.account_id, customerId: "c1", amount: parseYuan("100000") });
    const onFirst = watchedClient(first.url!, doomed.key);
    const onSecond = watchedClient(second.url!, doomed.key);
    const watcher = watchedClient(second.url!, control.key);
    const subs = [record(onFirst.client, ORDER_EVENTS), record(onSecond.client, ORDER_EVENTS), record(onSecond.client, TASKS)];
    const controlSub = record(watcher.client, ORDER_EVENTS);
    try {
      await untilLive(first.url!, control.key, [subs[0]!, subs[1]!, controlSub]);
      // Only the database: the word reaches the routers through the outbox and Redis.
      const cli = await runCli(["keys", "disable", doomed.id], { DATABASE_URL: database.databaseUrl! });
      expect(cli.code, cli.stderr).toBe(0);
      const cut = cutAt(subs);
      const [a, b] = await within(Promise.all([onFirst.closed, onSecond.closed]), "both sockets to close");
      expect(a).toMatchObject({ code: 4403 });
      expect(b).toMatchObject({ code: 4403 });
      const after = await placeOrder(second.url!, control.key);
      await controlSub.waitFor((e) => orderIdOf(e) === after && e.data.orderEvents.event === "order.provisioned");
      for (const [i, sub] of subs.entries()) expectNothingNewAfter(sub.events.slice(cut.counts[i]), cut.placedBefore);
    } finally {
      await Promise.all([onFirst.client.dispose(), onSecond.client.dispose(), watcher.client.dispose()]);
    }
  });
});
