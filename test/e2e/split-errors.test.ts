/**
 * A split deployment whose subgraph process is gone (issue 20, finding 1): the generation and the
 * cloud subgraphs each run as a real `switchyard start <role>` process, the router beside them
 * reaches them over HTTP with GENERATION_URL and CLOUD_URL. When a subgraph process stops, every
 * answer on every surface (GraphQL POST and GET, SSE, graphql-ws, both REST shims, an open
 * subscription, partial data) carries the registry's code, message and status and nothing else:
 * not the internal request the gateway sent (the caller's key, `x-switchyard-*`, the internal
 * query, the HMAC signature), not which subgraph failed. The router logs each failure at warn
 * with the request id, without the key or the signature.
 *
 * The second case stops the cloud process as well (the first stops generation only).
 */
import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/auth/keys.ts";
import { loadConfig } from "../../src/config.ts";
import { openDb } from "../../src/db/index.ts";
import { parseYuan } from "../../src/money.ts";
import { startStack, type Stack } from "../../bin/stack.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { freePort } from "../support/deploy.ts";
import { collect, sseEvents, wsClient } from "../support/graphql-ws.ts";
import { startCli, type RunningProcess } from "../support/process.ts";

const BALANCE = "{ viewer { balance { amount } } }";
const TASKS = "subscription { tasks { id statusCode } }";
/** The one error a client may see when a subgraph cannot be reached, as `/graphql` answers it. */
const UNAVAILABLE = (path?: string[]) => ({
  message: "Service unavailable",
  ...(path ? { path } : {}),
  extensions: { code: "service_unavailable", http: { status: 503 } },
});

