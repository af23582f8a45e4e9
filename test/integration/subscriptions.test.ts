/**
 * Live task status through the router (docs/architecture.md §6; issue "live graph" items 1-3): graphql-ws and
 * SSE clients, authorization at connection time, isolation, order, late subscribers, freshness.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { WebSocket } from "ws";
import { collect, collectSse, wsClient } from "../support/graphql-ws.ts";

const TASK_SUB = `subscription($id: ID!) { taskStatusChanged(taskId: $id) { id status statusCode result error updatedAt price { amount } } }`;

let t: TestStack;
beforeAll(async () => {
  // Slow simulator steps so a subscriber sees every state.
  t = await startTestStack({ SIMULATOR_STEP_MS: "150", TASK_POLL_INTERVAL_MS: "20" });
  // One subscription through router and subgraph before the tests: the first one pays for
  // connections and planning (hundreds of ms on a busy machine, more than a task's whole life).
  const { key } = await t.createKey("1");
  const client = wsClient(t.url, { Authorization: `Bearer ${key}` });
  await collect(client, TASK_SUB, { id: "task_warmup" }).done;
  await client.dispose();
});
afterAll(() => t.close());

async function submit(key: string, prompt = "a heron") {
  const r = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt, model_id: 52 } });
  expect(r.status).toBe(200);
  return r.body.data.task_id as string;
}

describe("taskStatusChanged over graphql-ws through the router", () => {
  it("sends the current state, then every change in order, and completes after the terminal state with its result", async () => {
    const { key } = await t.createKey("100");
    const id = await submit(key);
    const client = wsClient(t.url, { Authorization: `Bearer ${key}` });
    const { events, error } = await collect(client, TASK_SUB, { id }).done;
    await client.dispose();
    expect(error).toBeUndefined();
    const tasks = events.map((e) => e.data.taskStatusChanged);
    expect(tasks.at(-1)).toMatchObject({ id, status: "SUCCEEDED", statusCode: 1, result: expect.stringMatching(/\.mp4$/) });
    const times = tasks.map((task) => task.updatedAt);
    expect([...times].sort()).toEqual(times);
    // Every event is a change: no two consecutive events carry the same status (a code may recur,
    // as in QUEUED at submission → SUBMITTED → QUEUED upstream).
    for (const [i, task] of tasks.slice(1).entries()) expect(task.statusCode).not.toBe(tasks[i].statusCode);
    expect(tasks.length).toBeGreaterThanOrEqual(2);
  });

  it("gives a subscriber who arrives after the task finished its terminal state at once, then completes", async () => {
    const { key } = await t.createKey("100");
    const id = await submit(key, "#fail on purpose");
    await t.waitForTask(key, id);
    const client = wsClient(t.url, { authorization: key });
    const { events, error } = await collect(client, TASK_SUB, { id }).done;
    await client.dispose();
    expect(error).toBeUndefined();
    expect(events).toHaveLength(1);
    expect(events[0].data.taskStatusChanged).toMatchObject({ id, status: "FAILED", error: expect.any(String) });
  });

  it("yields nothing of another key's task but task_not_found, the same as for a task that does not exist", async () => {
    const owner = await t.createKey("100");
    const stranger = await t.createKey("100");
    const id = await submit(owner.key);
    const client = wsClient(t.url, { Authorization: `Bearer ${stranger.key}` });
    const foreign = await collect(client, TASK_SUB, { id }).done;
    const missing = await collect(client, TASK_SUB, { id: "task_doesnotexist" }).done;
    await client.dispose();
    for (const outcome of [foreign, missing]) {
      const errors = outcome.error ?? outcome.events[0]?.errors;
      expect(errors?.[0]?.extensions?.code).toBe("task_not_found");
      expect(outcome.events.every((e) => !e.data?.taskStatusChanged)).toBe(true);
    }
  });

  it("refuses a connection with a bad or missing key with close code 4403", async () => {
    for (const params of [{ Authorization: "Bearer sy_nope" }, {}]) {
      const client = wsClient(t.url, params as Record<string, string>);
      const { error } = await collect(client, `subscription { tasks { id } }`).done;
      await client.dispose();
      expect(error?.code).toBe(4403);
    }
  });

  it("streams every change of the caller's own tasks on `tasks` and nothing of another key's", async () => {
    const mine = await t.createKey("100");
    const theirs = await t.createKey("100");
    const client = wsClient(t.url, { Authorization: `Bearer ${mine.key}` });
    let resolveTerminal: () => void = () => {};
    const terminal = new Promise<void>((resolve) => (resolveTerminal = resolve));
    let resolveWarm: () => void = () => {};
    const warm = new Promise<void>((resolve) => (resolveWarm = resolve));
    let warmId = "";
    let myId = "";
    const sub = collect(client, `subscription { tasks { id statusCode } }`, {}, (event) => {
      if (event.data?.tasks?.id === warmId) resolveWarm();
      if (event.data?.tasks?.id === myId && event.data.tasks.statusCode === 1) resolveTerminal();
    });
    // A warm-up task of my own: its first event proves the subscription is live end to end.
    warmId = await submit(mine.key, "warm-up");
    await warm;
    const theirId = await submit(theirs.key);
    myId = await submit(mine.key);
    await terminal;
    sub.stop();
    const { events } = await sub.done;
    await client.dispose();
    const ids = new Set(events.map((e) => e.data.tasks.id));
    expect(ids.has(myId)).toBe(true);
    expect(ids.has(theirId)).toBe(false);
  });
});

describe("`tasks` subscriptions of one key share one upstream stream on the router", () => {
  it("keeps delivering to the others when the client whose subscription started the shared stream leaves, and starts afresh once all left", async () => {
    const { key } = await t.createKey("100");
    const QUERY = `subscription { tasks { id statusCode } }`;
    const watch = () => {
      const client = wsClient(t.url, { Authorization: `Bearer ${key}` });
      const ids = new Set<string>();
      const waiters: (() => void)[] = [];
      const sub = collect(client, QUERY, {}, (event) => {
        ids.add(event.data.tasks.id);
        for (const wake of waiters.splice(0)) wake();
      });
      const sees = async (id: string) => {
        while (!ids.has(id)) await new Promise<void>((resolve) => waiters.push(resolve));
      };
      return { client, sub, sees, ids };
    };
    // Live once each has seen a task of the key (the first starts the stream, the others join it).
    const untilLive = async (watchers: ReturnType<typeof watch>[]) => {
      for (let round = 0; ; round++) {
        if (round === 20) throw new Error("the subscriptions never all went live");
        const id = await submit(key, `warm-up ${round}`);
        await t.waitForTask(key, id);
        const seen = await Promise.race([
          Promise.all(watchers.map((w) => w.sees(id))).then(() => true),
          new Promise<false>((r) => setTimeout(() => r(false), 1_000)),
        ]);
        if (seen) return;
      }
    };
    const first = watch();
    await untilLive([first]);
    const others = [watch(), watch()];
    await untilLive([first, ...others]);

    first.sub.stop();
    await first.client.dispose();
    const after = await submit(key, "after the first left");
    await Promise.all(others.map((w) => w.sees(after)));
    expect(first.ids.has(after)).toBe(false);

    for (const w of others) {
      w.sub.stop();
      await w.client.dispose();
    }
    const fresh = watch();
    await untilLive([fresh]);
    fresh.sub.stop();
    await fresh.client.dispose();
  });
});

describe("a graphql-ws subscription that joins a running shared stream", () => {
  /** A raw graphql-transport-ws socket, acknowledged with `key`: frames by type, and its close. */
  async function rawSocket(key: string) {
    const socket = new WebSocket(`${t.url.replace(/^http/, "ws")}/graphql`, "graphql-transport-ws");
    const frames: any[] = [];
    let wake: (() => void) | null = null;
    socket.on("message", (data) => {
      frames.push(JSON.parse(data.toString()));
      wake?.();
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise((resolve) => socket.once("open", resolve));
    /** Waits for a frame matching `match` (after those already taken). */
    const frame = async (match: (f: any) => boolean) => {
      for (;;) {
        const found = frames.find(match);
        if (found) return found;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    };
    socket.send(JSON.stringify({ type: "connection_init", payload: { Authorization: `Bearer ${key}` } }));
    await frame((f) => f.type === "connection_ack");
    const subscribe = (id: string) => socket.send(JSON.stringify({ id, type: "subscribe", payload: { query: "subscription { tasks { id } }" } }));
    return { socket, frames, frame, closed, subscribe };
  }
  const sawTask = (id: string, taskId: string) => (f: any) => f.type === "next" && f.id === id && f.payload?.data?.tasks?.id === taskId;

  it("gets the key's events as `next` frames of its own id, stops on its `complete`, takes the id again, and refuses it while in use (4409)", async () => {
    const { key } = await t.createKey("100");
    const first = await rawSocket(key);
    first.subscribe("a");
    // Live once the first subscription (which starts the shared stream) has seen a task.
    for (let round = 0; ; round++) {
      if (round === 20) throw new Error("the first subscription never went live");
      const id = await submit(key, `warm-up ${round}`);
      const seen = await Promise.race([first.frame(sawTask("a", id)).then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 1_000))]);
      if (seen) break;
    }
    const joined = await rawSocket(key);
    joined.subscribe("j");
    const one = await submit(key, "one");
    await joined.frame(sawTask("j", one));
    await first.frame(sawTask("a", one));

    joined.socket.send(JSON.stringify({ id: "j", type: "complete" }));
    joined.subscribe("k"); // on the same socket, after its `complete`: the first task below comes after both
    const two = await submit(key, "two");
    await joined.frame(sawTask("k", two));
    await first.frame(sawTask("a", two));
    expect(joined.frames.some(sawTask("j", two))).toBe(false);

    joined.subscribe("j"); // free again
    const three = await submit(key, "three");
    await joined.frame(sawTask("j", three));
    joined.subscribe("j");
    expect(await joined.closed).toEqual({ code: 4409, reason: "Subscriber for j already exists" });
    first.socket.close();
  });
});

