/**
 * HTTP batching on `POST /graphql` (issue 21 §4; README "Transports"; docs/adr/0021-transports.md):
 * a JSON array of operations, at most GRAPHQL_BATCH_MAX, each run as if sent alone (rate limit,
 * scopes, cost, validation), answered in order; Apollo Client's BatchHttpLink against the router.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApolloClient, ApolloLink, InMemoryCache, gql } from "@apollo/client";
import { BatchHttpLink } from "@apollo/client/link/batch-http";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { signRequest } from "../../src/auth/signatures.ts";
import { json, lineSink } from "../support/log-sink.ts";

const BATCH_MAX = 5;
let t: TestStack;
const logs = lineSink();
beforeAll(async () => {
  t = await startTestStack({ GRAPHQL_BATCH_MAX: String(BATCH_MAX), LOG_LEVEL: "info", LOG_FORMAT: "json" }, { logs: logs.stream });
});
afterAll(() => t.close());

/** POSTs a raw JSON body to `/graphql`. */
async function post(body: unknown, key?: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${t.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) };
}

const BALANCE = "query Balance { viewer { balance { amount } } }";
const MODELS = "query Models { models { id } }";
const SUBMIT = `mutation Submit($prompt: String!) { submitImageGeneration(input: { prompt: $prompt, modelId: 45 }) { task { id } } }`;
const TASK_COUNT = "query TaskCount { viewer { tasks { totalCount } } }";

