/**
 * Failover across channel types through the whole stack (issue 24 §4; ADR 0023 "Second round"):
 * a Kling channel failing over to an Ark channel for the same model, charged once with `verify`
 * clean and the Ark result served at our signed URL; a request Kling cannot do passed over to Ark
 * without counting against Kling. Real stack, fake Kling and Ark over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../../src/ledger/index.ts";
import { startFakeArk } from "../support/providers/ark.ts";
import type { FakeProvider } from "../support/providers/base.ts";
import { startFakeKling, type FakeKling } from "../support/providers/kling.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const ADMIN_TOKEN = "channel-types-failover-admin-token";
/** Model 39, 5 s: 2.00 yuan. */
const VIDEO = { prompt: "a lighthouse at dusk", model_id: 39, seconds: 5, size: "16:9" };

describe("failover across channel types through the stack", () => {
  let t: TestStack;
  let kling: FakeKling;
  let ark: FakeProvider;
  let key: { key: string };
  const ids: Record<string, string> = {};
  const balance = async () => (await t.rest("GET", "/api/v1/usage", { key: key.key })).body.data.balance;
  const attempts = async (taskId: string) => {
    const row = await t.stack.db!("tasks").where({ id: taskId }).first();
    return JSON.parse(row.channel_attempts ?? "[]").map((a: { channelId: string; outcome: string }) => [a.channelId, a.outcome]);
  };

  beforeAll(async () => {
    [kling, ark] = await Promise.all([startFakeKling(), startFakeArk()]);
    t = await startTestStack({ ADMIN_TOKEN, CHANNEL_KEY_SECRET: "0123456789abcdef0123456789abcdef", CHANNEL_PROBE_BASE_MS: "600000" });
    const channels = t.stack.channels!;
    await channels.setStatus("chn_default", false);
    ids.kling = (await channels.add({ name: "kling", type: "kling", baseUrl: kling.url, models: [39], priority: 10, ...kling.credentials })).id;
    // The Ark channel through admin GraphQL, as an operator adds it.
    const added = await t.graphql(
      `mutation($in: AdminAddChannelInput!) { adminAddChannel(input: $in) { channel { id type } } }`,
      { in: { name: "ark", type: "ARK", baseUrl: ark.url, models: [39], priority: 5, apiKey: ark.credentials.apiKey } },
      undefined,
      { authorization: `Bearer ${ADMIN_TOKEN}` },
    );
    expect(added.body.errors).toBeUndefined();
    expect(added.body.data.adminAddChannel.channel.type).toBe("ARK");
    ids.ark = added.body.data.adminAddChannel.channel.id;
    key = await t.createKey("50");
  });
  afterAll(async () => {
    await t?.close();
    await kling?.close();
    await ark?.close();
  });

  it("fails over from a refusing Kling channel to an Ark channel, charging once, verify clean", async () => {
    kling.next({ kind: "server_error", status: 500 });
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO });
    expect(submitted.status).toBe(200);
    const taskId = submitted.body.data.task_id;
    expect(await attempts(taskId)).toEqual([
      [ids.kling, "http"],
      [ids.ark, "accepted"],
    ]);
    expect(ark.tasks.get(ark.lastTaskId())!.body).toMatchObject({ model: "doubao-seedance-1-0-pro-250528", ratio: "16:9", duration: 5 });
    ark.settle(ark.lastTaskId(), "succeeded");
    const done = await t.waitForTask(key.key, taskId, (task) => task.status === 1);
    expect(done.result.startsWith(`${t.url}/media/p/`)).toBe(true);
    expect(done.result).not.toContain(ark.url);
    expect(Buffer.from(await (await fetch(done.result)).arrayBuffer()).equals(ark.content)).toBe(true);
    const task = await t.graphql(`query($id: ID!) { task(id: $id) { price { amount } providerUsage { seconds tokens } } }`, { id: taskId }, key.key);
    expect(task.body.data.task).toEqual({ price: { amount: "2.00" }, providerUsage: { seconds: 5, tokens: 108900 } });
    expect(await balance()).toBe(48);
    expect(await t.stack.db!("ledger_entries").where({ task_id: taskId })).toHaveLength(1);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });

  it("passes a request Kling cannot do (4:3) over to Ark without trying Kling, and refunds once when Ark fails it", async () => {
    const posts = kling.requests.filter((r) => r.method === "POST").length;
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: { ...VIDEO, size: "4:3" } });
    expect(submitted.status).toBe(200);
    const taskId = submitted.body.data.task_id;
    expect(kling.requests.filter((r) => r.method === "POST").length).toBe(posts);
    expect((await t.stack.db!("tasks").where({ id: taskId }).first()).channel_id).toBe(ids.ark);
    ark.settle(ark.lastTaskId(), { failed: "The output video may contain sensitive information." });
    const failed = await t.waitForTask(key.key, taskId, (task) => task.status === 2);
    expect(failed).toMatchObject({
      error: "OutputVideoSensitiveContentDetected: The output video may contain sensitive information.",
      price: 2,
      refunded: 2,
      amount: 0,
    });
    expect(await balance()).toBe(48);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });
});
