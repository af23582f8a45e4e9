/**
 * The router → subgraph hop is single-use (README "Security model", issue 20 finding 2): a
 * request captured between a router and a subgraph port and posted again is refused with 403
 * `forbidden` before anything runs, over HTTP and graphql-ws, on the same subgraph process, on
 * the other subgraph, and (PostgreSQL and Redis) on another process of the same subgraph. Each
 * subgraph fetch of one client request carries its own nonce, so a request that reaches one
 * subgraph several times still runs.
 */
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createClient } from "graphql-ws";
import { Redis } from "ioredis";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, startStack, type Stack } from "../../bin/stack.ts";
import { createKey } from "../../src/auth/keys.ts";
import { loadConfig } from "../../src/config.ts";
import { parseYuan } from "../../src/money.ts";
import type { Role } from "../../bin/roles.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { json, lineSink } from "../support/log-sink.ts";
import { startRecordingProxy, type RecordingProxy } from "../support/recording-proxy.ts";
import { untilEvent, wsClient } from "../support/graphql-ws.ts";
import { waitForState } from "../support/events.ts";
import { signSubgraphRequest } from "../../subgraphs/shared/internal-context.ts";

const SECRET = randomBytes(32).toString("hex");
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const VIDEO = { model_id: 52, prompt: "a heron over a lake", seconds: 5 };
const REPLAYED = { message: "Router signature already used", extensions: { code: "forbidden", http: { status: 403 } } };

/** One split deployment: subgraph processes (stacks of their own), a router that reaches them through recording proxies. */
interface Deployment {
  database: TestDatabase;
  generation: Stack;
  cloud: Stack;
  router: Stack;
  proxies: { generation: RecordingProxy; cloud: RecordingProxy };
  sink: ReturnType<typeof lineSink>;
  close(): Promise<void>;
}

/** Settings of every process of a deployment. */
function settings(database: TestDatabase, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...database.env,
    SUBGRAPH_SECRET: SECRET,
    PORT: "0",
    GENERATION_PORT: "0",
    CLOUD_PORT: "0",
    LOG_LEVEL: "warn",
    LOG_FORMAT: "json",
    TASK_POLL_INTERVAL_MS: "50",
    SIMULATOR_STEP_MS: "50",
    PROVISION_DELAY_MS: "60",
    ...extra,
  };
}

/** Starts one subgraph role as a process of its own would run it, logging into `sink`. */
function startRole(env: Record<string, string>, role: Role, sink: ReturnType<typeof lineSink>): Promise<Stack> {
  const config = loadConfig(env);
  return startStack(config, [role], createLogger(config, sink.stream));
}

/** A router alone, whose subgraph URLs are the proxies. */
async function startRouter(env: Record<string, string>, proxies: Deployment["proxies"]): Promise<{ router: Stack; dataDir: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-replay-router-"));
  const config = loadConfig({
    SUBGRAPH_SECRET: SECRET,
    DATA_DIR: dataDir,
    PORT: "0",
    LOG_LEVEL: "silent",
    ...env,
    GENERATION_URL: proxies.generation.url,
    CLOUD_URL: proxies.cloud.url,
  });
  return { router: await startStack(config, ["router"]), dataDir };
}

