/**
 * The channel router's attempt cap (README "Channels": at most CHANNEL_MAX_ATTEMPTS channels
 * tried): a channel that another submission of the process auto-disabled while this one was under
 * way is skipped, not tried, so it does not use up an attempt and the healthy channel behind it is
 * still reached. Found by test/e2e/channels-scale-out.test.ts (a refund although a healthy channel
 * was enabled). Real router, health recorder and database; fake providers over HTTP.
 */
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { migrate } from "../../src/db/index.ts";
import { createKeyBox } from "../../src/generation/channels/crypto.ts";
import { createChannelHealth, type ChannelHealth } from "../../src/generation/channels/health.ts";
import { createChannelRouter } from "../../src/generation/channels/router.ts";
import { addChannel, upsertDefaultChannel } from "../../src/generation/channels/store.ts";
import type { GenerationRequest } from "../../src/generation/validation.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { openTestDb, type TestDb } from "../support/db.ts";

const REQUEST: GenerationRequest = {
  kind: "video",
  modelId: 52,
  modelName: "video-52",
  prompt: "a lighthouse at dusk",
  size: null,
  seconds: 5,
  resolution: "720P",
  count: 1,
  references: { images: [], audios: [], videos: [], frameStart: null, frameEnd: null },
};

describe("channel router: attempts", () => {
  let testDb: TestDb;
  let health: ChannelHealth;
  let fakes: FakeUpstream[];

  beforeAll(async () => {
    testDb = await openTestDb("switchyard-channels-router-");
    await migrate(testDb.db);
    fakes = await Promise.all([startFakeUpstream(), startFakeUpstream(), startFakeUpstream()]);
  });
  afterAll(async () => {
    vi.useRealTimers();
    await health?.stop();
    for (const fake of fakes ?? []) await fake.close();
    await testDb?.close();
  });

  it("skips a channel auto-disabled while a submission was under way without counting it, and reaches the healthy one", async () => {
    const { db } = testDb;
    const [held, failing, healthy] = fakes as [FakeUpstream, FakeUpstream, FakeUpstream];
    held.onSubmit({ kind: "hang" });
    failing.onSubmit({ kind: "http_error", status: 503 });
    const box = createKeyBox("0123456789abcdef0123456789abcdef");
    await upsertDefaultChannel(db, "simulator:");
    await db("channels").where({ id: "chn_default" }).update({ status: "DISABLED" });
    // Priorities fix the order: held, then failing, then healthy.
    await addChannel(db, box, { name: "held", baseUrl: held.url, apiKey: "k", models: [52], priority: 10 });
    const b = await addChannel(db, box, { name: "failing", baseUrl: failing.url, apiKey: "k", models: [52, 39], priority: 9 });
    const h = await addChannel(db, box, { name: "healthy", baseUrl: healthy.url, apiKey: "k", models: [52, 39], priority: 5 });
    const logger = pino({ level: "silent" });
    // The clock stands still, so both submissions read one cached channel list (CHANNEL_REFRESH_MS)
    // however slow the machine: the in-place mark on that list is what is under test.
    vi.useFakeTimers({ toFake: ["Date"] });
    health = createChannelHealth({ db, logger, threshold: 1, probeBaseMs: 600_000 });
    const router = createChannelRouter({ db, logger, box, implicit: { name: "unused" } as never, health, timeoutMs: 10_000, maxAttempts: 2, random: () => 0 });

    // Submission 1 (model 52) holds [held, failing] and waits on `held`.
    const first = router.submit(REQUEST, "tsk_first");
    await held.waitForRequests((r) => r.method === "POST", 1);
    // Submission 2 (model 39) fails on `failing`, which disables it (threshold 1), and lands on `healthy`.
    await router.submit({ ...REQUEST, modelId: 39, modelName: "video-39" }, "tsk_second");
    expect((await db("channels").where({ id: b.id }).first()).status).toBe("AUTO_DISABLED");
    // `held` now refuses: submission 1 skips the disabled `failing` without counting it and reaches `healthy`.
    held.releaseHanging({ kind: "http_error", status: 503 });
    expect((await first).upstreamTaskId).toMatch(/\S/);
    const posts = (fake: FakeUpstream, ref: string) => fake.requests.filter((r) => r.method === "POST" && r.idempotencyKey === ref).length;
    expect([posts(held, "tsk_first"), posts(failing, "tsk_first"), posts(healthy, "tsk_first")]).toEqual([1, 0, 1]);
    expect(healthy.accepted.map((t) => t.clientReference)).toEqual(["tsk_second", "tsk_first"]);
    expect((await db("channels").where({ id: h.id }).first()).status).toBe("ENABLED");
  });
});
