/**
 * What the `gemini-veo` channel type sends and reads (README "Channels" table; ADR 0023): the
 * key in `x-goog-api-key`, Veo's parameters, the operation's outcomes (filtered by safety
 * included), the video fetched with the key and served at our signed URL, Google's `RetryInfo`,
 * and what it refuses before any debit. Real router, fake Gemini API over HTTP
 * (test/support/providers/gemini-veo.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addChannel } from "../../src/generation/channels/store.ts";
import type { GenerationRequest } from "../../src/generation/validation.ts";
import type { FakeProvider } from "../support/providers/base.ts";
import { startFakeVeo } from "../support/providers/gemini-veo.ts";
import { startChannelHarness, type ChannelHarness } from "../support/providers/harness.ts";

const NO_REFERENCES = { images: [], audios: [], videos: [], frameStart: null, frameEnd: null };
const video = (fields: Partial<GenerationRequest>): GenerationRequest => ({
  kind: "video",
  modelId: 52,
  modelName: "video-52",
  prompt: "a lighthouse at dusk",
  size: null,
  seconds: 8,
  resolution: "720P",
  count: 1,
  references: NO_REFERENCES,
  ...fields,
});
const lastPost = (fake: FakeProvider) => fake.requests.filter((r) => r.method === "POST").at(-1)!;

describe("channel type gemini-veo: what is sent and read", () => {
  let h: ChannelHarness;
  let fake: FakeProvider;
  let channelId: string;

  beforeAll(async () => {
    h = await startChannelHarness("veo-mapping");
    fake = await startFakeVeo();
    channelId = (
      await addChannel(h.testDb.db, h.box, {
        name: "veo",
        type: "gemini-veo",
        baseUrl: fake.url,
        models: [52, 67],
        modelMapping: [{ modelId: 67, upstreamModel: "veo-3.0-fast-generate-001" }],
        ...fake.credentials,
      })
    ).id;
  });
  afterAll(async () => {
    await fake?.close();
    await h?.close();
  });

  it("sends the mapped model in the path, the prompt as an instance and ratio, resolution and seconds as parameters", async () => {
    await h.router.submit(video({ modelId: 67, modelName: "video-67", resolution: "1080P", size: "9:16" }), "task_veo_1080");
    const sent = lastPost(fake);
    expect(sent.path).toBe("/v1beta/models/veo-3.0-fast-generate-001:predictLongRunning");
    expect(sent.authorization).toBeUndefined();
    expect(sent.body).toEqual({
      instances: [{ prompt: "a lighthouse at dusk" }],
      parameters: { resolution: "1080p", durationSeconds: 8, aspectRatio: "9:16" },
    });
    const { upstreamTaskId } = await h.router.submit(video({ seconds: 4 }), "task_veo_default");
    expect(lastPost(fake).path).toBe("/v1beta/models/veo-3.1-generate-preview:predictLongRunning");
    expect(upstreamTaskId).toBe(`4:${fake.lastTaskId()}`);
  });

  it("downloads the video with the key and reports the seconds sent", async () => {
    const { upstreamTaskId } = await h.router.submit(video({ seconds: 6 }), "task_veo_ok");
    fake.settle(fake.lastTaskId(), "succeeded");
    const state = await h.router.fetchStatus(upstreamTaskId, channelId);
    expect(state).toMatchObject({ status: 1, usage: { seconds: 6 } });
    expect(state.result).not.toContain(fake.url);
    expect(fake.requests.filter((r) => r.path.includes(":download")).length).toBe(1);
    expect(Buffer.from(await (await fetch(state.result!)).arrayBuffer()).equals(fake.content)).toBe(true);
  });

  it("fails an operation whose video the safety filters removed, with Google's reason", async () => {
    const { upstreamTaskId } = await h.router.submit(video({}), "task_veo_filtered");
    fake.tasks.get(fake.lastTaskId())!.state = "filtered";
    expect(await h.router.fetchStatus(upstreamTaskId, channelId)).toEqual({ status: 2, error: "The video was blocked by the safety filters." });
  });

  it("waits as Google's RetryInfo asks when a 429 has no Retry-After", async () => {
    fake.next({ kind: "rate_limit", retryAfterSeconds: 12 });
    const error = await h.router.submit(video({}), "task_veo_429").catch((e) => e);
    expect(error).toMatchObject({
      reason: "http",
      retryAfterMs: 12_000,
      message: "HTTP 429: Resource has been exhausted (e.g. check quota). (retry after 12 s)",
    });
    expect(fake.requests.at(-1)!.path).toMatch(/:predictLongRunning$/);
  });

  it.each([
    ["seconds", video({ seconds: 5 })],
    ["seconds", video({ seconds: 4, resolution: "1080P" })],
    ["resolution", video({ resolution: "480P" })],
    ["size", video({ size: "1:1" })],
    ["count", video({ count: 2 })],
    ["reference_images", video({ references: { ...NO_REFERENCES, images: ["https://example.com/a.png"] } })],
    ["frame_end", video({ references: { ...NO_REFERENCES, frameEnd: "https://example.com/l.png" } })],
    ["reference_audios", video({ references: { ...NO_REFERENCES, audios: ["https://example.com/a.mp3"] } })],
  ])("refuses %s it cannot do before sending anything", async (field, request) => {
    const sent = fake.requests.length;
    await expect(h.router.admits!(request)).rejects.toMatchObject({ status: 400, message: `${field} has an unsupported value` });
    expect(fake.requests.length).toBe(sent);
  });
});
