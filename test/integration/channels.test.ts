/**
 * Channels with failover through the whole stack (README "Channels"; issue 16): real fake
 * providers over HTTP, each failing in one way, beside healthy ones. Every submission either
 * lands on a channel that accepts it or is refunded exactly once; the books stay exact.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../../src/ledger/index.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";

/** The channel columns these tests read. */
type ChannelRow = { id: string; status: string; probe_failures: number; next_probe_at: string };

/** The task columns these tests read. */
type TaskRow = { id: string; key_id: string; status: number; channel_id: string | null; result: string | null };

/** Model 52, 5 s: 5.00 yuan. */
const VIDEO_BODY = { prompt: "a lighthouse at dusk", model_id: 52, seconds: 5 };
const PRICE = 5000;

/** A loopback URL where nothing listens (connect refused). */
async function refusedUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

const posts = (fake: FakeUpstream) => fake.requests.filter((r) => r.method === "POST").length;

describe("channels: failover, money moved once, health", () => {
  let t: TestStack;
  let primary: FakeUpstream; // chn_default (GENERATION_UPSTREAM_URL), priority 0
  let healthy: FakeUpstream; // priority 5
  let failing: { http5xx: FakeUpstream; code: FakeUpstream; timeout: FakeUpstream };
  const ids: Record<string, string> = {};
  const figures: Record<string, unknown> = {};

  beforeAll(async () => {
    [primary, healthy] = await Promise.all([startFakeUpstream(), startFakeUpstream()]);
    const [http5xx, code, timeout] = await Promise.all([startFakeUpstream(), startFakeUpstream(), startFakeUpstream()]);
    failing = { http5xx, code, timeout };
    http5xx.onSubmit({ kind: "http_error", status: 503 });
    http5xx.setHistoryMode("fail"); // its probe fails too, until it recovers
    code.onSubmit({ kind: "business_error", code: 4001 });
    timeout.onSubmit({ kind: "hang" });
    t = await startTestStack({
      GENERATION_UPSTREAM_URL: primary.url,
      GENERATION_UPSTREAM_KEY: "primary-key",
      // Long enough that a healthy fake provider answers within it on a loaded machine (a late
      // answer would count as a refusal and fail the phases that expect every submission to land);
      // the hanging one costs this much per attempt until it is disabled.
      UPSTREAM_TIMEOUT_MS: "2000",
      CHANNEL_KEY_SECRET: "0123456789abcdef0123456789abcdef",
      CHANNEL_MAX_ATTEMPTS: "6",
      CHANNEL_PROBE_BASE_MS: "600000",
    });
    const channels = t.stack.channels!;
    const add = async (name: string, baseUrl: string, priority: number) =>
      (await channels.add({ name, baseUrl, apiKey: `${name}-key`, models: [52], priority })).id;
    ids.refused = await add("refused", await refusedUrl(), 10);
    ids.http5xx = await add("http5xx", http5xx.url, 10);
    ids.code = await add("code", code.url, 10);
    ids.timeout = await add("timeout", timeout.url, 10);
    ids.healthy = await add("healthy", healthy.url, 5);
  });
  afterAll(async () => {
    console.log("channel failover figures", JSON.stringify(figures));
    await t?.close();
    for (const fake of [primary, healthy, ...Object.values(failing ?? {})]) await fake?.close();
  });

  async function submitMany(key: string, n: number, concurrency = 4) {
    const results: { status: number; body: any }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next += 1;
          results.push(await t.rest("POST", "/api/v1/video/generations", { key, body: VIDEO_BODY }));
        }
      }),
    );
    return results;
  }

  it("stores the key encrypted and never shows it", async () => {
    const row = await t.stack.db!("channels").where({ id: ids.healthy }).first();
    expect(row.api_key).not.toContain("healthy-key");
    expect(row.api_key).toMatch(/^v1\./);
    const listed = await t.stack.channels!.list();
    expect(JSON.stringify(listed.map(({ sealedKey: _s, ...c }) => c))).not.toContain("healthy-key");
    // The provider receives the plain key.
    await t.rest("POST", "/api/v1/video/generations", { key: (await t.createKey("10")).key, body: VIDEO_BODY });
    expect(healthy.requests.at(-1)?.authorization).toBe("Bearer healthy-key");
  });

  it("lands every submission on a healthy channel, disables the failing ones, moves money once", async () => {
    const key = await t.createKey("1000");
    const healthyBefore = posts(healthy);
    const phase1 = await submitMany(key.key, 20);
    expect(phase1.every((r) => r.status === 200)).toBe(true);
    expect(posts(healthy) - healthyBefore).toBe(20);
    // Each failing channel was taken out after 3 failures in a row (in-flight ones may add a few).
    const byId = new Map((await t.stack.channels!.list()).map((c) => [c.id, c]));
    for (const name of ["refused", "http5xx", "code", "timeout"]) {
      const channel = byId.get(ids[name]!)!;
      expect(channel.status, name).toBe("AUTO_DISABLED");
      expect(channel.consecutiveFailures, name).toBeGreaterThanOrEqual(3);
      expect(channel.disabledReason, name).toMatch(/3 failed submissions in a row/);
      expect(channel.nextProbeAt, name).not.toBeNull();
      expect(channel.successes, name).toBe(0);
    }
    // The attempts of a failed-over task are on the task.
    const attemptsRows = await t.stack.db!("tasks").where({ key_id: key.id }).whereNotNull("channel_attempts");
    expect(attemptsRows.length).toBeGreaterThan(0);
    for (const row of attemptsRows) {
      const attempts = JSON.parse(row.channel_attempts);
      expect(row.channel_id).toBe(ids.healthy);
      expect(attempts.at(-1)).toMatchObject({ channelId: ids.healthy, outcome: "accepted" });
      for (const a of attempts.slice(0, -1)) expect(["transport", "http", "code", "timeout"]).toContain(a.outcome);
    }

    // Disabled mid-run: the healthy channel gets nothing more; the implicit one takes over.
    await t.stack.channels!.setStatus(ids.healthy!, false);
    const healthyAtDisable = posts(healthy);
    const phase2 = await submitMany(key.key, 10);
    expect(phase2.every((r) => r.status === 200)).toBe(true);
    expect(posts(healthy)).toBe(healthyAtDisable);
    expect(primary.accepted.length).toBe(10);

    // Every channel failing: refunded, once each.
    primary.onSubmit({ kind: "no_task_id" });
    const phase3 = await submitMany(key.key, 6, 2);
    expect(phase3.every((r) => r.status === 502)).toBe(true);

    // Finish the accepted tasks at their providers, each with its own result: polling asks the accepting channel.
    for (const a of healthy.accepted) healthy.setTask(a.taskId, { status: 1, result: `https://healthy.example/${a.taskId}.mp4` });
    for (const a of primary.accepted) primary.setTask(a.taskId, { status: 1, result: `https://primary.example/${a.taskId}.mp4` });
    const tasks = await t.waitForAccount(
      key.key,
      () => t.stack.db!<TaskRow>("tasks").where("key_id", key.id),
      (rows) => rows.every((r) => r.status === 1 || r.status === 2),
    );
    let succeeded = 0;
    let refundedTasks = 0;
    const perChannel: Record<string, number> = {};
    for (const task of tasks) {
      const refunds = await t.stack.db!("ledger_entries").where({ task_id: task.id, kind: "refund" });
      if (task.status === 1) {
        succeeded += 1;
        expect(refunds).toHaveLength(0);
        const channel = task.channel_id ?? "chn_default";
        perChannel[channel] = (perChannel[channel] ?? 0) + 1;
        expect(task.result).toMatch(channel === "chn_default" ? /^https:\/\/primary\.example\// : /^https:\/\/healthy\.example\//);
      } else {
        refundedTasks += 1;
        expect(refunds).toHaveLength(1);
        expect(Number(refunds[0].amount)).toBe(PRICE);
      }
    }
    expect(succeeded + refundedTasks).toBe(36);
    expect(refundedTasks).toBe(6);
    const wallet = await t.rest("GET", "/api/v1/usage", { key: key.key });
    expect(wallet.body.data.balance).toBe(1000 - 5 * succeeded);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
    const stats = Object.fromEntries(
      (await t.stack.channels!.list()).map((c) => [
        c.id === "chn_default" ? "chn_default" : Object.keys(ids).find((k) => ids[k] === c.id),
        { submissions: c.submissions, successes: c.successes, failures: c.failures, status: c.status },
      ]),
    );
    // The last enabled channel is never auto-disabled, however often it fails.
    expect(stats.chn_default!.status).toBe("ENABLED");
    expect(stats.chn_default!.failures).toBeGreaterThanOrEqual(3);
    Object.assign(figures, { submissions: 36, succeeded, refunded: refundedTasks, perChannelSucceeded: perChannel, channelStats: stats });
  });

  it("re-enables an auto-disabled channel when its probe answers, and backs off when it does not", async () => {
    failing.http5xx.setHistoryMode("echo");
    failing.http5xx.onSubmit({ kind: "accept" });
    const due = new Date(Date.now() - 1000).toISOString();
    await t.stack.db!("channels").whereIn("id", [ids.http5xx!, ids.refused!]).update({ next_probe_at: due }); // time has come
    const after = await waitUntil(
      () => t.stack.db!<ChannelRow>("channels").whereIn("id", [ids.http5xx!, ids.refused!]),
      (rows) => rows.find((r) => r.id === ids.http5xx)!.status === "ENABLED" && rows.find((r) => r.id === ids.refused)!.probe_failures === 1,
    );
    const refused = after.find((r) => r.id === ids.refused)!;
    expect(refused.status).toBe("AUTO_DISABLED");
    // Second failed probe waits twice the base: 1 200 s from now, give or take the test's own time.
    expect(Date.parse(refused.next_probe_at) - Date.now()).toBeGreaterThan(1_100_000);
    // The re-enabled channel takes new tasks again (highest priority now serving).
    t.stack.channels!.upstream.invalidate();
    const before = failing.http5xx.accepted.length;
    const response = await t.rest("POST", "/api/v1/video/generations", { key: (await t.createKey("10")).key, body: VIDEO_BODY });
    expect(response.status).toBe(200);
    expect(failing.http5xx.accepted.length).toBe(before + 1);
  });
});
