/**
 * Channel types through the whole stack (issue 24; ADR 0023): a Kling channel failing over to a
 * channel of another type for the same model, charged once with `verify` clean; a Kling result
 * fetched by the customer through the router's signed `/media/p/` URL; the provider's usage on
 * the task and in `adminChannels`; a request no channel of the model can do refused with 400
 * before any debit. Real stack, fake providers over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../../src/ledger/index.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { startFakeKling, type FakeKling } from "../support/providers/kling.ts";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";

const ADMIN_TOKEN = "channel-types-admin-token";
/** Model 52, 5 s: 5.000 yuan. */
const VIDEO = { prompt: "a lighthouse at dusk", model_id: 52, seconds: 5, size: "16:9" };

describe("channel types through the stack", () => {
  let t: TestStack;
  let kling: FakeKling;
  let other: FakeUpstream;
  let key: { key: string };
  const ids: Record<string, string> = {};
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const balance = async () => (await t.rest("GET", "/api/v1/usage", { key: key.key })).body.data.balance;

  beforeAll(async () => {
    [kling, other] = await Promise.all([startFakeKling(), startFakeUpstream()]);
    t = await startTestStack({ ADMIN_TOKEN, CHANNEL_KEY_SECRET: "0123456789abcdef0123456789abcdef", CHANNEL_PROBE_BASE_MS: "600000" });
    const channels = t.stack.channels!;
    await channels.setStatus("chn_default", false);
    ids.kling = (await channels.add({ name: "kling", type: "kling", baseUrl: kling.url, models: [52, 39], priority: 10, ...kling.credentials })).id;
    ids.other = (await channels.add({ name: "relay", baseUrl: other.url, apiKey: "relay-key", models: [52], priority: 5 })).id;
    key = await t.createKey("50");
  });
  afterAll(async () => {
    await t?.close();
    await kling?.close();
    await other?.close();
  });

  it("fails over from a refusing Kling channel to a channel of another type, charging once", async () => {
    kling.next({ kind: "server_error", status: 500 });
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO });
    expect(submitted.status).toBe(200);
    const taskId = submitted.body.data.task_id;
    const row = await t.stack.db!("tasks").where({ id: taskId }).first();
    expect(row.channel_id).toBe(ids.other);
    expect(
      JSON.parse(row.channel_attempts).map((a: { channelId: string; outcome: string; error?: string }) => [a.channelId, a.outcome, a.error ?? null]),
    ).toEqual([
      [ids.kling, "http", "HTTP 500: code 5000: Server internal error"],
      [ids.other, "accepted", null],
    ]);
    other.setTask(row.upstream_task_id, { status: 1, result: "https://relay.example/v.mp4" });
    const done = await t.waitForTask(key.key, taskId, (task) => task.status === 1);
    expect(done.result).toBe("https://relay.example/v.mp4");
    expect(await balance()).toBe(45);
    expect(await t.stack.db!("ledger_entries").where({ task_id: taskId })).toHaveLength(1);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });

  it("serves a Kling result through the router's signed URL, and shows the provider's usage on the task and the channel", async () => {
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO });
    const taskId = submitted.body.data.task_id;
    expect((await t.stack.db!("tasks").where({ id: taskId }).first()).channel_id).toBe(ids.kling);
    kling.settle(kling.lastTaskId(), "succeeded");
    const done = await t.waitForTask(key.key, taskId, (task) => task.status === 1);
    expect(done.result.startsWith(`${t.url}/media/p/`)).toBe(true);
    expect(done.result).not.toContain(kling.url);
    const media = await fetch(done.result);
    expect(media.status).toBe(200);
    expect(Buffer.from(await media.arrayBuffer()).equals(kling.content)).toBe(true);
    const task = await t.graphql(`query($id: ID!) { task(id: $id) { price { amount } providerUsage { seconds points } } }`, { id: taskId }, key.key);
    expect(task.body.data.task).toEqual({ price: { amount: "5.00" }, providerUsage: { seconds: 5.042, points: null } });
    const listed = await t.graphql(`{ adminChannels { id type stats { providerUsage { seconds images } providerUsageTasks } } }`, undefined, undefined, admin);
    expect(listed.body.data.adminChannels.find((c: { id: string }) => c.id === ids.kling)).toEqual({
      id: ids.kling,
      type: "KLING",
      stats: { providerUsage: { seconds: 5.042, images: 0 }, providerUsageTasks: 1 },
    });
    expect(await balance()).toBe(40);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });

  it("refuses a request no channel of the model can do with 400 before any debit, sending nothing", async () => {
    const before = await balance();
    const posts = kling.requests.filter((r) => r.method === "POST").length;
    // Model 39 is served by the Kling channel only, and Kling's video ratios are 16:9, 9:16 and 1:1.
    const refused = await t.rest("POST", "/api/v1/video/generations", {
      key: key.key,
      body: { prompt: "a lighthouse", model_id: 39, seconds: 5, size: "4:3" },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 400, message: "size has an unsupported value" });
    expect(await balance()).toBe(before);
    expect(kling.requests.filter((r) => r.method === "POST").length).toBe(posts);
    expect(await t.stack.db!("tasks").where({ model_id: 39 })).toHaveLength(0);
  });

  it("charges model 69 by the points Kling reports, never above the price debited, the rest refunded", async () => {
    const channel = await t.stack.channels!.add({ name: "kling-69", type: "kling", baseUrl: kling.url, models: [69], ...kling.credentials });
    const before = await balance();
    // 5 s at 720P: ceil(5 × 3.0) = 15 points × 0.125 yuan = 1.875 yuan debited.
    const submitted = await t.rest("POST", "/api/v1/video/generations", {
      key: key.key,
      body: { prompt: "a lighthouse", model_id: 69, seconds: 5, resolution: "720P", size: "16:9" },
    });
    expect(submitted.status).toBe(200);
    const taskId = submitted.body.data.task_id;
    expect((await t.stack.db!("tasks").where({ id: taskId }).first()).channel_id).toBe(channel.id);
    kling.reportPoints(10);
    kling.settle(kling.lastTaskId(), "succeeded");
    kling.reportPoints(null);
    await t.waitForTask(key.key, taskId, (task) => task.status === 1);
    const refunds = await t.stack.db!("ledger_entries").where({ task_id: taskId, kind: "refund" });
    expect(refunds.map((r: { amount: number | string }) => Number(r.amount))).toEqual([625]);
    expect(await balance()).toBeCloseTo(before - 1.25, 3);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
    await t.stack.channels!.setStatus(channel.id, false);
  });

  it("waits as long as a provider's Retry-After before polling a task again", async () => {
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO });
    const taskId = submitted.body.data.task_id;
    expect((await t.stack.db!("tasks").where({ id: taskId }).first()).channel_id).toBe(ids.kling);
    kling.rateLimitPolls(120);
    const row = await waitUntil(
      () => t.stack.db!("tasks").where({ id: taskId }).first(),
      (r) => Date.parse(r.next_poll_at) - Date.now() > 100_000,
    );
    kling.rateLimitPolls(null);
    expect(row.status).toBe(0);
  });

  it("auto-disables a Kling channel with a bad secret key, keeping Kling's words without the key", async () => {
    const bad = await t.stack.channels!.add({ name: "kling-bad", type: "kling", baseUrl: kling.url, models: [52], priority: 20, ...kling.wrongCredentials });
    for (let n = 0; n < 3; n++) expect((await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO })).status).toBe(200);
    const listed = await t.graphql(`{ adminChannels { id status disabledReason } }`, undefined, undefined, admin);
    const row = listed.body.data.adminChannels.find((c: { id: string }) => c.id === bad.id);
    expect(row).toEqual({
      id: bad.id,
      status: "AUTO_DISABLED",
      disabledReason: "3 failed submissions in a row; last: http: HTTP 401: code 1002: Authorization is invalid",
    });
    for (const secret of Object.values(kling.wrongCredentials)) expect(JSON.stringify(listed.body)).not.toContain(secret);
  });

  it("adds a Kling channel through admin GraphQL with its two keys and never shows them", async () => {
    const added = await t.graphql(
      `mutation($in: AdminAddChannelInput!) { adminAddChannel(input: $in) { channel { id type models } } }`,
      { in: { name: "kling-2", type: "KLING", baseUrl: kling.url, models: [45], ...kling.credentials } },
      undefined,
      admin,
    );
    expect(added.body.errors).toBeUndefined();
    expect(added.body.data.adminAddChannel.channel).toMatchObject({ type: "KLING", models: [45] });
    for (const secret of Object.values(kling.credentials)) expect(JSON.stringify(added.body)).not.toContain(secret);
    const missing = await t.graphql(
      `mutation($in: AdminAddChannelInput!) { adminAddChannel(input: $in) { channel { id } } }`,
      { in: { name: "kling-3", type: "KLING", baseUrl: kling.url, models: [45], accessKey: "only-the-access-key" } },
      undefined,
      admin,
    );
    expect(missing.body.errors[0]).toMatchObject({ message: "secretKey is required", extensions: { code: "invalid_request" } });
    const wrongField = await t.graphql(
      `mutation($in: AdminAddChannelInput!) { adminAddChannel(input: $in) { channel { id } } }`,
      { in: { name: "kling-4", type: "KLING", baseUrl: kling.url, models: [45], apiKey: "a-key", ...kling.credentials } },
      undefined,
      admin,
    );
    expect(wrongField.body.errors[0].message).toBe("apiKey is not a credential of type kling: give accessKey and secretKey");
    await waitUntil(
      async () => (await t.stack.channels!.list()).length,
      (n) => n === 6,
    );
  });
});
