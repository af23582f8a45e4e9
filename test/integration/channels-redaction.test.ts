/**
 * What a provider says never carries a key (README "Security model"; issue 20 finding 3): two
 * fake providers — the implicit channel (GENERATION_UPSTREAM_URL) and a stored channel — refuse
 * submissions, fail status polls, fail tasks and fail probes with texts holding the channel's
 * key, the other channel's key, a bearer token, an `sk-` key and a URL with a password. The
 * provider's words reach the task, the callback, the channel's `disabledReason` and attempts, the
 * test answer and the logs with every one of them replaced by `[redacted]`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCallbackReceiver, type CallbackReceiver } from "../support/callback-receiver.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { waitForState } from "../support/events.ts";
import { lineSink } from "../support/log-sink.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const ADMIN_TOKEN = "redaction-admin-token";
const METRICS_TOKEN = "redaction-metrics-token-123";
const CHANNEL_KEY = "chan-b-key-81d2e4c7";
const UPSTREAM_KEY = "gen-upstream-key-7f3a9c55";
const FOREIGN_BEARER = "tok0ABCDEFGH12345678";
const SK_KEY = "sk-proj-Zx81bQ2m9LkP4r7T";
const URL_PASSWORD = "hunter2pass";
const SECRETS = [CHANNEL_KEY, UPSTREAM_KEY, FOREIGN_BEARER, SK_KEY, URL_PASSWORD];

/** A provider's complaint holding every kind of secret. */
const SAID =
  `quota exceeded for Bearer ${CHANNEL_KEY}; retry with Authorization: Bearer ${FOREIGN_BEARER}; ` +
  `key ${UPSTREAM_KEY} also seen; org key ${SK_KEY}; billing https://billing:${URL_PASSWORD}@provider.example/quota`;
/** The same complaint as we keep it. */
const CLEAN =
  "quota exceeded for Bearer [redacted]; retry with Authorization: [redacted]; " +
  "key [redacted] also seen; org key [redacted]; billing https://[redacted]@provider.example/quota";

/** A refusal's text keeps the first 200 characters of the provider's (redacted) words. */
const WORDS = CLEAN.slice(0, 200);

/** Model 52, 5 s: 5.00 yuan. */
const VIDEO_BODY = { prompt: "a lighthouse at dusk", model_id: 52, seconds: 5 };

/** Asserts that no secret appears in `value` (any shape, as JSON). */
function expectNoSecret(value: unknown, where: string): void {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  for (const secret of SECRETS) expect(text.includes(secret), `${where} holds ${secret}`).toBe(false);
}

