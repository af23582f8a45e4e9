/**
 * What the `dashscope` channel type sends and reads (README "Channels" table; ADR 0023): the
 * asynchronous header, Wan's text-to-video size, image-to-video and first-and-last-frame inputs,
 * audio, text-to-image, the usage DashScope reports, its states, and what it refuses before any
 * debit. Real router, fake DashScope over HTTP (test/support/providers/dashscope.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeProvider } from "../support/providers/base.ts";
import { startFakeDashScope } from "../support/providers/dashscope.ts";
import { startChannelOver, type ChannelHarness, NO_REFERENCES, image, lastPost, video } from "../support/providers/harness.ts";

describe("channel type dashscope: what is sent and read", () => {
  let h: ChannelHarness;
  let fake: FakeProvider;
  let channelId: string;

  beforeAll(async () => {
    ({ h, fake, channelId } = await startChannelOver("dashscope-mapping", startFakeDashScope, {
      name: "dashscope",
      type: "dashscope",
      models: [52, 67, 45],
      modelMapping: [{ modelId: 67, upstreamModel: "wan2.6-t2v" }],
    }));
  });
  afterAll(async () => {
    await fake?.close();
    await h?.close();
  });

  it("sends text-to-video asynchronously with the mapped model, the size of resolution and ratio, and the duration", async () => {
    await h.router.submit(video({ modelId: 67, modelName: "video-67", resolution: "1080P", seconds: 10, size: "3:4" }), "task_ds_t2v");
    const sent = lastPost(fake);
    expect(sent.path).toBe("/api/v1/services/aigc/video-generation/video-synthesis");
    expect(sent.body).toEqual({ model: "wan2.6-t2v", input: { prompt: "a lighthouse at dusk" }, parameters: { size: "1248*1632", duration: 10 } });
    // No ratio asked: 16:9 at the asked resolution, so the resolution is kept.
    await h.router.submit(video({}), "task_ds_default");
    expect(lastPost(fake).body).toEqual({
      model: "wan2.5-t2v-preview",
      input: { prompt: "a lighthouse at dusk" },
      parameters: { size: "1280*720", duration: 5 },
    });
  });

  it("sends a reference image with audio to image-to-video, and first and last frames to the keyframe model, by resolution", async () => {
    const withAudio = { ...NO_REFERENCES, images: ["https://example.com/ref.png"], audios: ["https://example.com/a.mp3"] };
    await h.router.submit(video({ size: "16:9", references: withAudio }), "task_ds_i2v");
    expect(lastPost(fake).body).toEqual({
      model: "wan2.5-i2v-preview",
      input: { prompt: "a lighthouse at dusk", img_url: "https://example.com/ref.png", audio_url: "https://example.com/a.mp3" },
      parameters: { resolution: "720P", duration: 5 },
    });
    const frames = { ...NO_REFERENCES, frameStart: "https://example.com/first.png", frameEnd: "https://example.com/last.png" };
    await h.router.submit(video({ resolution: "1080P", references: frames }), "task_ds_kf2v");
    expect(lastPost(fake).body).toEqual({
      model: "wan2.1-kf2v-plus",
      input: { prompt: "a lighthouse at dusk", first_frame_url: "https://example.com/first.png", last_frame_url: "https://example.com/last.png" },
      parameters: { resolution: "1080P", duration: 5 },
    });
  });

  it("reports the seconds DashScope made, and fails a task it no longer knows (UNKNOWN) or cancelled instead of leaving it open", async () => {
    const { upstreamTaskId } = await h.router.submit(video({ seconds: 10 }), "task_ds_usage");
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).status).toBe(0);
    fake.settle(fake.lastTaskId(), "succeeded");
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).usage).toEqual({ seconds: 10 });
    expect(await h.router.fetchStatus("0b1c2d3e-expired", channelId)).toMatchObject({ status: 2, error: "task UNKNOWN" });
    const cancelled = await h.router.submit(video({}), "task_ds_cancel");
    fake.tasks.get(fake.lastTaskId())!.state = "CANCELED";
    expect((await h.router.fetchStatus(cancelled.upstreamTaskId, channelId)).status).toBe(2);
  });

  it("makes images as a task and keeps each behind a signed URL, with the image count reported", async () => {
    const { upstreamTaskId } = await h.router.submit(image({ count: 3, size: "4:3" }), "task_ds_img");
    expect(lastPost(fake)).toMatchObject({
      path: "/api/v1/services/aigc/text2image/image-synthesis",
      body: { model: "wan2.2-t2i-flash", input: { prompt: "a lighthouse at dusk" }, parameters: { n: 3, size: "1024*768" } },
    });
    fake.settle(fake.lastTaskId(), "succeeded");
    const state = await h.router.fetchStatus(upstreamTaskId, channelId);
    expect(state).toMatchObject({ status: 1, usage: { images: 3 } });
    expect(new Set(state.images).size).toBe(3);
    const served = await fetch(state.images![2]!);
    expect(served.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await served.arrayBuffer()).equals(fake.content)).toBe(true);
  });

  it.each([
    ["seconds", video({ seconds: 8 })],
    ["size", video({ resolution: "480P", size: "4:3" })],
    ["resolution", video({ resolution: "4K" })],
    ["count", video({ count: 2 })],
    ["reference_images", video({ references: { ...NO_REFERENCES, images: ["https://example.com/a.png"], frameStart: "https://example.com/b.png" } })],
    ["frame_end", video({ references: { ...NO_REFERENCES, frameEnd: "https://example.com/l.png" } })],
    ["reference_audios", video({ references: { ...NO_REFERENCES, audios: ["https://example.com/a.mp3", "https://example.com/b.mp3"] } })],
    ["size", image({ size: "21:9" })],
    ["reference_images", image({ references: { ...NO_REFERENCES, images: ["https://example.com/a.png"] } })],
  ])("refuses %s it cannot do before sending anything", async (field, request) => {
    const sent = fake.requests.length;
    await expect(h.router.admits!(request)).rejects.toMatchObject({ status: 400, message: `${field} has an unsupported value` });
    expect(fake.requests.length).toBe(sent);
  });
});
