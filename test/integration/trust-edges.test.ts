/**
 * Trust at the edges (README "Security model"): nothing a client sends is trusted past the point
 * where it was checked. The router mints the id the rate limiter counts, states the client's
 * address and signs both to the subgraphs; a subgraph port serves only the router; graphql-ws
 * sees the client's address; authentication comes before the body size; a request signature is
 * accepted once. Runs on SQLite and (npm run test:pg) on PostgreSQL; the replay and rate-limit
 * cases also with Redis.
 */
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { wsClient, collect, collectSse } from "../support/graphql-ws.ts";
import { runCli } from "../support/process.ts";
import { signRequest } from "../../src/auth/signatures.ts";
import { signSubgraphRequest } from "../../subgraphs/shared/internal-context.ts";

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const SUBMIT = "mutation($input: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $input) { task { id } } }";

/** Balance of a key in yuan, read through the router (once its rate limit lets the read through). */
async function balanceOf(t: TestStack, key: string): Promise<string> {
  const answer = await waitUntil(
    () => t.graphql("{ viewer { balance { amount } } }", {}, key),
    (r) => Boolean(r.body.data?.viewer?.balance),
  );
  return answer.body.data.viewer.balance.amount;
}

/** Sends `count` requests at once; resolves with their statuses. */
function burst(count: number, send: (i: number) => Promise<{ status: number }>): Promise<number[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => send(i).then((r) => r.status)));
}

/** POSTs JSON to a subgraph port as anyone could, with the given headers. */
async function postToSubgraph(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any };
}

