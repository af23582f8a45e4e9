/**
 * GraphQL over SSE with the graphql-sse client library, in both of its modes (issue 21 §4; README
 * "Transports"; docs/adr/0021-transports.md): distinct connections (one POST per operation) and
 * single connection (PUT reserves a stream, GET opens it, POST runs operations on it, DELETE
 * stops one). Queries and the `taskStatusChanged` subscription, the key from the Authorization
 * header, the same limits as every transport; a stream token is its key's alone; shutdown and a
 * disabled key end the stream with `complete`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, type Client } from "graphql-sse";
import { setKeyStatus } from "../../src/auth/keys.ts";
import pino from "pino";
import { startRouter } from "../../router/server.ts";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { MAX_STREAMS_PER_KEY } from "../../router/graph/sse-single.ts";

const TASK_SUB = `subscription($id: ID!) { taskStatusChanged(taskId: $id) { id status } }`;
const BALANCE = "query Balance { viewer { balance { amount } } }";

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ SIMULATOR_STEP_MS: "150", TASK_POLL_INTERVAL_MS: "20" });
});
afterAll(() => t.close());

function sseClient(key: string, singleConnection: boolean, url = t.url): Client {
  return createClient({ url: `${url}/graphql`, singleConnection, headers: { authorization: `Bearer ${key}` }, retryAttempts: 0 });
}

/** Every result of one operation until it completes; an error the client raised is thrown. */
async function all(client: Client, query: string, variables: Record<string, unknown> = {}): Promise<any[]> {
  const results: any[] = [];
  for await (const result of client.iterate({ query, variables })) results.push(result);
  return results;
}

async function submit(key: string, prompt = "a kingfisher"): Promise<string> {
  const r = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt, model_id: 52 } });
  expect(r.status).toBe(200);
  return r.body.data.task_id as string;
}

/** Raw protocol requests of single connection mode. */
async function reserve(key: string): Promise<Response> {
  return fetch(`${t.url}/graphql`, { method: "PUT", headers: { authorization: `Bearer ${key}` } });
}

for (const singleConnection of [false, true]) {
  const mode = singleConnection ? "single connection mode" : "distinct connections mode";
  describe(`graphql-sse client, ${mode}`, () => {
    it("runs a query with the key from the Authorization header", async () => {
      const { key } = await t.createKey("6");
      const client = sseClient(key, singleConnection);
      try {
        expect(await all(client, BALANCE)).toEqual([{ data: { viewer: { balance: { amount: "6.00" } } } }]);
      } finally {
        client.dispose();
      }
    });

    it("streams taskStatusChanged to the terminal state, then completes", async () => {
      const { key } = await t.createKey("100");
      const id = await submit(key);
      const client = sseClient(key, singleConnection);
      try {
        const results = await all(client, TASK_SUB, { id });
        expect(results.at(-1).data.taskStatusChanged).toEqual({ id, status: "SUCCEEDED" });
        expect(results.every((r) => !r.errors)).toBe(true);
      } finally {
        client.dispose();
      }
    });

    it("applies the router's limits: a query over the cost limit answers query_too_costly", async () => {
      const { key } = await t.createKey("1");
      const client = sseClient(key, singleConnection);
      try {
        const results = await all(client, "{ products(first: 100) { nodes { vendor { products(first: 100) { nodes { id } } } } } }");
        expect(results.at(-1).errors[0].extensions.code).toBe("query_too_costly");
      } finally {
        client.dispose();
      }
    });
  });
}

describe("distinct connections mode", () => {
  it("hands a subscription refused for a bad key to the client as an unauthorized error, not a network failure", async () => {
    const owner = await t.createKey("100");
    const id = await submit(owner.key);
    const client = sseClient("sy_nope", false);
    try {
      const results = await all(client, TASK_SUB, { id });
      expect(results).toHaveLength(1);
      expect(results[0].errors[0].extensions).toMatchObject({ code: "unauthorized", http: { status: 401 } });
    } finally {
      client.dispose();
    }
  });
});

