/**
 * What the `ark` channel type sends and reads (README "Channels" table; ADR 0023): Seedance's
 * content list with text, first/last frames and reference images, resolution, ratio and duration
 * as fields, the tokens Ark bills, and what it refuses before any debit. Real router, fake Ark
 * over HTTP (test/support/providers/ark.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { invalidFieldError } from "../../src/errors.ts";
import type { GenerationRequest } from "../../src/generation/validation.ts";
import { startFakeArk } from "../support/providers/ark.ts";
import type { FakeProvider } from "../support/providers/base.ts";
import { startChannelOver, type ChannelHarness, lastPost, video as baseVideo, NO_REFERENCES } from "../support/providers/harness.ts";

const video = (fields: Partial<GenerationRequest>): GenerationRequest => baseVideo({ prompt: "a lighthouse at dusk --dur 12", ...fields });

describe("channel type ark: what is sent and read", () => {
  let h: ChannelHarness;
  let fake: FakeProvider;
  let channelId: string;

  beforeAll(async () => {
    ({ h, fake, channelId } = await startChannelOver("ark-mapping", startFakeArk, {
      name: "ark",
      type: "ark",
      models: [52, 67, 45],
      modelMapping: [{ modelId: 67, upstreamModel: "ep-20260101-seedance" }],
    }));
  });
  afterAll(async () => {
    await fake?.close();
    await h?.close();
  });

  it("sends text-to-video with the mapped model and resolution, ratio and duration as fields, the prompt untouched", async () => {
    await h.router.submit(video({ modelId: 67, modelName: "video-67", resolution: "1080P", seconds: 10, size: "21:9" }), "task_ark_t2v");
    const sent = lastPost(fake);
    expect(sent.path).toBe("/api/v3/contents/generations/tasks");
    expect(sent.authorization).toBe(`Bearer ${fake.credentials.apiKey}`);
    expect(sent.body).toEqual({
      model: "ep-20260101-seedance",
      content: [{ type: "text", text: "a lighthouse at dusk --dur 12" }],
      resolution: "1080p",
      ratio: "21:9",
      duration: 10,
    });
  });

  it("sends first and last frames with their roles, and reference images with theirs, on the model that takes them", async () => {
    const frames = { ...NO_REFERENCES, frameStart: "https://example.com/first.png", frameEnd: "https://example.com/last.png" };
    await h.router.submit(video({ references: frames }), "task_ark_frames");
    expect(lastPost(fake).body.content).toEqual([
      { type: "text", text: "a lighthouse at dusk --dur 12" },
      { type: "image_url", image_url: { url: "https://example.com/first.png" }, role: "first_frame" },
      { type: "image_url", image_url: { url: "https://example.com/last.png" }, role: "last_frame" },
    ]);
    expect(lastPost(fake).body.model).toBe("doubao-seedance-1-0-lite-i2v-250428");
    await h.router.submit(video({ references: { ...NO_REFERENCES, frameStart: "https://example.com/first.png" } }), "task_ark_first");
    expect(lastPost(fake).body.model).toBe("doubao-seedance-1-0-pro-250528");
    const images = { ...NO_REFERENCES, images: ["https://example.com/a.png", "https://example.com/b.png"] };
    await h.router.submit(video({ references: images }), "task_ark_refs");
    expect(lastPost(fake).body).toMatchObject({
      model: "doubao-seedance-1-0-lite-i2v-250428",
      content: [
        { type: "text" },
        { type: "image_url", image_url: { url: "https://example.com/a.png" }, role: "reference_image" },
        { type: "image_url", image_url: { url: "https://example.com/b.png" }, role: "reference_image" },
      ],
    });
  });

  it("reports the tokens Ark billed and the seconds it made; a cancelled task is failed, not left open", async () => {
    const { upstreamTaskId } = await h.router.submit(video({ seconds: 6 }), "task_ark_usage");
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).status).toBe(0);
    fake.settle(fake.lastTaskId(), "succeeded");
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).usage).toEqual({ tokens: 108900, seconds: 6 });
    const cancelled = await h.router.submit(video({}), "task_ark_cancel");
    fake.tasks.get(fake.lastTaskId())!.state = "cancelled";
    expect(await h.router.fetchStatus(cancelled.upstreamTaskId, channelId)).toMatchObject({ status: 2, error: "generation cancelled" });
  });

  it.each([
    ["model_id", video({ kind: "image", modelId: 45, modelName: "image-45", seconds: null, resolution: "1k" })],
    ["seconds", video({ seconds: 15 })],
    ["size", video({ size: "2:3" })],
    ["count", video({ count: 2 })],
    ["reference_audios", video({ references: { ...NO_REFERENCES, audios: ["https://example.com/a.mp3"] } })],
    ["reference_images", video({ references: { ...NO_REFERENCES, images: ["https://example.com/a.png"], frameStart: "https://example.com/f.png" } })],
    ["frame_end", video({ references: { ...NO_REFERENCES, frameEnd: "https://example.com/l.png" } })],
  ])("refuses %s it cannot do before sending anything", async (field, request) => {
    const sent = fake.requests.length;
    // model_id keeps the spec's own wording for that field (docs/api/generation.md §7).
    await expect(h.router.admits!(request)).rejects.toMatchObject({ status: 400, message: invalidFieldError(field).message });
    if (field !== "model_id") expect(invalidFieldError(field).message).toBe(`${field} has an unsupported value`);
    expect(fake.requests.length).toBe(sent);
  });
});