for (const store of ["memory", "redis"] as const) {
  describe(`rate limits count requests, not client request ids (${store} counters)`, () => {
    let t: TestStack;
    beforeAll(async () => {
      t = await startTestStack(store === "redis" ? { REDIS_URL, REDIS_KEY_PREFIX: `sy-test-trust-${randomUUID()}:` } : {});
    });
    afterAll(() => t?.close());

    it("gives a key limited to 5/s at most 5 answers per second on REST when every call carries the same X-Request-Id", async () => {
      // A burst that fits in one second must get exactly the limit; on a machine too loaded for
      // that, it is repeated with a fresh key, and the last try is held to the windows it spanned.
      for (let attempt = 1; ; attempt++) {
        const { key } = await t.createKey("10", { rateLimit: 5 });
        const started = Date.now();
        const statuses = await burst(30, () => t.rest("GET", "/api/v1/usage?limit=1", { key, headers: { "x-request-id": "same-id-every-time" } }));
        const elapsed = Date.now() - started;
        const answered = statuses.filter((s) => s === 200).length;
        expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
        expect(answered).toBeGreaterThan(0);
        if (elapsed < 1000) return void expect(answered).toBeLessThanOrEqual(5);
        if (attempt === 3) return void expect(answered).toBeLessThanOrEqual(5 * Math.ceil(elapsed / 1000 + 1));
      }
    });

    it("charges at most 5 of 15 parallel paid GraphQL submissions with one X-Request-Id on a 5/s key", async () => {
      const { key } = await t.createKey("100", { rateLimit: 5 });
      const started = Date.now();
      const statuses = await burst(15, (i) =>
        t.graphql(SUBMIT, { input: { modelId: 52, prompt: `burst ${i}`, seconds: 5 } }, key, { "x-request-id": "fixed" }).then((r) => ({
          // A refused alias is a null payload with its error (HTTP 200 with data, ADR 0006).
          status: r.body.data?.submitVideoGeneration?.task ? 200 : (r.body.errors?.[0]?.extensions?.http?.status ?? r.status),
        })),
      );
      const elapsed = Date.now() - started;
      const charged = statuses.filter((s) => s === 200).length;
      expect(charged).toBeLessThanOrEqual(elapsed < 1000 ? 5 : 5 * Math.ceil(elapsed / 1000 + 1));
      // Every accepted submission cost 5 yuan, every refused one nothing.
      expect(Number(await balanceOf(t, key))).toBe(100 - 5 * charged);
    });

    it("still echoes a client's X-Request-Id for correlation", async () => {
      const { key } = await t.createKey("10");
      const answer = await t.rest("GET", "/api/v1/usage?limit=1", { key, headers: { "x-request-id": "corr-42" } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-request-id")).toBe("corr-42");
    });

    it("accepts a request signature once: the same signed request sent again is 401, on REST and /graphql", async () => {
      const created = await t.createKey("20", { requireSignature: true });
      const now = Math.floor(Date.now() / 1000);
      const body = JSON.stringify({ model_id: 52, prompt: "signed once", seconds: 5 });
      const path = "/api/v1/video/generations";
      const headers = {
        authorization: `Bearer ${created.key}`,
        "content-type": "application/json",
        "x-service-signature": signRequest(created.webhook_secret, { method: "POST", path, body, timestamp: now }),
      };
      const first = await fetch(`${t.url}${path}`, { method: "POST", headers, body });
      expect(first.status).toBe(200);
      const replay = await fetch(`${t.url}${path}`, { method: "POST", headers, body });
      expect(replay.status).toBe(401);
      expect(await replay.json()).toEqual({ code: 401, message: "Request signature already used" });
      // A signed /graphql request that reaches both subgraphs presents its signature twice: one request, accepted.
      const query = JSON.stringify({ query: "{ viewer { balance { amount } orders(first: 1) { totalCount } } }" });
      const graphHeaders = {
        ...headers,
        "x-service-signature": signRequest(created.webhook_secret, { method: "POST", path: "/graphql", body: query, timestamp: now }),
      };
      const both = await fetch(`${t.url}/graphql`, { method: "POST", headers: graphHeaders, body: query }).then((r) => r.json() as Promise<any>);
      expect(both.errors).toBeUndefined();
      expect(both.data.viewer.balance.amount).toBe("15.00");
      const again = await fetch(`${t.url}/graphql`, { method: "POST", headers: graphHeaders, body: query }).then((r) => r.json() as Promise<any>);
      expect(again.errors[0]).toMatchObject({ message: "Request signature already used", extensions: { code: "unauthorized" } });
      expect(await balanceOfSigned(t, created)).toBe("15.00");
    });
  });
}

/** The balance of a key that requires signatures. */
async function balanceOfSigned(t: TestStack, created: { key: string; webhook_secret: string }): Promise<string> {
  const body = JSON.stringify({ query: `query Balance${randomUUID().replace(/-/g, "")} { viewer { balance { amount } } }` });
  const signature = signRequest(created.webhook_secret, { method: "POST", path: "/graphql", body, timestamp: Math.floor(Date.now() / 1000) });
  const answer = await fetch(`${t.url}/graphql`, {
    method: "POST",
    headers: { authorization: `Bearer ${created.key}`, "content-type": "application/json", "x-service-signature": signature },
    body,
  }).then((r) => r.json() as Promise<any>);
  return answer.data.viewer.balance.amount;
}

describe("the subgraph ports serve only the router", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t?.close());

  it("refuses an unsigned submission that claims an allow-listed client IP: 403, no task, no charge", async () => {
    const { key } = await t.createKey("10", { allowIps: ["203.0.113.7/32"] });
    const answer = await postToSubgraph(
      t.stack.generationUrl!,
      { query: SUBMIT, variables: { input: { modelId: 52, prompt: "through the side door", seconds: 5 } } },
      { authorization: `Bearer ${key}`, "x-switchyard-client-ip": "203.0.113.7", "x-request-id": "fixed", "x-switchyard-count-id": "fixed" },
    );
    expect(answer.status).toBe(403);
    expect(answer.body.errors[0]).toMatchObject({ message: "Subgraph requests must be signed by the router", extensions: { code: "forbidden" } });
    expect(answer.body.data).toBeUndefined();
    const tasks = await t.stack.db!("tasks").count({ n: "*" }).first();
    expect(Number(tasks!.n)).toBe(0);
  });

  it("refuses a request signed with another secret", async () => {
    const params = signSubgraphRequest("another-secret-".repeat(3), { query: "{ __typename }", audience: "cloud", headers: {} });
    const answer = await postToSubgraph(t.stack.cloudUrl!, params);
    expect(answer.status).toBe(403);
    expect(answer.body.errors[0]).toMatchObject({ message: "Invalid router signature", extensions: { code: "forbidden" } });
  });

  it("refuses a signed request whose internal context was altered after signing", async () => {
    const params = signSubgraphRequest(t.stack.subgraphSecret!, {
      query: "{ __typename }",
      audience: "cloud",
      headers: { "x-switchyard-client-ip": "127.0.0.1" },
    });
    (params.extensions!.switchyard as any).headers["x-switchyard-client-ip"] = "203.0.113.7";
    const answer = await postToSubgraph(t.stack.cloudUrl!, params);
    expect(answer.status).toBe(403);
  });

  it("hands out _service only to signed callers", async () => {
    for (const [audience, url] of [
      ["generation", t.stack.generationUrl!],
      ["cloud", t.stack.cloudUrl!],
    ]) {
      const unsigned = await postToSubgraph(url, { query: "{ _service { sdl } }" });
      expect(unsigned.status).toBe(403);
      expect(JSON.stringify(unsigned.body)).not.toContain("type Query");
      const signed = await postToSubgraph(url, signSubgraphRequest(t.stack.subgraphSecret!, { query: "{ _service { sdl } }", audience, headers: {} }));
      expect(signed.status).toBe(200);
      expect(signed.body.data._service.sdl).toContain("type Query");
    }
  });

  it("answers _entities with an unknown typename 400 invalid_request, not 500", async () => {
    const query = "query($r: [_Any!]!) { _entities(representations: $r) { __typename } }";
    for (const [audience, url] of [
      ["generation", t.stack.generationUrl!],
      ["cloud", t.stack.cloudUrl!],
    ]) {
      const params = signSubgraphRequest(t.stack.subgraphSecret!, { query, variables: { r: [{ __typename: "Nope", id: "x" }] }, audience, headers: {} });
      const answer = await postToSubgraph(url, params);
      expect(answer.body.errors[0].extensions).toMatchObject({ code: "invalid_request", http: { status: 400 } });
      expect(answer.body.errors[0].message).toBe("Unknown entity type: Nope");
    }
  });

  it("refuses an unsigned graphql-ws subscription on a subgraph port", async () => {
    const { key } = await t.createKey("10");
    const client = wsClient(t.stack.generationUrl!.replace(/\/graphql$/, ""), { authorization: `Bearer ${key}` });
    const { error, events } = await collect(client, "subscription { tasks { id } }").done;
    await client.dispose();
    expect(events).toEqual([]);
    expect(error[0]).toMatchObject({ message: "Subgraph requests must be signed by the router", extensions: { code: "forbidden" } });
  });

  it("answers GET /health on a subgraph port without a signature (readiness only)", async () => {
    const response = await fetch(new URL("/health", t.stack.generationUrl!));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });
});