describe("single connection mode", () => {
  it("carries several operations on one stream at once, each to its own sink", async () => {
    const { key } = await t.createKey("100");
    const [first, second] = [await submit(key, "one"), await submit(key, "two")];
    const client = sseClient(key, true);
    try {
      const [a, b, c] = await Promise.all([all(client, TASK_SUB, { id: first }), all(client, TASK_SUB, { id: second }), all(client, BALANCE)]);
      expect(a.at(-1).data.taskStatusChanged).toEqual({ id: first, status: "SUCCEEDED" });
      expect(b.at(-1).data.taskStatusChanged).toEqual({ id: second, status: "SUCCEEDED" });
      expect(c).toHaveLength(1);
      expect(c[0].data.viewer.balance.amount).toEqual(expect.any(String));
    } finally {
      client.dispose();
    }
  });

  it("refuses a reservation without a valid key with 401 unauthorized", async () => {
    for (const headers of [{}, { authorization: "Bearer sy_nope" }] as Record<string, string>[]) {
      const response = await fetch(`${t.url}/graphql`, { method: "PUT", headers });
      expect(response.status).toBe(401);
      expect((await response.json()).errors[0].extensions.code).toBe("unauthorized");
    }
  });

  it(`holds at most ${MAX_STREAMS_PER_KEY} streams of one key: the next reservation is 429 too_many_subscriptions`, async () => {
    const { key } = await t.createKey("1");
    for (let i = 0; i < MAX_STREAMS_PER_KEY; i++) expect((await reserve(key)).status).toBe(201);
    const refused = await reserve(key);
    expect(refused.status).toBe(429);
    expect((await refused.json()).errors[0].extensions.code).toBe("too_many_subscriptions");
    // Another key is not held back by this one's streams.
    expect((await reserve((await t.createKey("1")).key)).status).toBe(201);
  });

  it("counts each request once against the key's rate limit: an operation's ownership check and its run are one request", async () => {
    // A fixed 1-second window: a run that straddles two windows (a slow machine) is retried with a fresh key.
    for (let attempt = 0; ; attempt++) {
      const { key } = await t.createKey("5", { rateLimit: 3 });
      const reserved = await reserve(key); // 1
      const headers = { authorization: `Bearer ${key}`, "x-graphql-event-stream-token": await reserved.text() };
      const stream = await fetch(`${t.url}/graphql`, { headers: { ...headers, accept: "text/event-stream" } }); // 2
      const run = (operationId: string) =>
        fetch(`${t.url}/graphql`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ query: BALANCE, extensions: { operationId } }),
        });
      const first = await run("first"); // 3
      const second = await run("second"); // 4: over the limit
      const events = await readUntil(stream.body!, 'event: complete\ndata: {"id":"first"}');
      await stream.body?.cancel();
      if (second.status !== 429 && attempt < 4) continue;
      expect([reserved.status, stream.status, first.status, second.status]).toEqual([201, 200, 202, 429]);
      // The first operation ran (its run was not counted a second time).
      expect(events).toContain('"payload":{"data":{"viewer":{"balance":{"amount":"5.00"}}}}');
      expect((await second.json()).errors[0].extensions).toMatchObject({ code: "rate_limited", retry_after_seconds: expect.any(Number) });
      expect(Number(second.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(second.headers.get("ratelimit")).toMatch(/;r=0;/);
      return;
    }
  });

  it("drops a reservation that is never opened once its time is up: its token is then unknown", async () => {
    // A second router over HTTP to the same subgraphs, with a short reservation time.
    const router = await startRouter({
      host: "127.0.0.1",
      port: 0,
      subgraphUrls: { generation: t.stack.generationUrl!, cloud: t.stack.cloudUrl! },
      production: false,
      bodyLimit: 1_048_576,
      logger: pino({ level: "silent" }),
      subgraphSecret: t.stack.subgraphSecret!,
      streamReservationTtlMs: 1_000,
    });
    try {
      const { key } = await t.createKey("1");
      const put = () => fetch(`${router.url}/graphql`, { method: "PUT", headers: { authorization: `Bearer ${key}` } });
      const open = async (token: string) => {
        const response = await fetch(`${router.url}/graphql`, {
          headers: { authorization: `Bearer ${key}`, accept: "text/event-stream", "x-graphql-event-stream-token": token },
        });
        await response.body?.cancel();
        return response.status;
      };
      // DELETE of no operation asks whether the stream exists without opening it: 200, then 404.
      const exists = async (token: string) =>
        (
          await fetch(`${router.url}/graphql?operationId=none`, {
            method: "DELETE",
            headers: { authorization: `Bearer ${key}`, "x-graphql-event-stream-token": token },
          })
        ).status;
      const idle = await (await put()).text();
      expect(await exists(idle)).toBe(200);
      // Opened in time, a reservation streams (this also shows the router works).
      expect(await open(await (await put()).text())).toBe(200);
      expect(
        await waitUntil(
          () => exists(idle),
          (status) => status === 404,
        ),
      ).toBe(404);
    } finally {
      await router.close();
    }
  });

  it("keeps a stream token to the key that reserved it: another key can neither open it, run on it nor stop its operations", async () => {
    const owner = await t.createKey("5");
    const other = await t.createKey("5");
    const reserved = await reserve(owner.key);
    expect(reserved.status).toBe(201);
    const token = await reserved.text();
    const as = (key: string, init: RequestInit & { headers?: Record<string, string> }, query = "") =>
      fetch(`${t.url}/graphql${query}`, { ...init, headers: { authorization: `Bearer ${key}`, "x-graphql-event-stream-token": token, ...init.headers } });
    const open = await as(other.key, { method: "GET", headers: { accept: "text/event-stream" } });
    expect(open.status).toBe(404);
    const run = await as(other.key, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: BALANCE, extensions: { operationId: "x" } }),
    });
    expect(run.status).toBe(404);
    const stop = await as(other.key, { method: "DELETE" }, "?operationId=x");
    expect(stop.status).toBe(404);
    // ... and the same token by query parameter: the same answer.
    const byQuery = await fetch(`${t.url}/graphql?token=${token}`, { headers: { authorization: `Bearer ${other.key}`, accept: "text/event-stream" } });
    expect(byQuery.status).toBe(404);

    // The owner's stream is untouched: it opens and carries the owner's operation.
    const stream = await as(owner.key, { method: "GET", headers: { accept: "text/event-stream" } });
    expect(stream.status).toBe(200);
    const ran = await as(owner.key, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: BALANCE, extensions: { operationId: "mine" } }),
    });
    expect(ran.status).toBe(202);
    const text = await readUntil(stream.body!, 'event: complete\ndata: {"id":"mine"}');
    expect(text).toContain('"payload":{"data":{"viewer":{"balance":{"amount":"5.00"}}}}');
    await stream.body!.cancel();
  });

  it("ends an open stream's subscriptions with `complete` for each on graceful shutdown", async () => {
    const own = await startTestStack();
    let closed = false;
    try {
      const { key } = await own.createKey("1");
      const token = await (await fetch(`${own.url}/graphql`, { method: "PUT", headers: { authorization: `Bearer ${key}` } })).text();
      const headers = { authorization: `Bearer ${key}`, "x-graphql-event-stream-token": token };
      const stream = await fetch(`${own.url}/graphql`, { headers: { ...headers, accept: "text/event-stream" } });
      const ran = await fetch(`${own.url}/graphql`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ query: "subscription { tasks { id } }", extensions: { operationId: "live" } }),
      });
      expect(ran.status).toBe(202);
      const stopped = own.close().then(() => (closed = true));
      const text = await readUntil(stream.body!, null);
      await stopped;
      expect(text).toMatch(/event: complete\ndata: \{"id":"live"\}\n\n$/);
    } finally {
      if (!closed) await own.close();
    }
  });

  it("ends a disabled key's stream with key_disabled and `complete` for each operation", async () => {
    const doomed = await t.createKey("1");
    const token = await (await reserve(doomed.key)).text();
    const headers = { authorization: `Bearer ${doomed.key}`, "x-graphql-event-stream-token": token };
    const stream = await fetch(`${t.url}/graphql`, { headers: { ...headers, accept: "text/event-stream" } });
    const ran = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ query: "subscription { tasks { id } }", extensions: { operationId: "doomed" } }),
    });
    expect(ran.status).toBe(202);
    await setKeyStatus(t.stack.db!, doomed.id, "disabled");
    const text = await readUntil(stream.body!, null);
    expect(text).toContain('"code":"key_disabled"');
    expect(text).toMatch(/event: complete\ndata: \{"id":"doomed"\}\n\n$/);
  });
});

/** Reads a stream's text until it contains `marker` (null: until it ends). */
async function readUntil(body: ReadableStream<Uint8Array>, marker: string | null): Promise<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (chunk.done) break;
    text += decoder.decode(chunk.value, { stream: true });
    if (marker !== null && text.includes(marker)) break;
  }
  reader.releaseLock();
  return text;
}