describe("provider texts are redacted before they are stored, shown, sent or logged", () => {
  let t: TestStack;
  let implicit: FakeUpstream; // chn_default, key UPSTREAM_KEY
  let stored: FakeUpstream; // a stored channel, key CHANNEL_KEY, tried first for model 52
  let receiver: CallbackReceiver;
  let channelId: string;
  const sink = lineSink();
  const { lines, stream: logs } = sink;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    [implicit, stored, receiver] = await Promise.all([startFakeUpstream(), startFakeUpstream(), startCallbackReceiver()]);
    t = await startTestStack(
      {
        GENERATION_UPSTREAM_URL: implicit.url,
        GENERATION_UPSTREAM_KEY: UPSTREAM_KEY,
        CHANNEL_KEY_SECRET: "redaction-secret-0123456789abcdef",
        CHANNEL_FAILURE_THRESHOLD: "1",
        CHANNEL_PROBE_BASE_MS: "600000",
        ADMIN_TOKEN,
        METRICS_TOKEN,
        LOG_LEVEL: "debug",
        LOG_FORMAT: "json",
      },
      { logs },
    );
    channelId = (await t.stack.channels!.add({ name: "stored", baseUrl: stored.url, apiKey: CHANNEL_KEY, models: [52], priority: 10 })).id;
  });
  afterAll(async () => {
    await t?.close();
    for (const server of [implicit, stored, receiver]) await server?.close();
  });

  it("keeps the keys out of a refused submission: the answers, the task row, its attempts and the channel's disabledReason", async () => {
    stored.onSubmit({ kind: "business_error", code: 429, message: SAID });
    implicit.onSubmit({ kind: "http_error", status: 503, message: SAID });
    const key = await t.createKey("10");

    const rest = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO_BODY });
    expect(rest.status).toBe(502);
    expect(rest.body).toEqual({ code: 502, message: "Upstream request failed" });
    // Both providers were asked and both refused with the secrets in their words.
    expect(stored.requests.filter((r) => r.method === "POST")).toHaveLength(1);
    expect(implicit.requests.filter((r) => r.method === "POST")).toHaveLength(1);

    const graphql = await t.graphql(`mutation { submitVideoGeneration(input: { prompt: "a fox", modelId: 52, seconds: 5 }) { task { id } } }`, {}, key.key);
    // The registry's code and message only: no `reason` with the provider's words.
    expect(graphql.body.errors[0]).toMatchObject({ message: "Upstream request failed", extensions: { code: "upstream_failed", http: { status: 502 } } });
    expect(graphql.body.errors[0].extensions).not.toHaveProperty("reason");
    expectNoSecret(graphql.body, "the GraphQL answer");

    const rows = await t.stack.db!("tasks").where({ key_id: key.id }).orderBy("created_at");
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.error).toBe("Upstream request failed");
      expectNoSecret(row, "the task row");
    }
    // The operator still reads why each channel refused, in the provider's own words.
    const attempts = JSON.parse(rows[0].channel_attempts);
    expect(attempts).toEqual([
      expect.objectContaining({ channelId, outcome: "code", error: `business code 429: ${WORDS}` }),
      expect.objectContaining({ channelId: "chn_default", outcome: "http", error: `HTTP 503: ${WORDS}` }),
    ]);

    const channels = await t.graphql(`{ adminChannels { id status disabledReason baseUrl } }`, {}, undefined, admin);
    const channel = channels.body.data.adminChannels.find((c: any) => c.id === channelId);
    expect(channel.status).toBe("AUTO_DISABLED");
    expect(channel.disabledReason).toBe(`1 failed submissions in a row; last: code: business code 429: ${WORDS}`);
    expectNoSecret(channels.body, "adminChannels");
  });

  it("keeps the keys out of a failed task: REST, GraphQL, the task.failed callback, the row and its refund", async () => {
    stored.onSubmit({ kind: "accept" });
    await t.stack.channels!.setStatus(channelId, true);
    const key = await t.createKey("10", { callbackUrl: receiver.url });
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO_BODY });
    expect(submitted.status).toBe(200);
    const taskId = submitted.body.data.task_id as string;
    const upstreamTaskId = stored.accepted.at(-1)!.taskId;

    // A status poll that fails: the poller's log line carries the provider's words, redacted.
    stored.failPolls({ status: 500, message: SAID });
    await sink.waitFor(
      (line) => line,
      (line) => line.includes(taskId) && line.includes("task poll failed"),
    );
    stored.failPolls(null);
    stored.setTask(upstreamTaskId, { status: 2, error: SAID });
    const task = await t.waitForTask(key.key, taskId);
    expect(task).toMatchObject({ status: 2, error: CLEAN });

    const graphql = await t.graphql(`query($id: ID!) { task(id: $id) { error } }`, { id: taskId }, key.key);
    expect(graphql.body.data.task.error).toBe(CLEAN);

    const row = await t.stack.db!("tasks").where({ id: taskId }).first();
    expect(row.error).toBe(CLEAN);
    const ledger = await t.stack.db!("ledger_entries").where({ task_id: taskId });
    expectNoSecret(ledger, "the ledger entries");

    const callbacks = await waitForState(
      receiver.events,
      "received",
      async () => receiver.received.map((r) => JSON.parse(r.body)).filter((b) => b.data?.task_id === taskId),
      (found) => found.some((b) => b.event === "task.failed"),
    );
    expect(callbacks.find((b) => b.event === "task.failed").data.error).toBe(CLEAN);
    expectNoSecret(callbacks, "the callbacks");
  });

  it("keeps the keys out of a failed probe (adminTestChannel) and of the metrics", async () => {
    stored.setHistoryMode("fail", SAID);
    const tested = await t.graphql(`mutation($id: ID!) { adminTestChannel(input: { id: $id }) { ok error } }`, { id: channelId }, undefined, admin);
    expect(tested.body.data.adminTestChannel).toEqual({ ok: false, error: `http: HTTP 500: ${WORDS}` });
    stored.setHistoryMode("echo");

    const metrics = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(metrics.status).toBe(200);
    expectNoSecret(await metrics.text(), "/metrics");
  });

  it("logged every one of these failures without a key", () => {
    // The refusals, the poll failure and the auto-disable were logged, with the provider's words.
    expect(lines.some((l) => l.includes("channel refused the submission") && l.includes("quota exceeded for Bearer [redacted]"))).toBe(true);
    expect(lines.some((l) => l.includes("task poll failed") && l.includes("quota exceeded for Bearer [redacted]"))).toBe(true);
    expect(lines.some((l) => l.includes("channel auto-disabled"))).toBe(true);
    for (const line of lines) expectNoSecret(line, `the log line ${line.slice(0, 120)}`);
  });
});