describe("taskStatusChanged over SSE through the router", () => {
  it("streams the task to its terminal state with the key from the Authorization header", async () => {
    const { key } = await t.createKey("100");
    const id = await submit(key);
    const { status, events } = await collectSse(t.url, TASK_SUB, { id }, { authorization: `Bearer ${key}` });
    expect(status).toBe(200);
    expect(events.at(-1).data.taskStatusChanged).toMatchObject({ id, status: "SUCCEEDED" });
  });

  it("answers an error, not events, for a bad key", async () => {
    const owner = await t.createKey("100");
    const id = await submit(owner.key);
    const { events } = await collectSse(t.url, TASK_SUB, { id }, { authorization: "Bearer sy_nope" });
    expect(events.every((e) => !e.data?.taskStatusChanged)).toBe(true);
    expect(events[0]?.errors?.[0]?.extensions?.code).toBe("unauthorized");
  });
});

describe("orderEvents over graphql-ws through the router", () => {
  it("streams an order's events in order, each showing the order as that event left it, and nothing of another account", async () => {
    const { topUpCustomer } = await import("../../src/cloud/customers.ts");
    const owner = await t.createKey("0");
    const stranger = await t.createKey("0");
    await topUpCustomer(t.stack.db!, { accountId: owner.account_id, customerId: "c1", amount: 1_000_000 });
    const client = wsClient(t.url, { Authorization: `Bearer ${owner.key}` });
    const strangerClient = wsClient(t.url, { Authorization: `Bearer ${stranger.key}` });
    const query = `subscription { orderEvents { event requestId createdAt order { id status paymentStatus resource { id } } } }`;
    const orderBody = (no: string, customerId: string) => ({
      client_order_no: no,
      product_id: "prd_cdn_standard",
      quantity: 1,
      billing_cycle: "monthly",
      customer: { customer_id: customerId },
      metadata: { domain: `${no}.example.com` },
    });
    // Each subscriber is live once it sees an event of one of its own warm-up orders. A
    // subscription goes live a moment after `collect` returns, and an order can be provisioned
    // (its last event) before that: warm-up orders are placed until one is seen.
    const firstEventOf = () => {
      const ids = new Set<string>();
      let seen = false;
      return {
        ids,
        seen: () => seen,
        onEvent: (e: any) => {
          if (ids.has(e.data?.orderEvents?.order?.id)) seen = true;
        },
      };
    };
    // Order numbers (and the domains made of them) from fixed letters: a key's characters may not
    // all be valid in a domain name.
    const warmUp = (side: string, key: string, customerId: string, warm: ReturnType<typeof firstEventOf>) =>
      waitUntil(async () => {
        if (warm.seen()) return true;
        const placed = await t.rest("POST", "/openapi/v1/orders", { key, body: orderBody(`warm-${side}-${warm.ids.size}`, customerId) });
        expect(placed.status, JSON.stringify(placed.body)).toBe(201);
        warm.ids.add(placed.body.data.order_id);
        return warm.seen();
      }, Boolean);
    let realId = "";
    const ownerWarm = firstEventOf();
    const strangerWarm = firstEventOf();
    let resolveProvisioned: () => void = () => {};
    const provisioned = new Promise<void>((resolve) => (resolveProvisioned = resolve));
    const mine = collect(client, query, {}, (e) => {
      ownerWarm.onEvent(e);
      if (e.data?.orderEvents?.order?.id === realId && e.data.orderEvents.event === "order.provisioned") resolveProvisioned();
    });
    const theirs = collect(strangerClient, query, {}, strangerWarm.onEvent);
    await Promise.all([warmUp("owner", owner.key, "c1", ownerWarm), warmUp("stranger", stranger.key, "c9", strangerWarm)]);
    const created = await t.rest("POST", "/openapi/v1/orders", { key: owner.key, body: orderBody("sub-1", "c1") });
    expect(created.status).toBe(201);
    realId = created.body.data.order_id;
    await provisioned;
    mine.stop();
    theirs.stop();
    const events = (await mine.done).events.map((e) => e.data.orderEvents).filter((e) => e.order.id === realId);
    expect(events.map((e) => e.event)).toEqual(["order.created", "order.paid", "order.provisioned"]);
    expect(events[0].requestId).toBe(created.body.request_id);
    expect(events[1].order).toMatchObject({ status: "PROVISIONING", paymentStatus: "PAID" });
    expect(events[2].order).toMatchObject({ status: "ACTIVE", resource: { id: expect.any(String) } });
    const strangerSaw = new Set((await theirs.done).events.map((e) => e.data.orderEvents.order.id));
    expect([...strangerSaw].every((id) => strangerWarm.ids.has(id))).toBe(true);
    await client.dispose();
    await strangerClient.dispose();
  });
});