describe("a batch of operations in one POST", () => {
  it("answers every operation in order, as a JSON array with status 200", async () => {
    const { key } = await t.createKey("7");
    const r = await post([{ query: BALANCE }, { query: MODELS }, { query: "{ viewer { id } }" }], key);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    expect(r.body).toHaveLength(3);
    expect(r.body[0].data.viewer.balance.amount).toBe("7.00");
    expect(r.body[1].data.models.length).toBeGreaterThan(0);
    expect(r.body[2].data.viewer.id).toEqual(expect.any(String));
  });

  it("runs the operations one after another, so a query sees the mutation before it", async () => {
    const { key } = await t.createKey("10");
    const r = await post([{ query: SUBMIT, variables: { prompt: "first" } }, { query: SUBMIT, variables: { prompt: "second" } }, { query: TASK_COUNT }], key);
    expect(r.status).toBe(200);
    expect(r.body[0].data.submitImageGeneration.task.id).not.toBe(r.body[1].data.submitImageGeneration.task.id);
    expect(r.body[2].data.viewer.tasks.totalCount).toBe(2);
  });

  it("answers an operation that fails validation with its own error and runs the others", async () => {
    const { key } = await t.createKey("3");
    const r = await post([{ query: BALANCE }, { query: "{ viewer { noSuchField } }" }, { query: "{ viewer {" }, 42, { query: MODELS }], key);
    expect(r.status).toBe(200);
    expect(r.body[0].data.viewer.balance.amount).toBe("3.00");
    expect(r.body[1].data).toBeUndefined();
    expect(r.body[1].errors[0].extensions.code).toBe("graphql_validation_failed");
    expect(r.body[2].errors[0].extensions.code).toBe("graphql_parse_failed");
    expect(r.body[3].errors[0].extensions).toMatchObject({ code: "invalid_request", http: { status: 400 } });
    expect(r.body[4].data.models.length).toBeGreaterThan(0);
  });

  it("refuses a batch over GRAPHQL_BATCH_MAX with one 400 invalid_request and runs none of it", async () => {
    const { key } = await t.createKey("10");
    const tooMany = Array.from({ length: BATCH_MAX + 1 }, (_, i) => ({ query: SUBMIT, variables: { prompt: `over ${i}` } }));
    const r = await post(tooMany, key);
    expect(r.status).toBe(400);
    expect(r.body.errors).toHaveLength(1);
    expect(r.body.errors[0].extensions).toMatchObject({ code: "invalid_request", http: { status: 400 } });
    expect(r.body.errors[0].message).toContain(`at most ${BATCH_MAX}`);
    expect((await post({ query: TASK_COUNT }, key)).body.data.viewer.tasks.totalCount).toBe(0);
    expect((await post({ query: BALANCE }, key)).body.data.viewer.balance.amount).toBe("10.00");
  });

  it("refuses an empty batch with 400 invalid_request", async () => {
    const r = await post([]);
    expect(r.status).toBe(400);
    expect(r.body.errors[0].extensions.code).toBe("invalid_request");
  });

  it("counts every operation against the key's rate limit: a batch of three on a limit of two refuses the third", async () => {
    // A fixed 1-second window: a run that straddles two windows (a slow machine) is retried with a fresh key.
    for (let attempt = 0; ; attempt++) {
      const { key } = await t.createKey("10", { rateLimit: 2 });
      const r = await post([{ query: BALANCE }, { query: MODELS }, { query: BALANCE }], key);
      expect(r.status).toBe(200);
      const refused = r.body.map((answer: any) => answer.errors?.[0]?.extensions?.code === "rate_limited");
      if (!refused[2] && attempt < 4) continue;
      expect(refused).toEqual([false, false, true]);
      expect(r.body[0].data.viewer.balance.amount).toBe("10.00");
      expect(r.body[2].errors[0].extensions.http.status).toBe(429);
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(r.headers.get("ratelimit")).toMatch(/;r=0;/);
      return;
    }
  });

  it("checks each operation's scopes by itself: one the key lacks fails alone", async () => {
    const { key } = await t.createKey("5", { scopes: ["generation"] });
    const r = await post([{ query: "{ viewer { orders(first: 1) { totalCount } } }" }, { query: BALANCE }], key);
    expect(r.status).toBe(200);
    expect(r.body[0].errors[0].extensions).toMatchObject({ code: "forbidden", scope: "orders:read" });
    expect(r.body[1].data.viewer.balance.amount).toBe("5.00");
  });

  it("prices each operation alone: one over the cost limit fails, two that only together pass it both run", async () => {
    const { key } = await t.createKey("5");
    const costly = "{ products(first: 100) { nodes { vendor { products(first: 100) { nodes { id } } } } } }"; // 20300
    const half = "{ products(first: 100) { nodes { vendor { products(first: 20) { nodes { id } } } } } }"; // 4300 each, 8600 together
    const r = await post([{ query: costly }, { query: half }, { query: half }], key);
    expect(r.body[0].errors[0].extensions.code).toBe("query_too_costly");
    expect(r.body[1].errors).toBeUndefined();
    expect(r.body[2].errors).toBeUndefined();
  });

  it("answers a subscription in a batch with its own error: a batch runs queries and mutations only", async () => {
    const { key } = await t.createKey("5");
    const r = await post([{ query: "subscription { tasks { id } }" }, { query: BALANCE }], key);
    expect(r.status).toBe(200);
    expect(r.body[0].errors[0].extensions.code).toBe("invalid_request");
    expect(r.body[1].data.viewer.balance.amount).toBe("5.00");
  });

  it("refuses a batch that asks for an event stream with one invalid_request event: a batch is answered as JSON", async () => {
    const { key } = await t.createKey("5");
    const response = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${key}` },
      body: JSON.stringify([{ query: SUBMIT, variables: { prompt: "streamed" } }]),
    });
    const text = await response.text();
    expect(text).toMatch(/event: next\ndata: \{"errors":\[\{"message":"Batching is not supported\.","extensions":\{"code":"invalid_request"/);
    expect((await post({ query: TASK_COUNT }, key)).body.data.viewer.tasks.totalCount).toBe(0);
  });

  it("refuses a signed batch (a signature is accepted once per request) with 400 invalid_request", async () => {
    const { key, webhook_secret } = await t.createKey("5");
    const body = JSON.stringify([{ query: BALANCE }, { query: BALANCE }]);
    const signature = signRequest(webhook_secret, { method: "POST", path: "/graphql", body, timestamp: Date.now() / 1000 });
    const response = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "x-service-signature": signature },
      body,
    });
    expect(response.status).toBe(400);
    expect((await response.json()).errors[0].extensions.code).toBe("invalid_request");
  });
});

describe("what a batch leaves behind", () => {
  it("records each operation in the key's recent requests, as if each had been sent alone", async () => {
    const { key } = await t.createKey("5");
    const r = await post([{ query: BALANCE }, { query: MODELS }, { query: BALANCE }], key);
    expect(r.status).toBe(200);
    const usage = await t.rest("GET", "/api/v1/usage?limit=100", { key });
    const graphql = (usage.body.data.recent_requests as { path: string; method: string }[]).filter((row) => row.path === "/graphql");
    expect(graphql).toHaveLength(3);
  });

  it("logs one request line for the batch, naming its operations and the key", async () => {
    const { key, id } = await t.createKey("5");
    const response = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "x-request-id": "batch-log-1" },
      body: JSON.stringify([{ query: BALANCE }, { query: MODELS }]),
    });
    expect(response.status).toBe(200);
    const line = await logs.waitFor(json, (l: any) => l.msg === "request" && l.request_id === "batch-log-1");
    expect(line).toMatchObject({ route: "/graphql", operation_name: "Balance,Models", key_id: id, status: 200 });
  });
});

describe("Apollo Client's BatchHttpLink", () => {
  it("sends queries made together as one POST and gives each its own answer", async () => {
    const { key } = await t.createKey("8");
    const bodies: unknown[] = [];
    const link = new BatchHttpLink({
      uri: `${t.url}/graphql`,
      headers: { authorization: `Bearer ${key}` },
      batchMax: BATCH_MAX,
      batchInterval: 20,
      fetch: (input, init) => {
        bodies.push(JSON.parse(String(init?.body)));
        return fetch(input, init);
      },
    });
    const client = new ApolloClient({ link: ApolloLink.from([link]), cache: new InMemoryCache() });
    const [balance, models] = await Promise.all([
      client.query<{ viewer: { balance: { amount: string } } }>({ query: gql(BALANCE), fetchPolicy: "no-cache" }),
      client.query<{ models: { id: number }[] }>({ query: gql(MODELS), fetchPolicy: "no-cache" }),
    ]);
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toHaveLength(2);
    expect(balance.data?.viewer.balance.amount).toBe("8.00");
    expect(models.data?.models.length).toBeGreaterThan(0);
  });
});
