/**
 * `/metrics` (docs/architecture.md §2.13; README "Observability") on a real stack: the router counts requests by
 * route pattern and GraphQL operations by capped name, follows open subscriptions over graphql-ws
 * and SSE, the generation upstream's failures are counted by kind, tasks by model and outcome,
 * channel attempts by outcome with their durations, and ledger totals, the ledger's balance
 * check, channel states and outbox backlog are read from the database when scraped. Values are
 * compared before and after each action, so the tests do not depend on one another's order.
 * (Naming and types are linted by promtool in test/e2e/prometheus.test.ts.)
 */
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MODEL_IDS } from "../../src/generation/catalog.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { collect, wsClient } from "../support/graphql-ws.ts";
import { parseExposition, sampleValue, type Sample } from "../support/metrics.ts";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";

const TOKEN = "metrics-token-for-tests-123";
const VIDEO_BODY = { prompt: "a red fox", model_id: 69, seconds: 5, resolution: "480P" };

/** Scrapes `/metrics` at `base` (with the bearer token when given) and parses it. */
async function scrapeFrom(base: string, token?: string): Promise<Sample[]> {
  const response = await fetch(`${base}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await response.text());
}

/** How much a sample grew between two scrapes. */
function growth(before: Sample[], after: Sample[], name: string, labels: Record<string, string> = {}): number {
  return sampleValue(after, name, labels) - sampleValue(before, name, labels);
}

describe("/metrics of a running stack", () => {
  let t: TestStack;
  let fake: FakeUpstream;
  let key: string;

  const scrape = (base = t.url) => scrapeFrom(base, TOKEN);

  beforeAll(async () => {
    fake = await startFakeUpstream();
    t = await startTestStack({ GENERATION_UPSTREAM_URL: fake.url, METRICS_TOKEN: TOKEN });
    key = (await t.createKey("100")).key;
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it("counts a REST submission exactly once under its route pattern, never under a raw path", async () => {
    const before = await scrape();
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: VIDEO_BODY });
    expect(submitted.status).toBe(200);
    const taskId = submitted.body.data.task_id;
    expect((await t.rest("GET", `/api/v1/tasks/${taskId}`, { key })).status).toBe(200);
    const after = await scrape();

    const submit = { route: "/api/v1/video/generations", method: "POST", status: "200" };
    expect(sampleValue(after, "switchyard_http_requests_total", submit) - sampleValue(before, "switchyard_http_requests_total", submit)).toBe(1);
    const read = { route: "/api/v1/tasks/:task_id", method: "GET", status: "200" };
    expect(sampleValue(after, "switchyard_http_requests_total", read) - sampleValue(before, "switchyard_http_requests_total", read)).toBe(1);
    const durations = { route: "/api/v1/video/generations", method: "POST" };
    expect(
      sampleValue(after, "switchyard_http_request_duration_seconds_count", durations) -
        sampleValue(before, "switchyard_http_request_duration_seconds_count", durations),
    ).toBe(1);
    expect(after.some((s) => Object.values(s.labels).some((v) => v.includes(taskId)))).toBe(false);
  });

  it("labels unknown paths `other` and counts their 404", async () => {
    const before = await scrape();
    expect((await t.rest("GET", "/no/such/path/abc123")).status).toBe(404);
    const after = await scrape();
    const labels = { route: "other", method: "GET", status: "404" };
    expect(sampleValue(after, "switchyard_http_requests_total", labels) - sampleValue(before, "switchyard_http_requests_total", labels)).toBe(1);
    expect(after.some((s) => s.labels.route?.includes("abc123"))).toBe(false);
  });

  it("counts GraphQL operations by name, type and outcome: ok, error and invalid", async () => {
    const before = await scrape();
    expect((await t.graphql("query DashboardProbe { viewer { id balance { amount } } }", {}, key)).body.errors).toBeUndefined();
    const missing = await t.graphql('query MissingTask { task(id: "task_does_not_exist") { id } }', {}, key);
    expect(missing.body.errors?.length).toBeGreaterThan(0);
    const invalid = await t.graphql("query NoSuchField { noSuchField }", {}, key);
    expect(invalid.body.errors?.[0]?.message).toMatch(/noSuchField/);
    const after = await scrape();

    const diff = (labels: Record<string, string>) =>
      sampleValue(after, "switchyard_graphql_operations_total", labels) - sampleValue(before, "switchyard_graphql_operations_total", labels);
    expect(diff({ operation_name: "DashboardProbe", operation_type: "query", outcome: "ok" })).toBe(1);
    expect(diff({ operation_name: "MissingTask", operation_type: "query", outcome: "error" })).toBe(1);
    expect(diff({ operation_name: "NoSuchField", operation_type: "query", outcome: "invalid" })).toBe(1);
    // Three requests on /graphql, whatever status each answered with.
    const graphqlRequests = (samples: Sample[]) =>
      samples
        .filter((s) => s.name === "switchyard_http_requests_total" && s.labels.route === "/graphql" && s.labels.method === "POST")
        .reduce((n, s) => n + s.value, 0);
    expect(graphqlRequests(after) - graphqlRequests(before)).toBe(3);
    const duration = { operation_name: "DashboardProbe", operation_type: "query" };
    expect(sampleValue(after, "switchyard_graphql_operation_duration_seconds_count", duration)).toBe(1);
  });

  it("keeps at most 100 operation names: unnamed ones are `anonymous`, names beyond the cap `other`", async () => {
    expect((await t.graphql("{ __typename }", {}, key)).status).toBe(200);
    for (let batch = 0; batch < 11; batch++) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => t.graphql(`query CapProbe${batch * 10 + i} { __typename }`, {}, key)));
    }
    const samples = (await scrape()).filter((s) => s.name === "switchyard_graphql_operations_total");
    const names = new Set(samples.map((s) => s.labels.operation_name));
    expect(names.has("anonymous")).toBe(true);
    expect(names.has("other")).toBe(true);
    names.delete("anonymous");
    names.delete("other");
    expect(names.size).toBe(100);
  });

  it("shows subscriptions open over graphql-ws and SSE, and back to zero once they close", async () => {
    const open = async () => sampleValue(await scrape(), "switchyard_subscriptions_open");
    expect(await open()).toBe(0);
    const client = wsClient(t.url, { Authorization: `Bearer ${key}` });
    const overWs = collect(client, "subscription WatchTasks { tasks { id status } }");
    await waitUntil(open, (n) => n === 1);

    const aborter = new AbortController();
    const sse = await fetch(`${t.url}/graphql`, {
      method: "POST",
      signal: aborter.signal,
      headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: "subscription WatchTasksSse { tasks { id status } }" }),
    });
    expect(sse.status).toBe(200);
    await waitUntil(open, (n) => n === 2);

    overWs.stop();
    await client.dispose();
    await waitUntil(open, (n) => n === 1);
    aborter.abort();
    await waitUntil(open, (n) => n === 0);
  });

  it("counts upstream failures by kind and operation, not accepted submissions", async () => {
    const before = await scrape();
    fake.onSubmit({ kind: "http_error", status: 500 });
    expect((await t.rest("POST", "/api/v1/video/generations", { key, body: VIDEO_BODY })).status).toBe(502);
    fake.onSubmit({ kind: "business_error", code: 500 });
    expect((await t.rest("POST", "/api/v1/video/generations", { key, body: VIDEO_BODY })).status).toBe(502);
    fake.onSubmit({ kind: "accept" });
    expect((await t.rest("POST", "/api/v1/video/generations", { key, body: VIDEO_BODY })).status).toBe(200);
    const after = await scrape();
    const diff = (labels: Record<string, string>) =>
      sampleValue(after, "switchyard_upstream_errors_total", labels) - sampleValue(before, "switchyard_upstream_errors_total", labels);
    expect(diff({ kind: "http", operation: "submit" })).toBe(1);
    expect(diff({ kind: "code", operation: "submit" })).toBe(1);
    const submitErrors = after.filter((s) => s.name === "switchyard_upstream_errors_total" && s.labels.operation === "submit").reduce((n, s) => n + s.value, 0);
    const submitErrorsBefore = before
      .filter((s) => s.name === "switchyard_upstream_errors_total" && s.labels.operation === "submit")
      .reduce((n, s) => n + s.value, 0);
    expect(submitErrors - submitErrorsBefore).toBe(2);
  });

  it("reads ledger totals in milli-yuan from the database when scraped", async () => {
    const before = await scrape();
    await t.createKey("2.5");
    const after = await scrape();
    expect(
      sampleValue(after, "switchyard_ledger_entries_total", { kind: "topup" }) - sampleValue(before, "switchyard_ledger_entries_total", { kind: "topup" }),
    ).toBe(1);
    const credit = { kind: "topup", direction: "credit" };
    expect(sampleValue(after, "switchyard_ledger_milliyuan_total", credit) - sampleValue(before, "switchyard_ledger_milliyuan_total", credit)).toBe(2500);
    // Each figure equals the books: entries and amounts by kind, straight from the ledger.
    const rows: { kind: string; n: number; total: number }[] = await t.stack.db!("ledger_entries")
      .select("kind")
      .count({ n: "*" })
      .sum({ total: "amount" })
      .groupBy("kind");
    for (const row of rows) {
      expect(sampleValue(after, "switchyard_ledger_entries_total", { kind: row.kind })).toBe(Number(row.n));
      const credited = sampleValue(after, "switchyard_ledger_milliyuan_total", { kind: row.kind, direction: "credit" });
      const debited = sampleValue(after, "switchyard_ledger_milliyuan_total", { kind: row.kind, direction: "debit" });
      expect(credited - debited).toBe(Number(row.total));
    }
  });

  it("reports the outbox backlog and the age of its oldest row, and zero once it is published", async () => {
    const db = t.stack.db!;
    const hourAgo = new Date(Date.now() - 3600_000).toISOString();
    // A row the dispatcher holds a lease on (as if another instance had claimed it and stalled).
    const [inserted] = await db("outbox")
      .insert({
        topic: "metrics.test",
        account_id: "acc_metrics",
        aggregate_id: "agg_metrics",
        payload: "{}",
        created_at: hourAgo,
        lease_until: new Date(Date.now() + 3600_000).toISOString(),
      })
      .returning("id");
    const id = typeof inserted === "object" ? inserted.id : inserted;
    const stalled = await scrape();
    expect(sampleValue(stalled, "switchyard_outbox_pending")).toBeGreaterThanOrEqual(1);
    expect(sampleValue(stalled, "switchyard_outbox_lag_seconds")).toBeGreaterThanOrEqual(3599);
    expect(sampleValue(stalled, "switchyard_outbox_lag_seconds")).toBeLessThan(3700);

    await db("outbox").where({ id }).update({ lease_until: null });
    const published = await waitUntil(scrape, (s) => sampleValue(s, "switchyard_outbox_lag_seconds") < 60);
    expect(sampleValue(published, "switchyard_outbox_lag_seconds")).toBeLessThan(60);
  });

  it("serves the database figures on a subgraph's own port too", async () => {
    const subgraphBase = new URL(t.stack.generationUrl!).origin;
    const samples = await scrape(subgraphBase);
    expect(samples.some((s) => s.name === "switchyard_ledger_entries_total")).toBe(true);
    expect(samples.some((s) => s.name === "switchyard_outbox_lag_seconds")).toBe(true);
    expect((await fetch(`${subgraphBase}/metrics`)).status).toBe(401);
  });

  it("exposes switchyard_build_info = 1 labelled with package.json's version and the Node.js version", async () => {
    const { version } = JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    const info = (await scrape()).filter((s) => s.name === "switchyard_build_info");
    expect(info).toEqual([{ name: "switchyard_build_info", labels: { version, node: process.versions.node }, value: 1 }]);
  });

  it("counts channel submissions by outcome from the database, and observes each attempt's duration in seconds", async () => {
    const channel = { channel: "chn_default" };
    const before = await scrape();
    fake.onSubmit({ kind: "http_error", status: 503 });
    expect((await t.rest("POST", "/api/v1/video/generations", { key, body: VIDEO_BODY })).status).toBe(502);
    fake.onSubmit({ kind: "accept" });
    const sent = performance.now();
    expect((await t.rest("POST", "/api/v1/video/generations", { key, body: VIDEO_BODY })).status).toBe(200);
    const requestSeconds = (performance.now() - sent) / 1000;
    // A scrape writes this process's summed successes before it reads the rows (README "Channels").
    const accepted = { ...channel, outcome: "accepted" };
    const failed = { ...channel, outcome: "failed" };
    const after = await waitUntil(scrape, (s) => growth(before, s, "switchyard_channel_submissions_total", accepted) === 1);
    expect(growth(before, after, "switchyard_channel_submissions_total", failed)).toBe(1);
    expect(growth(before, after, "switchyard_channel_submit_duration_seconds_count", accepted)).toBe(1);
    expect(growth(before, after, "switchyard_channel_submit_duration_seconds_count", failed)).toBe(1);
    const seconds = growth(before, after, "switchyard_channel_submit_duration_seconds_sum", accepted);
    expect(seconds).toBeGreaterThan(0);
    // Seconds, not milliseconds: the attempt fits inside the request that made it.
    expect(seconds).toBeLessThanOrEqual(requestSeconds);
    // The counters are the row's.
    const row = await t.stack.db!("channels").where({ id: "chn_default" }).first();
    expect(sampleValue(after, "switchyard_channel_submissions_total", accepted)).toBe(Number(row.successes));
    expect(sampleValue(after, "switchyard_channel_submissions_total", failed)).toBe(Number(row.failures));
    // The renamed figures are gone (docs/upgrading.md "Metrics renamed").
    expect(after.some((s) => /^switchyard_channel_(submissions|successes|failures|success_ratio|submit_latency_ms_avg)$/.test(s.name))).toBe(false);
  });

  it("shows a channel the database holds AUTO_DISABLED as auto-disabled and not up", async () => {
    const db = t.stack.db!;
    const now = new Date().toISOString();
    await db("channels").insert({
      id: "chn_metrics_off",
      name: "metrics test",
      base_url: "http://127.0.0.1:9",
      models: "[69]",
      status: "AUTO_DISABLED",
      disabled_reason: "3 failed submissions in a row",
      next_probe_at: new Date(Date.now() + 3600_000).toISOString(),
      created_at: now,
      updated_at: now,
    });
    try {
      const samples = await scrape();
      expect(sampleValue(samples, "switchyard_channel_auto_disabled", { channel: "chn_metrics_off" })).toBe(1);
      expect(samples.find((s) => s.name === "switchyard_channel_up" && s.labels.channel === "chn_metrics_off")?.value).toBe(0);
      expect(sampleValue(samples, "switchyard_channel_auto_disabled", { channel: "chn_default" })).toBe(0);
      expect(sampleValue(samples, "switchyard_channel_up", { channel: "chn_default" })).toBe(1);
    } finally {
      await db("channels").where({ id: "chn_metrics_off" }).delete();
    }
  });

  it("reports 0 ledger imbalance while the books hold, and the difference when a balance moves without a ledger entry", async () => {
    const { account_id } = await t.createKey("3");
    expect(sampleValue(await scrape(), "switchyard_ledger_imbalance_milliyuan")).toBe(0);
    const db = t.stack.db!;
    await db("accounts").where({ id: account_id }).increment("balance", 1234);
    try {
      expect(sampleValue(await scrape(), "switchyard_ledger_imbalance_milliyuan")).toBe(1234);
    } finally {
      await db("accounts").where({ id: account_id }).decrement("balance", 1234);
    }
    expect(sampleValue(await scrape(), "switchyard_ledger_imbalance_milliyuan")).toBe(0);
  });

  it("answers 401 without the METRICS_TOKEN bearer token, and to a wrong one", async () => {
    const bare = await fetch(`${t.url}/metrics`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await bare.text()).not.toMatch(/switchyard_/);
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: "Bearer wrong-token" } })).status).toBe(401);
    expect((await fetch(`${t.url}/metrics`, { headers: { authorization: `Basic ${TOKEN}` } })).status).toBe(401);
  });
});

describe("task counters by model and outcome", () => {
  let t: TestStack;
  let fake: FakeUpstream;
  let key: string;
  // Model 52 (5 s at 720P), which no other test of this stack submits.
  const BODY = { prompt: "a grey heron", model_id: 52, seconds: 5, resolution: "720P" };

  beforeAll(async () => {
    fake = await startFakeUpstream();
    // Deadline 3 s: a task the provider never finishes expires within the test.
    t = await startTestStack({ GENERATION_UPSTREAM_URL: fake.url, TASK_DEADLINE_SECONDS: "3" });
    key = (await t.createKey("100")).key;
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  /** Submits a task the provider accepts, and returns our task id and the provider's. */
  async function submitAccepted(): Promise<{ id: string; upstream: string }> {
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: BODY });
    expect(submitted.status).toBe(200);
    const id: string = submitted.body.data.task_id;
    return { id, upstream: fake.accepted.find((a) => a.clientReference === id)!.taskId };
  }

  it("has every catalog model and outcome at 0 before the first task", async () => {
    const samples = await scrapeFrom(t.url);
    for (const model of MODEL_IDS.map(String)) {
      expect(samples.some((s) => s.name === "switchyard_tasks_submitted_total" && s.labels.model === model)).toBe(true);
      for (const outcome of ["succeeded", "failed", "rejected", "expired"])
        expect(samples.some((s) => s.name === "switchyard_tasks_total" && s.labels.model === model && s.labels.outcome === outcome)).toBe(true);
    }
  });

  it("counts each task once, when it ends: succeeded, failed, rejected (no channel took it) or expired (deadline)", async () => {
    const before = await scrapeFrom(t.url);
    const succeeded = await submitAccepted();
    fake.setTask(succeeded.upstream, { status: 1, result: "https://media.example.com/heron.mp4" });
    const failed = await submitAccepted();
    fake.setTask(failed.upstream, { status: 2, error: "the heron flew away" });
    fake.onSubmit({ kind: "http_error", status: 500 });
    expect((await t.rest("POST", "/api/v1/video/generations", { key, body: BODY })).status).toBe(502);
    fake.onSubmit({ kind: "accept" });
    const expired = await submitAccepted(); // left running upstream
    expect((await t.waitForTask(key, succeeded.id)).status).toBe(1);
    expect((await t.waitForTask(key, failed.id)).status).toBe(2);
    expect((await t.waitForTask(key, expired.id, (task) => task.status === 2, 20_000)).error).toBe("Generation timed out");

    const after = await scrapeFrom(t.url);
    const model = { model: "52" };
    expect(growth(before, after, "switchyard_tasks_submitted_total", model)).toBe(4);
    for (const outcome of ["succeeded", "failed", "rejected", "expired"]) {
      expect({ outcome, growth: growth(before, after, "switchyard_tasks_total", { ...model, outcome }) }).toEqual({ outcome, growth: 1 });
    }
    // Nothing counted under another model.
    const others = (samples: Sample[]) =>
      samples.filter((s) => s.name === "switchyard_tasks_total" && s.labels.model !== "52").reduce((n, s) => n + s.value, 0);
    expect(others(after) - others(before)).toBe(0);
  }, 40_000);
});

describe("/metrics without METRICS_TOKEN", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack({ TRUST_PROXY: "loopback" });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("answers a loopback client", async () => {
    const response = await fetch(`${t.url}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/^# HELP switchyard_/m);
  });

  it("answers 403 to a client on another host, as named by a trusted proxy", async () => {
    const response = await fetch(`${t.url}/metrics`, { headers: { "x-forwarded-for": "203.0.113.9" } });
    expect(response.status).toBe(403);
    expect(await response.text()).toMatch(/METRICS_TOKEN/);
  });
});