describe("the `tasks` subscription at scale", () => {
  it("reads a task once per event for all of one key's subscriptions, not once per subscription", async () => {
    const { key } = await t.createKey("100");
    const SUBSCRIBERS = 20;
    const clients = Array.from({ length: SUBSCRIBERS }, () => wsClient(t.url, { Authorization: `Bearer ${key}` }));
    const seen: Map<string, number[]>[] = clients.map(() => new Map());
    const waiters = new Set<() => void>();
    const subs = clients.map((client, i) =>
      collect(client, `subscription { tasks { id statusCode } }`, {}, (event) => {
        const { id, statusCode } = event.data.tasks;
        seen[i]!.set(id, [...(seen[i]!.get(id) ?? []), statusCode]);
        for (const check of waiters) check();
      }),
    );
    const allSee = (id: string, code: number) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (seen.every((m) => m.get(id)?.includes(code))) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
      });
    // Every subscription is live once each saw a warm-up task finish. A subscription may become
    // live only after the first warm-up task finished (a loaded machine): then another one runs.
    const live = () => seen.every((m) => [...m.values()].some((codes) => codes.includes(1)));
    for (let round = 0; !live(); round++) {
      if (round === 20) throw new Error("the subscriptions never all went live");
      const warmUp = await submit(key, `warm-up ${round}`);
      await t.waitForTask(key, warmUp);
      await Promise.race([allSee(warmUp, 1), new Promise((resolve) => setTimeout(resolve, 1_000))]);
    }

    const statements: { sql: string; bindings: unknown[] }[] = [];
    const record = (q: { sql: string; bindings?: unknown[] }) => statements.push({ sql: q.sql, bindings: q.bindings ?? [] });
    t.stack.db!.on("query", record);
    const id = await submit(key, "watched by twenty");
    await allSee(id, 1);
    t.stack.db!.off("query", record);
    for (const s of subs) s.stop();
    await Promise.all(clients.map((c) => c.dispose()));

    const events = seen[0]!.get(id)!.length;
    expect(seen.every((m) => m.get(id)!.length === events)).toBe(true);
    const reads = statements.filter((s) => /^select/i.test(s.sql) && /key_id/.test(s.sql) && s.bindings.includes(id)).length;
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual(events);
  });
});

describe("graceful shutdown with an open SSE subscription", () => {
  it("ends the stream with `event: complete` before the connection closes, as graphql-ws gets 1001", async () => {
    const own = await startTestStack();
    let closed = false;
    try {
      const { key } = await own.createKey("1");
      const response = await fetch(`${own.url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ query: "subscription { tasks { id statusCode } }" }),
      });
      expect(response.status).toBe(200);
      // The raw stream, read until the server ends it: the subscription has started once its first bytes arrive.
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value, { stream: true });
      const stopped = own.close().then(() => (closed = true));
      for (;;) {
        const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (chunk.done) break;
        text += decoder.decode(chunk.value, { stream: true });
      }
      await stopped;
      expect(text).toMatch(/\n\nevent: complete\ndata:\n\n$/);
      expect(text).not.toContain("event: next");
    } finally {
      if (!closed) await own.close();
    }
  });
});
