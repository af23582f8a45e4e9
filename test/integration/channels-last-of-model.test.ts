/**
 * "Never auto-disable the last enabled channel" holds per model (README "Channels"; ADR 0012;
 * issue 20 finding 10): a failing channel that is the only enabled one serving a model stays in
 * rotation, however many other models' channels are on, so that model's submissions keep reaching
 * a provider (and succeed again as soon as it recovers) instead of being refused with no provider
 * asked until a probe runs. An operator's disable is obeyed even then. Real stack, fake providers.
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../src/db/index.ts";
import { createKeyBox } from "../../src/generation/channels/crypto.ts";
import { createChannelHealth } from "../../src/generation/channels/health.ts";
import { addChannel, getChannel, upsertDefaultChannel } from "../../src/generation/channels/store.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

/** Model 69, 6 s at 480P: 1.125 yuan. */
const MODEL_69 = { prompt: "a lighthouse at dusk", model_id: 69, seconds: 6, resolution: "480P" };
const posts = (fake: FakeUpstream) => fake.requests.filter((r) => r.method === "POST").length;

describe("the last enabled channel of a model", () => {
  let t: TestStack;
  let only69: FakeUpstream;
  let only45: FakeUpstream;
  let ids: { only69: string; only45: string };

  beforeAll(async () => {
    [only69, only45] = await Promise.all([startFakeUpstream(), startFakeUpstream()]);
    t = await startTestStack({
      CHANNEL_KEY_SECRET: "last-of-model-secret-0123456789abcdef",
      CHANNEL_FAILURE_THRESHOLD: "2",
      CHANNEL_PROBE_BASE_MS: "600000",
    });
    const channels = t.stack.channels!;
    // The implicit channel (the simulator, every model) is switched off by the operator.
    await channels.setStatus("chn_default", false);
    ids = {
      only69: (await channels.add({ name: "only-69", baseUrl: only69.url, apiKey: "key-69-0001", models: [69] })).id,
      only45: (await channels.add({ name: "only-45", baseUrl: only45.url, apiKey: "key-45-0002", models: [45] })).id,
    };
  });
  afterAll(async () => {
    await t?.close();
    await only69?.close();
    await only45?.close();
  });

  it("keeps a failing channel that alone serves model 69 in rotation while a model-45 channel is on, so 69 recovers with its provider", async () => {
    only69.onSubmit({ kind: "http_error", status: 503, message: "overloaded" });
    const key = await t.createKey("10");
    for (let n = 1; n <= 4; n++) {
      const answer = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: MODEL_69 });
      expect(answer.status).toBe(502);
      // Every refusal was the provider's: it was asked each time, also past the threshold of 2.
      expect(posts(only69)).toBe(n);
    }
    const channel = await getChannel(t.stack.db!, ids.only69);
    expect(channel).toMatchObject({ status: "ENABLED", consecutiveFailures: 4, disabledReason: null });

    only69.onSubmit({ kind: "accept" });
    const recovered = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: MODEL_69 });
    expect(recovered.status).toBe(200);
    expect(posts(only69)).toBe(5);
    expect(await getChannel(t.stack.db!, ids.only69)).toMatchObject({ status: "ENABLED", consecutiveFailures: 0 });
  });

  it("obeys an operator's disable of model 69's last channel: model 69 is then refused with no provider asked", async () => {
    const view = await t.stack.channels!.setStatus(ids.only69, false);
    expect(view).toMatchObject({ status: "DISABLED", disabledReason: "disabled by an operator" });
    const before = posts(only69);
    const answer = await t.rest("POST", "/api/v1/video/generations", { key: (await t.createKey("10")).key, body: MODEL_69 });
    expect(answer.status).toBe(502);
    expect(posts(only69)).toBe(before);
    await t.stack.channels!.setStatus(ids.only69, true);
  });
});

describe("auto-disable under concurrent failures", () => {
  let testDb: TestDb;

  beforeAll(async () => {
    testDb = await openTestDb("switchyard-channels-last-");
    await migrate(testDb.db);
  });
  afterAll(async () => {
    await testDb?.close();
  });

  it("takes out exactly one of two failing channels that alone serve a model, when both cross the threshold at once", async () => {
    const { db } = testDb;
    const box = createKeyBox("0123456789abcdef0123456789abcdef");
    await upsertDefaultChannel(db, "simulator:");
    await db("channels").where({ id: "chn_default" }).update({ status: "DISABLED" });
    // One channel of another model stays on throughout (the case the old whole-table rule missed).
    await addChannel(db, box, { name: "other", baseUrl: "http://127.0.0.1:9", apiKey: "key-other", models: [45] });
    const health = createChannelHealth({ db, logger: pino({ level: "silent" }), threshold: 1, probeBaseMs: 600_000 });
    try {
      for (let round = 0; round < 5; round++) {
        const pair = await Promise.all(
          [1, 2].map(async (n) => addChannel(db, box, { name: `r${round}-${n}`, baseUrl: "http://127.0.0.1:9", apiKey: `key-${round}-${n}`, models: [39] })),
        );
        const disabled = await Promise.all(pair.map((channel) => health.failure(channel, "http: HTTP 503", 1)));
        expect(disabled.filter(Boolean)).toHaveLength(1);
        const statuses = await db("channels")
          .whereIn(
            "id",
            pair.map((c) => c.id),
          )
          .orderBy("id")
          .pluck("status");
        expect([...statuses].sort()).toEqual(["AUTO_DISABLED", "ENABLED"]);
        // Both out of the way: the next pair is model 39's only two channels again.
        await db("channels")
          .whereIn(
            "id",
            pair.map((c) => c.id),
          )
          .update({ status: "DISABLED" });
      }
    } finally {
      await health.stop();
    }
  });
});