async function startDeployment(database: TestDatabase, extra: Record<string, string> = {}): Promise<Deployment> {
  const sink = lineSink();
  const env = settings(database, extra);
  const generation = await startRole(env, "generation", sink);
  const cloud = await startRole(env, "cloud", sink);
  const proxies = { generation: await startRecordingProxy(generation.generationUrl!), cloud: await startRecordingProxy(cloud.cloudUrl!) };
  const { router, dataDir } = await startRouter(extra, proxies);
  return {
    database,
    generation,
    cloud,
    router,
    proxies,
    sink,
    async close() {
      await router.close();
      await Promise.all([proxies.generation.close(), proxies.cloud.close()]);
      await cloud.close();
      await generation.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Submits a paid video task through the router's REST shim with the given request id; returns the task id. */
async function submitThroughRouter(routerUrl: string, key: string, requestId: string): Promise<string> {
  const response = await fetch(`${routerUrl}/api/v1/video/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-request-id": requestId },
    body: JSON.stringify(VIDEO),
  });
  const body = (await response.json()) as any;
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body.data.task_id;
}

/** The captured request body (text) of the router request with `requestId`, sent through `proxy`. */
function captured(proxy: RecordingProxy, requestId: string, operation: string): string {
  const found = proxy.requests.filter((body) => body.includes(operation) && JSON.parse(body).extensions?.switchyard?.headers?.["x-request-id"] === requestId);
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** POSTs a captured body to a subgraph port as an attacker on the internal network would. */
async function replay(url: string, body: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: response.status, body: await response.json() };
}

async function balanceOf(routerUrl: string, key: string): Promise<string> {
  const response = await fetch(`${routerUrl}/graphql`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ query: "{ viewer { balance { amount } } }" }),
  });
  return ((await response.json()) as any).data.viewer.balance.amount;
}

async function taskCount(stack: Stack, keyId: string): Promise<number> {
  const row = await stack.db!("tasks").where({ key_id: keyId }).count({ n: "*" }).first();
  return Number(row!.n);
}

describe("a captured router → subgraph request posted again", () => {
  let d: Deployment;
  beforeAll(async () => {
    d = await startDeployment(await createTestDatabase("switchyard-replay-"));
  });
  afterAll(async () => {
    await d?.close();
    await d?.database.drop();
  });

  it("is refused with 403 forbidden on its subgraph port: the key is charged once, and the refusal is logged at warn with the request id", async () => {
    const key = await createKey(d.generation.db!, { name: "replayed", balance: parseYuan("20") });
    await submitThroughRouter(d.router.url!, key.key, "replay-http-1");
    const body = captured(d.proxies.generation, "replay-http-1", "submitVideoGeneration");
    const answers = [await replay(d.generation.generationUrl!, body), await replay(d.generation.generationUrl!, body)];
    for (const answer of answers) expect(answer).toEqual({ status: 403, body: { errors: [REPLAYED] } });
    expect(await taskCount(d.generation, key.id)).toBe(1);
    expect(await balanceOf(d.router.url!, key.key)).toBe("15.00");
    const line = await d.sink.waitFor(json, (l) => l.msg === "subgraph request refused" && l.request_id === "replay-http-1");
    expect(line).toMatchObject({ level: 40, subgraph: "generation", reason: "Router signature already used" });
    expect(JSON.stringify(line)).not.toContain(key.key);
  });

  it("is refused by the other subgraph: a request is signed for the subgraph it was sent to", async () => {
    const key = await createKey(d.generation.db!, { name: "misdirected", balance: parseYuan("20") });
    await submitThroughRouter(d.router.url!, key.key, "replay-other-1");
    const toGeneration = captured(d.proxies.generation, "replay-other-1", "submitVideoGeneration");
    // The cloud process keeps nonces of its own (no Redis): only the audience refuses this one.
    expect(await replay(d.cloud.cloudUrl!, toGeneration)).toEqual({
      status: 403,
      body: { errors: [{ message: "Router signature is for another subgraph", extensions: { code: "forbidden", http: { status: 403 } } }] },
    });
    const read = await fetch(`${d.router.url}/openapi/v1/vendors?limit=1`, {
      headers: { authorization: `Bearer ${key.key}`, "x-request-id": "replay-other-2" },
    });
    expect(read.status).toBe(200);
    const toCloud = captured(d.proxies.cloud, "replay-other-2", "vendors");
    expect((await replay(d.generation.generationUrl!, toCloud)).status).toBe(403);
    expect((await replay(d.cloud.cloudUrl!, toCloud)).body).toEqual({ errors: [REPLAYED] });
  });

  it("gives each subgraph fetch of one client request a nonce of its own: a mutation that reaches generation twice charges both submissions", async () => {
    const key = await createKey(d.generation.db!, { name: "fan-out", balance: parseYuan("20") });
    const query = `mutation($a: SubmitVideoGenerationInput!, $b: SubmitVideoGenerationInput!) {
      a: submitVideoGeneration(input: $a) { task { id } }
      v: adminUpsertVendor(input: { name: "not an admin" }) { vendor { id } }
      b: submitVideoGeneration(input: $b) { task { id } } }`;
    const input = (prompt: string) => ({ modelId: 52, prompt, seconds: 5 });
    const response = await fetch(`${d.router.url}/graphql`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json", "x-request-id": "fan-out-1" },
      body: JSON.stringify({ query, variables: { a: input("first"), b: input("second") } }),
    });
    const body = (await response.json()) as any;
    expect(body.data.a.task.id).toMatch(/\S/);
    expect(body.data.b.task.id).toMatch(/\S/);
    expect(await balanceOf(d.router.url!, key.key)).toBe("10.00");
    const contexts = (proxy: RecordingProxy) =>
      proxy.requests.map((text) => JSON.parse(text).extensions.switchyard).filter((context) => context.headers["x-request-id"] === "fan-out-1");
    const generation = contexts(d.proxies.generation);
    const cloud = contexts(d.proxies.cloud);
    expect(generation).toHaveLength(2);
    expect(cloud).toHaveLength(1);
    expect(generation.map((c) => c.audience)).toEqual(["generation", "generation"]);
    expect(cloud[0].audience).toBe("cloud");
    expect(new Set([...generation, ...cloud].map((c) => c.nonce)).size).toBe(3);
  });

  it("refuses a captured graphql-ws subscribe message sent again on a new connection to the subgraph", async () => {
    const key = await createKey(d.generation.db!, { name: "ws-replayed", balance: parseYuan("200") });
    const client = wsClient(d.router.url!, { Authorization: `Bearer ${key.key}`, "X-Request-Id": "replay-ws-1" });
    const first = new Promise<void>((resolve) => {
      client.subscribe({ query: "subscription { tasks { id } }" }, { next: () => resolve(), error: () => {}, complete: () => {} });
    });
    try {
      // The router's subscription is live once its subscribe message went through the proxy.
      const subscribe = await waitForState(
        d.proxies.generation.events,
        "message",
        async () => d.proxies.generation.messages.find((m) => m.type === "subscribe"),
        (m) => m !== undefined,
      );
      // The subscribe message passing the proxy does not mean the subgraph listens yet: a task
      // submitted while it was still being set up is not seen, the next one is (at most 10).
      await untilEvent((i) => submitThroughRouter(d.router.url!, key.key, `replay-ws-trigger-1-${i}`), first);
      const attacker = createClient({ url: d.generation.generationUrl!.replace(/^http/, "ws"), webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
      const outcome = await new Promise<{ next?: any; error?: any }>((resolve) => {
        attacker.subscribe(subscribe.payload, { next: (next) => resolve({ next }), error: (error) => resolve({ error }), complete: () => resolve({}) });
        // An accepted replay would deliver this task's event.
        submitThroughRouter(d.router.url!, key.key, "replay-ws-trigger-2").catch(() => undefined);
      });
      await attacker.dispose();
      expect(outcome.next).toBeUndefined();
      expect(outcome.error).toEqual([REPLAYED]);
    } finally {
      await client.dispose();
    }
  });
});

describe("a captured request posted to another process of the same subgraph (PostgreSQL and Redis)", () => {
  const prefix = `switchyard-test:replay:${randomUUID().slice(0, 8)}:`;
  let d: Deployment;
  let second: Stack;
  beforeAll(async () => {
    const database = await createTestDatabase("switchyard-replay-pg-", { postgres: true });
    d = await startDeployment(database, { REDIS_URL, REDIS_KEY_PREFIX: prefix });
    second = await startRole(settings(database, { REDIS_URL, REDIS_KEY_PREFIX: prefix }), "generation", d.sink);
  });
  afterAll(async () => {
    await second?.close();
    await d?.close();
    await d?.database.drop();
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it("is refused there too: the nonce was claimed in Redis, and the key is charged once", async () => {
    const key = await createKey(d.generation.db!, { name: "replayed-elsewhere", balance: parseYuan("20") });
    await submitThroughRouter(d.router.url!, key.key, "replay-pg-1");
    const body = captured(d.proxies.generation, "replay-pg-1", "submitVideoGeneration");
    expect(await replay(second.generationUrl!, body)).toEqual({ status: 403, body: { errors: [REPLAYED] } });
    expect(await replay(d.generation.generationUrl!, body)).toEqual({ status: 403, body: { errors: [REPLAYED] } });
    expect(await taskCount(d.generation, key.id)).toBe(1);
    expect(await balanceOf(d.router.url!, key.key)).toBe("15.00");
    // The other process serves a freshly signed request.
    const fresh = signSubgraphRequest(SECRET, {
      query: "{ viewer { balance { amount } } }",
      audience: "generation",
      headers: { authorization: `Bearer ${key.key}`, "x-switchyard-client-ip": "127.0.0.1" },
    });
    expect((await replay(second.generationUrl!, JSON.stringify(fresh))).body).toMatchObject({ data: { viewer: { balance: { amount: "15.00" } } } });
  });
});
