/**
 * The RateLimit header fields (draft-ietf-httpapi-ratelimit-headers) on the answers of a
 * rate-limited key: `RateLimit-Policy: "default";q=<limit>;w=1` and
 * `RateLimit: "default";r=<remaining>;t=<seconds>` on the REST shims (generation and cloud) and
 * on `/graphql`, `Retry-After` still on a 429, nothing for an unlimited key. The subgraphs count
 * the limit and report it to the router in a response extension no client sees; both transports
 * (in-process and HTTP) carry it.
 *
 * The limit is a fixed 1-second window per key. A run of requests can straddle two windows on a
 * slow machine, so each check repeats its run with a fresh key until one run fits in one window
 * (seen by its first 429), instead of assuming anything about timing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";

/** What one answer said. */
interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** Parses `"default";r=3;t=1` (RateLimit) or `"default";q=5;w=1` (RateLimit-Policy) into its parameters. */
function parameters(field: string | null): Record<string, number> | null {
  if (field === null) return null;
  const [name, ...params] = field.split(";");
  expect(name).toBe('"default"');
  return Object.fromEntries(params.map((p) => p.split("=")).map(([k, v]) => [k, Number(v)]));
}

/**
 * Sends requests with a fresh key of `limit` per second until the first 429, up to limit + 1
 * requests; repeats (new key) until a run reached its 429 with every request in one window.
 * @returns the answers of that run: `limit` successes then one 429
 */
async function runToFirst429(t: TestStack, limit: number, send: (key: string) => Promise<Answer>): Promise<Answer[]> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { key } = await t.createKey("10", { rateLimit: limit });
    const answers: Answer[] = [];
    for (let i = 0; i <= limit; i++) {
      const answer = await send(key);
      answers.push(answer);
      if (answer.status === 429) break;
    }
    // A window that rolled over mid-run shows as `remaining` going up, or no 429 at the end.
    const remaining = answers.map((a) => parameters(a.headers.get("ratelimit"))?.r ?? -1);
    const oneWindow = answers.at(-1)!.status === 429 && remaining.every((r, i) => i === 0 || r <= remaining[i - 1]!);
    if (oneWindow) return answers;
  }
  throw new Error("no run of requests fitted in one rate-limit window in 5 attempts");
}

/** The checks every entry point must pass. */
function expectCountdown(answers: Answer[], limit: number): void {
  expect(
    answers
      .map((a) => a.status)
      .slice(0, limit)
      .every((s) => s === 200 || s === 201),
  ).toBe(true);
  expect(answers.at(-1)!.status).toBe(429);
  for (const answer of answers) expect(parameters(answer.headers.get("ratelimit-policy"))).toEqual({ q: limit, w: 1 });
  const limits = answers.map((a) => parameters(a.headers.get("ratelimit"))!);
  // One less per request in the window, down to 0; the refused request leaves 0.
  expect(limits.map((l) => l.r)).toEqual([...Array.from({ length: limit }, (_, i) => limit - 1 - i), 0]);
  for (const l of limits) expect(l.t).toBeGreaterThanOrEqual(1);
  // The 429 keeps Retry-After, and the RateLimit reset names the same moment.
  const refused = answers.at(-1)!;
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  expect(parameters(refused.headers.get("ratelimit"))!.t).toBe(Number(refused.headers.get("retry-after")));
}

/** POSTs a GraphQL operation and keeps the headers. */
async function graphql(t: TestStack, key: string | null, query: string, operationName?: string): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (key) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`${t.url}/graphql`, { method: "POST", headers, body: JSON.stringify({ query, operationName }) });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

describe.each([
  { transport: "in-process", env: {} as Record<string, string> },
  { transport: "HTTP", env: { SUBGRAPH_TRANSPORT: "http" } },
])("RateLimit headers with subgraphs reached $transport", ({ env }) => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack(env);
  });
  afterAll(async () => {
    await t.close();
  });

  it("counts down RateLimit on the generation REST API, then keeps Retry-After on the 429", async () => {
    const answers = await runToFirst429(t, 3, (key) => t.rest("GET", "/api/v1/tasks/task_missing", { key }));
    // 404 is still an answer to a counted request: it carries the headers too.
    expect(answers.slice(0, 3).map((a) => a.status)).toEqual([404, 404, 404]);
    expectCountdown(
      answers.map((a) => (a.status === 404 ? { ...a, status: 200 } : a)),
      3,
    );
  });

  it("counts down RateLimit on the cloud REST API, then keeps Retry-After on the 429", async () => {
    const answers = await runToFirst429(t, 3, (key) => t.rest("GET", "/openapi/v1/vendors", { key }));
    expectCountdown(answers, 3);
    expect(answers.at(-1)!.body.error.code).toBe("rate_limited");
  });

  it("counts down RateLimit on /graphql, one request reaching both subgraphs counting once, and never shows the subgraphs' note", async () => {
    const answers = await runToFirst429(t, 3, (key) => graphql(t, key, "query Both { viewer { id } vendors(first: 1) { nodes { id } } }"));
    expectCountdown(answers, 3);
    for (const answer of answers) expect(JSON.stringify(answer.body)).not.toContain("switchyardCaller");
  });

  it("sends no RateLimit headers for an unlimited key, nor for a request without a key", async () => {
    const { key } = await t.createKey("10");
    for (const answer of [
      await t.rest("GET", "/api/v1/tasks/task_missing", { key }),
      await t.rest("GET", "/openapi/v1/vendors", { key }),
      await graphql(t, key, "{ viewer { id } }"),
      await graphql(t, null, "{ models { id } }"),
      await t.rest("GET", "/openapi/v1/vendors"),
    ]) {
      expect(answer.headers.get("ratelimit")).toBeNull();
      expect(answer.headers.get("ratelimit-policy")).toBeNull();
    }
  });
});