describe("a split deployment whose subgraph process stopped", () => {
  let database: TestDatabase;
  let generation: RunningProcess;
  let cloud: RunningProcess;
  let router: Stack;
  let key: string;
  const secret = randomBytes(32).toString("hex");
  const logLines: any[] = [];
  let rawLog = "";

  beforeAll(async () => {
    database = await createTestDatabase("switchyard-split-errors-", { postgres: true });
    const [generationPort, cloudPort] = [await freePort(), await freePort()];
    const env = { ...database.env, HOST: "127.0.0.1", SUBGRAPH_SECRET: secret };
    generation = startCli(["start", "generation"], { ...env, GENERATION_PORT: String(generationPort) });
    await generation.waitFor(/Generation subgraph:\s+http/, 120_000);
    cloud = startCli(["start", "cloud"], { ...env, CLOUD_PORT: String(cloudPort) });
    await cloud.waitFor(/Cloud subgraph:\s+http/, 120_000);
    const db = openDb(loadConfig(env));
    try {
      ({ key } = await createKey(db, { name: "split", balance: parseYuan("10") }));
    } finally {
      await db.destroy();
    }
    // The router in this process, its log captured: what an operator would read.
    const sink = new Writable({
      write(chunk, _encoding, done) {
        rawLog += chunk;
        for (const line of String(chunk).split("\n")) if (line) logLines.push(JSON.parse(line));
        done();
      },
    });
    router = await startStack(
      loadConfig({
        ...env,
        PORT: "0",
        GENERATION_URL: `http://127.0.0.1:${generationPort}/graphql`,
        CLOUD_URL: `http://127.0.0.1:${cloudPort}/graphql`,
      }),
      ["router"],
      pino({ level: "info" }, sink),
    );
  }, 300_000);

  afterAll(async () => {
    await router?.close();
    await Promise.all([generation?.stop(), cloud?.stop()]);
    await database?.drop();
  });

  const auth = () => ({ authorization: `Bearer ${key}` });
  const post = (query: string, headers: Record<string, string> = {}) =>
    fetch(`${router.url}/graphql`, { method: "POST", headers: { ...auth(), "content-type": "application/json", ...headers }, body: JSON.stringify({ query }) });
  /** An SSE answer: its status, request id and `next` payloads until `complete`. */
  const sse = async (response: Response) => {
    const events: any[] = [];
    for await (const event of sseEvents(response.body!)) events.push(event);
    return { status: response.status, requestId: response.headers.get("x-request-id"), events };
  };
  /** The warn lines of the router's log for a request id. */
  const warnings = (requestId: string | null) => logLines.filter((line) => line.level === 40 && line.request_id === requestId);

  /** Nothing the router sent a subgraph reached the log: not the key, not the signature, not the secret. */
  function expectNoSecretsLogged() {
    expect(rawLog).not.toContain(key);
    expect(rawLog).not.toContain(secret);
    expect(rawLog).not.toMatch(/hmac-signature|Bearer /i);
  }

  it("answers code, message and status alone on POST, GET, SSE, graphql-ws, partial data, an open subscription and REST generation", {
    timeout: 120_000,
  }, async () => {
    expect(await (await post(BALANCE)).json()).toEqual({ data: { viewer: { balance: { amount: "10.00" } } } });
    // Open before the stop: a graphql-ws socket with a subscription, and an SSE subscription.
    const ws = wsClient(router.url!, auth());
    try {
      const open = collect(ws, TASKS);
      const openSse = sse(await post(TASKS, { accept: "text/event-stream" }));
      await generation.stop();

      const viaPost = await post(BALANCE);
      expect(viaPost.status).toBe(503);
      expect(await viaPost.json()).toEqual({ errors: [UNAVAILABLE(["viewer"])] });

      const viaGet = await fetch(`${router.url}/graphql?query=${encodeURIComponent(BALANCE)}`, { headers: auth() });
      expect(viaGet.status).toBe(503);
      expect(await viaGet.json()).toEqual({ errors: [UNAVAILABLE(["viewer"])] });

      const viaSse = await sse(await post(BALANCE, { accept: "text/event-stream" }));
      expect(viaSse.events).toEqual([{ errors: [UNAVAILABLE(["viewer"])] }]);

      expect(await collect(ws, BALANCE).done).toEqual({ events: [{ errors: [UNAVAILABLE(["viewer"])] }] });

      // Partial data: the cloud half answers, the generation half is the one clean error.
      const partial = await post(`{ viewer { balance { amount } } vendors(first: 1) { nodes { id } } }`);
      expect(partial.status).toBe(200);
      expect(await partial.json()).toEqual({ data: { viewer: null, vendors: { nodes: [{ id: expect.any(String) }] } }, errors: [UNAVAILABLE(["viewer"])] });

      // The subscriptions that were open end with the error (SSE drops `http` from a stream's events).
      expect(await open.done).toEqual({ events: [{ errors: [UNAVAILABLE(["tasks"])] }] });
      expect((await openSse).events).toEqual([{ errors: [{ message: "Service unavailable", path: ["tasks"], extensions: { code: "service_unavailable" } }] }]);

      for (const [method, path, body] of [
        ["GET", "/api/v1/usage", undefined],
        ["GET", "/api/v1/tasks/task_missing", undefined],
        ["POST", "/api/v1/video/generations", JSON.stringify({ model_id: 52, prompt: "a heron", seconds: 5 })],
      ] as const) {
        const answer = await fetch(`${router.url}${path}`, { method, headers: { ...auth(), "content-type": "application/json" }, body });
        expect([path, answer.status, await answer.json()]).toEqual([path, 503, { code: 503, message: "Service unavailable" }]);
        expect(warnings(answer.headers.get("x-request-id")), path).toEqual([expect.objectContaining({ subgraph: "generation" })]);
      }

      for (const answer of [viaPost, viaGet, partial]) {
        expect(warnings(answer.headers.get("x-request-id"))).toEqual([
          expect.objectContaining({
            subgraph: "generation",
            code: "SUBREQUEST_HTTP_ERROR",
            path: "viewer",
            msg: "gateway error answered as service_unavailable",
          }),
        ]);
      }
      expect(warnings(viaSse.requestId)).toHaveLength(1);
      expectNoSecretsLogged();
    } finally {
      await ws.dispose();
    }
  });

  it("answers the cloud REST shim, an SSE subscription's key check and a graphql-ws connection without internals when the cloud process stops", {
    timeout: 120_000,
  }, async () => {
    await Promise.all([generation.stop(), cloud.stop()]);
    for (const [method, path, body] of [
      ["GET", "/openapi/v1/orders", undefined],
      ["GET", "/openapi/v1/vendors", undefined],
      ["POST", "/openapi/v1/orders", JSON.stringify({ client_order_no: "SO-1", product_id: "prd_cdn_standard", quantity: 1 })],
    ] as const) {
      const answer = await fetch(`${router.url}${path}`, { method, headers: { ...auth(), "content-type": "application/json" }, body });
      const requestId = answer.headers.get("x-request-id");
      expect([path, answer.status, await answer.json()]).toEqual([
        path,
        503,
        { success: false, request_id: requestId, error: { code: "service_unavailable", message: "Service unavailable", details: {} } },
      ]);
      expect(warnings(requestId), path).toEqual([expect.objectContaining({ subgraph: "cloud" })]);
    }

    // The key check of an SSE subscription asks the cloud subgraph: its failure is the same clean error.
    // (An event stream answers 200 with its errors in a `next` event, so graphql-sse clients hand
    // them to the caller: router/plugins/useEventStreamStatus.ts.)
    const refused = await sse(await post(TASKS, { accept: "text/event-stream" }));
    expect(refused.status).toBe(200);
    expect(refused.events).toEqual([{ errors: [UNAVAILABLE()] }]);
    expect(warnings(refused.requestId)).toEqual([expect.objectContaining({ subgraph: "cloud", path: "apiKey" })]);

    // graphql-ws: a key the graph cannot check is "try again later", not 4403 (a bad key).
    const closed = await new Promise<{ code: number; reason: string }>((resolve) => {
      const client = wsClient(router.url!, auth());
      client.on("closed", (event: any) => resolve({ code: event.code, reason: String(event.reason) }));
      client.subscribe({ query: TASKS }, { next: () => {}, error: () => {}, complete: () => {} });
    });
    expect(closed).toEqual({ code: 1013, reason: "Service unavailable" });
    expectNoSecretsLogged();
  });
});
