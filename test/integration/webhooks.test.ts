/**
 * The outbox dispatcher and webhook callbacks (docs/api/cloud.md §6; docs/architecture.md §6 events, §8 callback
 * signature; issue 3 item 9), against a real SQLite database and a real HTTP receiver.
 */
import { createHmac } from "node:crypto";
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { migrate, type Db } from "../../src/db/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { createKey } from "../../src/auth/keys.ts";
import { appendOutbox, type OutboxEvent } from "../../src/events/outbox.ts";
import { accountTopic, createInProcessPubSub, type OutboxMessage } from "../../src/events/pubsub.ts";
import { listDeliveries, resendDelivery } from "../../src/events/deliveries.ts";
import { startDispatcher, type Dispatcher, type DispatcherOptions } from "../../src/events/dispatcher/index.ts";
import { signWebhook, verifyWebhookSignature } from "../../src/events/webhook-signing.ts";

const logger = pino({ level: "silent" });

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The test clock when the request arrived (unix seconds), for signature checks. */
  nowSeconds: number;
}

/** A real callback receiver on 127.0.0.1: answers each request with what `respond` returns. */
async function startReceiver(respond: (request: Received, index: number) => number | "hang", clockSeconds: () => number = () => Math.floor(Date.now() / 1000)) {
  const received: Received[] = [];
  const events = new EventEmitter();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const request = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), nowSeconds: clockSeconds() };
      received.push(request);
      const answer = respond(request, received.length - 1);
      if (answer !== "hang") res.writeHead(answer, { "content-type": "text/plain" }).end("ok");
      events.emit("request");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/callbacks`,
    received,
    /** Resolves once `count` requests have arrived (rejects after 15 s so a bug cannot hang the suite). */
    waitForRequests(count: number): Promise<void> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (received.length >= count) {
            clearTimeout(timer);
            events.off("request", check);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          events.off("request", check);
          reject(new Error(`receiver got ${received.length} of ${count} requests`));
        }, 15_000);
        events.on("request", check);
        check();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A clock the test moves by hand: retries become due only when the test says so. */
function manualClock(start = Date.parse("2031-05-01T08:00:00.000Z")) {
  let ms = start;
  return { now: () => ms, set: (value: number) => (ms = value), seconds: () => Math.floor(ms / 1000) };
}

let testDb: TestDb;
let db: Db;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  testDb = await openTestDb("switchyard-webhooks-");
  db = testDb.db;
  await migrate(db);
});

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

afterAll(async () => {
  await testDb?.close();
});

async function append(event: OutboxEvent): Promise<number> {
  await db.transaction((trx) => appendOutbox(trx, event));
  const row = await db("outbox").max({ id: "id" }).first();
  return Number(row!.id);
}

function dispatcher(options: Partial<DispatcherOptions> & Pick<DispatcherOptions, "pubsub">, database: Db = db): Dispatcher {
  const d = startDispatcher({ db: database, logger, retryBaseMs: 60_000, maxAttempts: 5, intervalMs: 0, requestTimeoutMs: 5_000, ...options });
  cleanups.push(() => d.stop());
  return d;
}

const ORDER_DATA = { order_id: "ord_1", client_order_no: "C-1001", resource_id: null, status: "provisioning" };

describe("webhook callbacks", () => {
  it("retries a failing receiver with exponential backoff and delivers one signed callback after two 500s", async () => {
    const clock = manualClock();
    const statuses = [500, 500, 200];
    const receiver = await startReceiver((_, i) => statuses[i] ?? 200, clock.seconds);
    cleanups.push(() => receiver.close());
    const key = await createKey(db, { name: "retry", callbackUrl: receiver.url });
    const pubsub = createInProcessPubSub();
    const published: OutboxMessage[] = [];
    cleanups.push(pubsub.subscribe(accountTopic(key.account_id), (event) => published.push(event as OutboxMessage)));
    const baseMs = 60_000;
    const d = dispatcher({ pubsub, retryBaseMs: baseMs, now: clock.now });

    const outboxId = await append({
      topic: "order.paid",
      accountId: key.account_id,
      aggregateId: "ord_1",
      keyId: key.id,
      requestId: "req_abc",
      payload: ORDER_DATA,
    });
    const outboxRow = await db("outbox").where("id", outboxId).first();

    // Attempt 1 at T0: 500 → retry after base ±20%.
    const t0 = clock.now();
    expect(await d.runOnce()).toEqual({ published: 1, delivered: 0, attempted: 1 });
    let delivery = await db("webhook_deliveries").where("outbox_id", outboxId).first();
    expect(delivery).toMatchObject({ status: "pending", attempts: 1, lease_until: null, event: "order.paid" });
    const next1 = Date.parse(delivery.next_attempt_at);
    expect(next1 - t0).toBeGreaterThanOrEqual(0.8 * baseMs);
    expect(next1 - t0).toBeLessThanOrEqual(1.2 * baseMs);

    // Not due yet: nothing is sent.
    clock.set(next1 - 1);
    expect(await d.runOnce()).toEqual({ published: 0, delivered: 0, attempted: 0 });

    // Attempt 2: 500 → retry after 2 × base ±20%.
    clock.set(next1);
    expect(await d.runOnce()).toEqual({ published: 0, delivered: 0, attempted: 1 });
    delivery = await db("webhook_deliveries").where("id", delivery.id).first();
    expect(delivery).toMatchObject({ status: "pending", attempts: 2 });
    const next2 = Date.parse(delivery.next_attempt_at);
    expect(next2 - next1).toBeGreaterThanOrEqual(1.6 * baseMs);
    expect(next2 - next1).toBeLessThanOrEqual(2.4 * baseMs);

    // Attempt 3: 200 → delivered.
    clock.set(next2);
    expect(await d.runOnce()).toEqual({ published: 0, delivered: 1, attempted: 1 });

    const deliveries = await db("webhook_deliveries").where("account_id", key.account_id);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ status: "delivered", attempts: 3, next_attempt_at: null, delivered_at: new Date(next2).toISOString() });
    const attempts = await db<{ at: string; status: number; error: string | null; duration_ms: number; delivery_id: number }>("webhook_attempts")
      .where("delivery_id", delivery.id)
      .orderBy("id");
    expect(attempts.map((a) => [a.at, a.status, a.error])).toEqual([
      [new Date(t0).toISOString(), 500, "HTTP 500"],
      [new Date(next1).toISOString(), 500, "HTTP 500"],
      [new Date(next2).toISOString(), 200, null],
    ]);
    for (const a of attempts) expect(a.duration_ms).toBeGreaterThanOrEqual(0);

    // The receiver saw the same exact body three times, each signed with the key's webhook secret.
    expect(receiver.received).toHaveLength(3);
    for (const request of receiver.received) {
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.headers["x-service-event"]).toBe("order.paid");
      expect(request.headers["x-service-delivery"]).toBe(String(delivery.id));
      const header = request.headers["x-service-signature"] as string;
      expect(() => verifyWebhookSignature(key.webhook_secret, request.body, header, 300, request.nowSeconds)).not.toThrow();
      // docs/architecture.md §8, recomputed from scratch: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>.
      const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header)!;
      expect(match).not.toBeNull();
      expect(Number(match[1])).toBe(request.nowSeconds);
      expect(match[2]).toBe(createHmac("sha256", key.webhook_secret).update(`${match[1]}.${request.body}`).digest("hex"));
      expect(() => verifyWebhookSignature("whsec_wrong", request.body, header, 300, request.nowSeconds)).toThrow("Invalid request signature");
    }
    expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1);
    const body = JSON.parse(receiver.received[0]!.body);
    expect(Object.keys(body)).toEqual(["event", "request_id", "created_at", "data"]);
    expect(body).toEqual({ event: "order.paid", request_id: "req_abc", created_at: outboxRow.created_at, data: ORDER_DATA });

    // Published once to the account's topic, and marked published.
    expect(published).toEqual([
      {
        id: outboxId,
        topic: "order.paid",
        accountId: key.account_id,
        aggregateId: "ord_1",
        payload: ORDER_DATA,
        createdAt: outboxRow.created_at,
        keyId: key.id,
        requestId: "req_abc",
      },
    ]);
    expect((await db("outbox").where("id", outboxId).first()).published_at).not.toBeNull();

    // The delivery log shows the delivery and every attempt.
    const listed = await listDeliveries(db, { accountId: key.account_id, aggregateId: "ord_1", first: 10 });
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id: delivery.id, event: "order.paid", status: "delivered", attemptCount: 3, url: receiver.url });
    expect(listed[0]!.attempts.map((a) => a.status)).toEqual([500, 500, 200]);
    expect(await listDeliveries(db, { accountId: key.account_id, aggregateId: "ord_other", first: 10 })).toEqual([]);
  });

  it("rejects stale and tampered callback signatures at the receiver", () => {
    const body = '{"event":"order.paid"}';
    const header = signWebhook("whsec_s", body, 1_800_000_000);
    expect(() => verifyWebhookSignature("whsec_s", body, header, 300, 1_800_000_300)).not.toThrow();
    expect(() => verifyWebhookSignature("whsec_s", Buffer.from(body), header, 300, 1_800_000_000)).not.toThrow();
    expect(() => verifyWebhookSignature("whsec_s", body, header, 300, 1_800_000_301)).toThrow("Request signature timestamp outside the tolerance");
    expect(() => verifyWebhookSignature("whsec_s", `${body} `, header, 300, 1_800_000_000)).toThrow("Invalid request signature");
    expect(() => verifyWebhookSignature("whsec_s", body, null, 300, 1_800_000_000)).toThrow("Missing request signature");
  });

  it("publishes events without a key or without a callback URL but delivers nothing", async () => {
    const receiver = await startReceiver(() => 200);
    cleanups.push(() => receiver.close());
    const noCallback = await createKey(db, { name: "no-callback" });
    const pubsub = createInProcessPubSub();
    const published: OutboxMessage[] = [];
    cleanups.push(pubsub.subscribe(accountTopic(noCallback.account_id), (event) => published.push(event as OutboxMessage)));
    const d = dispatcher({ pubsub });

    const a = await append({ topic: "order.created", accountId: noCallback.account_id, aggregateId: "ord_2", keyId: noCallback.id, payload: ORDER_DATA });
    const b = await append({ topic: "order.created", accountId: noCallback.account_id, aggregateId: "ord_3", payload: ORDER_DATA });
    expect(await d.runOnce()).toEqual({ published: 2, delivered: 0, attempted: 0 });
    expect(published.map((m) => m.id)).toEqual([a, b]);
    expect(await db("webhook_deliveries").whereIn("outbox_id", [a, b])).toEqual([]);
    expect(await db("outbox").whereIn("id", [a, b]).whereNull("published_at")).toEqual([]);
    expect(receiver.received).toHaveLength(0);
    // A second round publishes nothing again.
    expect(await d.runOnce()).toEqual({ published: 0, delivered: 0, attempted: 0 });
    expect(published).toHaveLength(2);
  });

  it("turns task status changes into task.succeeded, task.failed and task.refunded callbacks", async () => {
    const receiver = await startReceiver(() => 200);
    cleanups.push(() => receiver.close());
    const key = await createKey(db, { name: "tasks", callbackUrl: receiver.url });
    const d = dispatcher({ pubsub: createInProcessPubSub() });
    const task = (id: string, status: number, refunded: number, extra: Record<string, unknown> = {}) =>
      append({
        topic: "task.status_changed",
        accountId: key.account_id,
        aggregateId: id,
        keyId: key.id,
        payload: { task_id: id, key_id: key.id, status, result: null, images: null, error: null, refunded, updated_at: "2031-05-01T08:00:00.000Z", ...extra },
      });
    await task("task_q", 0, 0);
    await task("task_p", 3, 0);
    await task("task_ok", 1, 0, { result: "https://cdn.example/video.mp4" });
    await task("task_fail", 2, 1125, { error: "Generation failed" });
    await task("task_img", 1, 500, { images: ["https://cdn.example/1.png"], result: "https://cdn.example/1.png" });

    await d.runOnce();
    const sent = receiver.received.map((r) => JSON.parse(r.body));
    // Different tasks are delivered in parallel; one task's callbacks arrive in order.
    const eventsOf = (taskId: string) => sent.filter((b) => b.data.task_id === taskId).map((b) => b.event);
    expect(sent).toHaveLength(5);
    expect(eventsOf("task_q")).toEqual([]);
    expect(eventsOf("task_p")).toEqual([]);
    expect(eventsOf("task_ok")).toEqual(["task.succeeded"]);
    expect(eventsOf("task_fail")).toEqual(["task.failed", "task.refunded"]);
    expect(eventsOf("task_img")).toEqual(["task.succeeded", "task.refunded"]);
    for (const r of receiver.received) expect(r.headers["x-service-event"]).toBe(JSON.parse(r.body).event);
    const failed = sent.find((b) => b.event === "task.failed");
    expect(failed.data).toEqual({
      task_id: "task_fail",
      status: 2,
      result: null,
      images: null,
      error: "Generation failed",
      refunded: 1.125,
      updated_at: "2031-05-01T08:00:00.000Z",
    });
    expect(sent.find((b) => b.event === "task.refunded" && b.data.task_id === "task_img").data.refunded).toBe(0.5);
    // No request caused these events: the request id names the outbox row.
    for (const b of sent) expect(b.request_id).toMatch(/^evt_\d+$/);
    const deliveries = await db<{ status: string }>("webhook_deliveries").where("key_id", key.id);
    expect(deliveries).toHaveLength(5);
    expect(new Set(deliveries.map((r) => r.status))).toEqual(new Set(["delivered"]));
    expect(new Set(receiver.received.map((r) => r.headers["x-service-delivery"])).size).toBe(5);
  });

  it("marks a delivery failed after maxAttempts, and a resend delivers it", async () => {
    const clock = manualClock();
    let accept = false;
    const receiver = await startReceiver(() => (accept ? 204 : 503), clock.seconds);
    cleanups.push(() => receiver.close());
    const key = await createKey(db, { name: "gives-up", callbackUrl: receiver.url });
    const other = await createKey(db, { name: "someone-else" });
    const d = dispatcher({ pubsub: createInProcessPubSub(), maxAttempts: 3, retryBaseMs: 1_000, now: clock.now });
    const outboxId = await append({
      topic: "order.failed",
      accountId: key.account_id,
      aggregateId: "ord_4",
      keyId: key.id,
      payload: { ...ORDER_DATA, status: "failed" },
    });

    for (let i = 0; i < 3; i++) {
      const result = await d.runOnce();
      expect(result.attempted).toBe(1);
      const row = await db("webhook_deliveries").where("outbox_id", outboxId).first();
      if (row.next_attempt_at) clock.set(Date.parse(row.next_attempt_at));
    }
    let row = await db("webhook_deliveries").where("outbox_id", outboxId).first();
    expect(row).toMatchObject({ status: "failed", attempts: 3, next_attempt_at: null, lease_until: null });
    clock.set(clock.now() + 10 * 24 * 3600 * 1000);
    expect(await d.runOnce()).toEqual({ published: 0, delivered: 0, attempted: 0 });
    expect(receiver.received).toHaveLength(3);

    // Another account's delivery and an unknown id are 404.
    await expect(resendDelivery(db, row.id, other.account_id)).rejects.toMatchObject({ code: "not_found", status: 404 });
    await expect(resendDelivery(db, 999_999)).rejects.toMatchObject({ code: "not_found" });
    await expect(resendDelivery(db, "abc")).rejects.toMatchObject({ code: "not_found" });

    accept = true;
    const resent = await resendDelivery(db, String(row.id), key.account_id, clock.now());
    expect(resent).toMatchObject({ id: row.id, status: "pending", attemptCount: 0, nextAttemptAt: new Date(clock.now()).toISOString() });
    expect(resent.attempts).toHaveLength(3);
    expect(await d.runOnce()).toEqual({ published: 0, delivered: 1, attempted: 1 });
    row = await db("webhook_deliveries").where("id", row.id).first();
    expect(row).toMatchObject({ status: "delivered", attempts: 1 });
    expect(receiver.received).toHaveLength(4);
    expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1);

    // Re-sending a delivered callback sends it again.
    await resendDelivery(db, row.id, undefined, clock.now());
    expect(await d.runOnce()).toMatchObject({ delivered: 1 });
    expect(receiver.received).toHaveLength(5);
    const listed = await listDeliveries(db, { accountId: key.account_id, first: 5 });
    expect(listed[0]!.attempts.map((a) => a.status)).toEqual([503, 503, 503, 204, 204]);
  });

  it("records transport errors and timeouts as failed attempts", async () => {
    const clock = manualClock();
    const hanging = await startReceiver(() => "hang");
    cleanups.push(() => hanging.close());
    const closed = await startReceiver(() => 200);
    const closedUrl = closed.url;
    await closed.close();
    const slowKey = await createKey(db, { name: "slow", callbackUrl: hanging.url });
    const goneKey = await createKey(db, { name: "gone", callbackUrl: closedUrl });
    const d = dispatcher({ pubsub: createInProcessPubSub(), requestTimeoutMs: 300, now: clock.now });
    await append({
      topic: "usage.threshold_reached",
      accountId: slowKey.account_id,
      aggregateId: "res_1",
      keyId: slowKey.id,
      payload: { resource_id: "res_1" },
    });
    await append({
      topic: "usage.threshold_reached",
      accountId: goneKey.account_id,
      aggregateId: "res_2",
      keyId: goneKey.id,
      payload: { resource_id: "res_2" },
    });

    expect(await d.runOnce()).toEqual({ published: 2, delivered: 0, attempted: 2 });
    const [slow] = await db("webhook_deliveries").where("key_id", slowKey.id);
    const [gone] = await db("webhook_deliveries").where("key_id", goneKey.id);
    expect(slow).toMatchObject({ status: "pending", attempts: 1 });
    expect(gone).toMatchObject({ status: "pending", attempts: 1 });
    const slowAttempt = await db("webhook_attempts").where("delivery_id", slow.id).first();
    expect(slowAttempt).toMatchObject({ status: null, error: "Timed out after 300 ms" });
    expect(slowAttempt.duration_ms).toBeGreaterThanOrEqual(250);
    const goneAttempt = await db("webhook_attempts").where("delivery_id", gone.id).first();
    expect(goneAttempt.status).toBeNull();
    expect(goneAttempt.error).toMatch(/ECONNREFUSED/);
  });

  it("never sends an attempt twice when two dispatchers run at once", async () => {
    // Each delivery is refused once, then accepted: every delivery must see exactly two requests.
    const seen = new Map<string, number>();
    const receiver = await startReceiver((request) => {
      const id = request.headers["x-service-delivery"] as string;
      seen.set(id, (seen.get(id) ?? 0) + 1);
      return seen.get(id) === 1 ? 500 : 200;
    });
    cleanups.push(() => receiver.close());
    const key = await createKey(db, { name: "concurrent", callbackUrl: receiver.url });
    // A second connection to the same file: as a second process would have.
    const db2 = testDb.openAnother();
    cleanups.push(() => db2.destroy());
    const pubsubA = createInProcessPubSub();
    const pubsubB = createInProcessPubSub();
    const published: number[] = [];
    cleanups.push(pubsubA.subscribe(accountTopic(key.account_id), (e) => published.push((e as OutboxMessage).id)));
    cleanups.push(pubsubB.subscribe(accountTopic(key.account_id), (e) => published.push((e as OutboxMessage).id)));

    const count = 20;
    const ids: number[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(
        await append({
          topic: "billing.transaction.created",
          accountId: key.account_id,
          aggregateId: `txn_${i}`,
          keyId: key.id,
          payload: { transaction_id: `txn_${i}` },
        }),
      );
    }
    const options = { retryBaseMs: 5, maxAttempts: 5, intervalMs: 5 };
    const a = dispatcher({ pubsub: pubsubA, ...options }, db);
    const b = dispatcher({ pubsub: pubsubB, ...options }, db2);
    // Manual rounds race the background loops too.
    await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()]);

    await receiver.waitForRequests(2 * count);
    await vi.waitFor(
      async () => {
        const open = await db("webhook_deliveries").where("key_id", key.id).whereNot("status", "delivered");
        expect(open).toEqual([]);
      },
      { timeout: 10_000, interval: 20 },
    );
    await a.stop();
    await b.stop();

    expect(receiver.received).toHaveLength(2 * count);
    expect(seen.size).toBe(count);
    for (const n of seen.values()) expect(n).toBe(2);
    expect(published.sort((x, y) => x - y)).toEqual(ids);
    const deliveries = await db<{ id: number; status: string; attempts: number }>("webhook_deliveries").where("key_id", key.id);
    expect(deliveries).toHaveLength(count);
    for (const delivery of deliveries) expect(delivery).toMatchObject({ status: "delivered", attempts: 2 });
    const attempts = await db("webhook_attempts").whereIn(
      "delivery_id",
      deliveries.map((r) => r.id),
    );
    expect(attempts).toHaveLength(2 * count);
  });

  it("lists an account's deliveries newest first, page by page", async () => {
    const receiver = await startReceiver(() => 200);
    cleanups.push(() => receiver.close());
    const key = await createKey(db, { name: "pages", callbackUrl: receiver.url });
    const d = dispatcher({ pubsub: createInProcessPubSub() });
    for (let i = 0; i < 3; i++)
      await append({ topic: "order.created", accountId: key.account_id, aggregateId: `ord_p${i}`, keyId: key.id, payload: { order_id: `ord_p${i}` } });
    await d.runOnce();
    const first = await listDeliveries(db, { accountId: key.account_id, first: 2 });
    expect(first.map((x) => x.aggregateId)).toEqual(["ord_p2", "ord_p1"]);
    const second = await listDeliveries(db, { accountId: key.account_id, first: 2, after: first[1]!.id });
    expect(second.map((x) => x.aggregateId)).toEqual(["ord_p0"]);
    expect(second[0]!.attempts).toHaveLength(1);
    await expect(listDeliveries(db, { accountId: key.account_id, first: 2, after: "x" })).rejects.toMatchObject({ code: "invalid_request" });
    expect(await listDeliveries(db, { accountId: "acc_nobody", first: 10 })).toEqual([]);
  });
});