describe("a split deployment without SUBGRAPH_SECRET", () => {
  it.each([["router"], ["generation"], ["cloud"]])("refuses to start %s with one line naming the variable", async (role) => {
    const run = await runCli(["start", role], { GENERATION_URL: "http://127.0.0.1:9/graphql", CLOUD_URL: "http://127.0.0.1:9/graphql", SUBGRAPH_SECRET: "" });
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^switchyard: SUBGRAPH_SECRET is required when the router and the subgraphs run as separate processes/);
  });

  it("refuses a SUBGRAPH_SECRET shorter than 32 characters", async () => {
    const run = await runCli(["start", "router"], {
      GENERATION_URL: "http://127.0.0.1:9/graphql",
      CLOUD_URL: "http://127.0.0.1:9/graphql",
      SUBGRAPH_SECRET: "short",
    });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe("switchyard: SUBGRAPH_SECRET must be at least 32 characters (for example: openssl rand -hex 32)");
  });
});

describe("graphql-ws sees the client's address", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack({ TRUST_PROXY: "loopback" });
  });
  afterAll(() => t?.close());

  /** Opens a graphql-ws connection with raw upgrade headers; resolves with the close code or "acked". */
  function connect(key: string, headers: Record<string, string> = {}): Promise<number | "acked"> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(`${t.url.replace(/^http/, "ws")}/graphql`, "graphql-transport-ws", { headers });
      socket.on("open", () => socket.send(JSON.stringify({ type: "connection_init", payload: { Authorization: `Bearer ${key}` } })));
      socket.on("message", (data) => {
        if (JSON.parse(String(data)).type === "connection_ack") {
          socket.close(1000);
          resolve("acked");
        }
      });
      socket.on("close", (code) => resolve(code));
      socket.on("error", reject);
    });
  }

  it("accepts a key allow-listed for 127.0.0.1/32 and ::1/128 from 127.0.0.1 and delivers its subscription", async () => {
    const { key } = await t.createKey("10", { allowIps: ["127.0.0.1/32", "::1/128"] });
    expect(await connect(key)).toBe("acked");
    const client = wsClient(t.url, { Authorization: `Bearer ${key}` });
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: { model_id: 52, prompt: "allow-listed", seconds: 5 } });
    expect(submitted.status).toBe(200);
    const { events, error } = await collect(client, "subscription($id: ID!) { taskStatusChanged(taskId: $id) { status } }", { id: submitted.body.data.task_id })
      .done;
    await client.dispose();
    expect(error).toBeUndefined();
    expect(events.at(-1).data.taskStatusChanged.status).toBe("SUCCEEDED");
  });

  it("follows TRUST_PROXY: X-Forwarded-For from a trusted proxy names the client that the allow-list checks", async () => {
    const { key: remoteOnly } = await t.createKey("10", { allowIps: ["203.0.113.9/32"] });
    const { key: localOnly } = await t.createKey("10", { allowIps: ["127.0.0.1/32"] });
    expect(await connect(remoteOnly, { "x-forwarded-for": "203.0.113.9" })).toBe("acked");
    expect(await connect(localOnly, { "x-forwarded-for": "203.0.113.9" })).toBe(4403);
    // A client cannot name its own address in the connection params or headers.
    expect(await connect(remoteOnly, { "x-switchyard-client-ip": "203.0.113.9" })).toBe(4403);
  });

  it("applies the same address to subscriptions over SSE", async () => {
    const { key } = await t.createKey("10", { allowIps: ["203.0.113.9/32"] });
    const submitted = await t.rest("POST", "/api/v1/video/generations", {
      key,
      headers: { "x-forwarded-for": "203.0.113.9" },
      body: { model_id: 52, prompt: "sse", seconds: 5 },
    });
    expect(submitted.status).toBe(200);
    const query = "subscription($id: ID!) { taskStatusChanged(taskId: $id) { status } }";
    const variables = { id: submitted.body.data.task_id };
    const allowed = await collectSse(t.url, query, variables, { authorization: `Bearer ${key}`, "x-forwarded-for": "203.0.113.9" });
    expect(allowed.events.at(-1)?.data?.taskStatusChanged?.status).toBe("SUCCEEDED");
    const refused = await collectSse(t.url, query, variables, { authorization: `Bearer ${key}`, "x-switchyard-client-ip": "203.0.113.9" });
    expect(refused.events.flatMap((e) => e.errors ?? []).map((e: any) => e.extensions?.code)).toContain("forbidden");
    expect(refused.events.some((e) => e.data?.taskStatusChanged)).toBe(false);
  });
});

describe("authentication before the body", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t?.close());

  const big = "x".repeat(1_100_000);

  it("answers 401, not 413, to a 1.1 MB POST without Authorization on every surface", async () => {
    const generation = await t.rest("POST", "/api/v1/video/generations", { rawBody: JSON.stringify({ prompt: big }) });
    expect(generation).toMatchObject({ status: 401, body: { code: 401, message: "Invalid or missing API key" } });
    const cloud = await t.rest("POST", "/openapi/v1/orders", { rawBody: JSON.stringify({ pad: big }) });
    expect(cloud.status).toBe(401);
    expect(cloud.body.error.code).toBe("unauthorized");
    const graph = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ __typename }", extensions: { pad: big } }),
    });
    expect(graph.status).toBe(401);
    expect(((await graph.json()) as any).errors[0].extensions.code).toBe("unauthorized");
  });

  it("keeps 413 for an oversized body that carries credentials", async () => {
    const { key } = await t.createKey("10");
    const generation = await t.rest("POST", "/api/v1/video/generations", { key, rawBody: JSON.stringify({ prompt: big }) });
    expect(generation.status).toBe(413);
  });

  it("answers 405 with a code of its own, method_not_allowed", async () => {
    const cloud = await t.rest("DELETE", "/openapi/v1/vendors");
    expect(cloud.status).toBe(405);
    expect(cloud.body.error).toMatchObject({ code: "method_not_allowed", message: "Method not allowed" });
    const generation = await t.rest("DELETE", "/api/v1/usage");
    expect(generation).toMatchObject({ status: 405, body: { code: 405, message: "Method not allowed" } });
  });
});

describe("errors in production", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack({ NODE_ENV: "production" });
  });
  afterAll(() => t?.close());

  it("do not say which subgraph answered (no extensions.serviceName)", async () => {
    const { key } = await t.createKey("10");
    const answer = await t.graphql('{ task(id: "task_missing") { id } viewer { customerBalance(customerId: "nope") { customerId } } }', {}, key);
    expect(answer.body.errors.length).toBeGreaterThan(0);
    for (const error of answer.body.errors) expect(error.extensions).not.toHaveProperty("serviceName");
  });
});
