/**
 * What each channel type sends and reads (README "Channels" table; ADR 0023): our model ids,
 * seconds, resolution, aspect ratio, references and frames in the provider's own fields; the
 * provider's usage; Kling's token. Real router and fake providers over HTTP
 * (test/support/providers/).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startChannelOver, type ChannelHarness, NO_REFERENCES, image, lastPost, video } from "../support/providers/harness.ts";
import { startFakeKling, type FakeKling } from "../support/providers/kling.ts";
import { startFakeOpenAi } from "../support/providers/openai-compatible.ts";
import type { FakeProvider } from "../support/providers/base.ts";

describe("channel type kling: what is sent and read", () => {
  let h: ChannelHarness;
  let fake: FakeKling;
  let channelId: string;

  beforeAll(async () => {
    ({ h, fake, channelId } = await startChannelOver("kling-mapping", startFakeKling, {
      name: "kling",
      type: "kling",
      models: [52, 69, 39, 45],
      modelMapping: [{ modelId: 69, upstreamModel: "kling-v2-master" }],
    }));
  });
  afterAll(async () => {
    await fake?.close();
    await h?.close();
  });

  it("signs each call with an HS256 token of the access key valid for 30 minutes, and a token past its exp is refused as Kling's 1004", async () => {
    await h.router.submit(video({}), "task_jwt_ok");
    const token = lastPost(fake).authorization!.slice("Bearer ".length);
    const [header, payload] = token
      .split(".")
      .slice(0, 2)
      .map((part) => JSON.parse(Buffer.from(part, "base64url").toString()));
    expect(header).toEqual({ alg: "HS256", typ: "JWT" });
    expect(payload.iss).toBe(fake.credentials.accessKey);
    expect(payload.exp - payload.nbf).toBe(1805);
    fake.skewClock(3600);
    const error = await h.router.submit(video({}), "task_jwt_expired").catch((e) => e);
    fake.skewClock(0);
    expect(error.message).toBe("HTTP 401: code 1004: Authorization has expired");
  });

  it("sends text-to-video with the mapped model, mode, duration, ratio and our task id as external_task_id", async () => {
    await h.router.submit(video({ modelId: 69, modelName: "video-69", resolution: "1080P", seconds: 10, size: "9:16" }), "task_t2v");
    const sent = lastPost(fake);
    expect(sent.path).toBe("/v1/videos/text2video");
    expect(sent.body).toEqual({
      model_name: "kling-v2-master",
      prompt: "a lighthouse at dusk",
      mode: "pro",
      duration: "10",
      aspect_ratio: "9:16",
      external_task_id: "task_t2v",
    });
  });

  it("sends first and last frames to image-to-video as image and image_tail, with the default model", async () => {
    const frames = { ...NO_REFERENCES, frameStart: "https://example.com/first.png", frameEnd: "https://example.com/last.png" };
    const { upstreamTaskId } = await h.router.submit(video({ modelId: 39, modelName: "video-39", size: "16:9", references: frames }), "task_i2v");
    const sent = lastPost(fake);
    expect(sent.path).toBe("/v1/videos/image2video");
    expect(sent.body).toEqual({
      model_name: "kling-v1-6",
      prompt: "a lighthouse at dusk",
      mode: "std",
      duration: "5",
      image: "https://example.com/first.png",
      image_tail: "https://example.com/last.png",
      external_task_id: "task_i2v",
    });
    expect(upstreamTaskId).toMatch(/^i2v:/);
    fake.settle(fake.lastTaskId(), "succeeded");
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).status).toBe(1);
  });

  it("generates images as a task and keeps every image behind a signed URL", async () => {
    const { upstreamTaskId } = await h.router.submit(image({ count: 2, size: "3:2" }), "task_img");
    expect(lastPost(fake)).toMatchObject({ path: "/v1/images/generations", body: { model_name: "kling-v1", n: 2, aspect_ratio: "3:2" } });
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).status).toBe(4);
    fake.settle(fake.lastTaskId(), "succeeded");
    const state = await h.router.fetchStatus(upstreamTaskId, channelId);
    expect(state.images).toHaveLength(2);
    expect(new Set(state.images).size).toBe(2);
    for (const url of state.images!) expect((await fetch(url)).headers.get("content-type")).toBe("image/png");
    expect(state.usage).toEqual({ images: 2 });
  });

  it("reports the points Kling deducted as the task's usage", async () => {
    const { upstreamTaskId } = await h.router.submit(video({}), "task_points");
    fake.reportPoints(12.5);
    fake.settle(fake.lastTaskId(), "succeeded");
    fake.reportPoints(null);
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).usage).toEqual({ points: 12.5 });
  });

  it.each([
    ["resolution", video({ modelId: 69, modelName: "video-69", resolution: "480P" })],
    ["size", video({ size: "21:9" })],
    ["count", video({ count: 2 })],
    ["reference_videos", video({ references: { ...NO_REFERENCES, videos: ["https://example.com/v.mp4"] } })],
    ["reference_images", video({ references: { ...NO_REFERENCES, images: ["https://example.com/a.png", "https://example.com/b.png"] } })],
  ])("refuses %s it cannot do before sending anything", async (field, request) => {
    const sent = fake.requests.length;
    await expect(h.router.admits!(request)).rejects.toMatchObject({ status: 400, message: `${field} has an unsupported value` });
    expect(fake.requests.length).toBe(sent);
  });
});

describe("channel type openai-compatible: what is sent and read", () => {
  let h: ChannelHarness;
  let fake: FakeProvider;
  let channelId: string;

  beforeAll(async () => {
    ({ h, fake, channelId } = await startChannelOver("openai-mapping", startFakeOpenAi, { name: "openai", type: "openai-compatible", models: [52, 69, 45] }));
  });
  afterAll(async () => {
    await fake?.close();
    await h?.close();
  });

  it("sends a video with the default model, seconds as text, the size of resolution and ratio, and one reference image", async () => {
    const references = { ...NO_REFERENCES, images: ["https://example.com/ref.png"] };
    await h.router.submit(video({ seconds: 8, size: "16:9", references }), "task_oa_video");
    expect(lastPost(fake)).toMatchObject({
      path: "/v1/videos",
      body: { model: "sora-2", prompt: "a lighthouse at dusk", seconds: "8", size: "1280x720", input_reference: "https://example.com/ref.png" },
    });
    await h.router.submit(video({ modelId: 69, modelName: "video-69", resolution: "1080P", seconds: 12, size: "9:16" }), "task_oa_pro");
    expect(lastPost(fake).body).toMatchObject({ model: "sora-2-pro", seconds: "12", size: "1080x1920" });
  });

  it("answers images at once: kept on submission, finished at the first poll with the tokens billed", async () => {
    const { upstreamTaskId } = await h.router.submit(image({ count: 2, size: "1:1" }), "task_oa_img");
    expect(lastPost(fake)).toMatchObject({ path: "/v1/images/generations", body: { model: "gpt-image-1", n: 2, size: "1024x1024" } });
    const state = await h.router.fetchStatus(upstreamTaskId, channelId);
    expect(state).toMatchObject({ status: 1, usage: { images: 2, tokens: 4160 } });
    expect(state.images).toHaveLength(2);
    const served = await fetch(state.images![1]!);
    expect(Buffer.from(await served.arrayBuffer()).equals(fake.content)).toBe(true);
  });

  it.each([
    ["seconds", video({ seconds: 5 })],
    ["size", video({ seconds: 8, size: "1:1" })],
    ["count", video({ seconds: 8, count: 3 })],
    ["frame_end", video({ seconds: 8, references: { ...NO_REFERENCES, frameStart: "https://example.com/a.png", frameEnd: "https://example.com/b.png" } })],
    ["size", image({ size: "21:9" })],
    ["reference_images", image({ references: { ...NO_REFERENCES, images: ["https://example.com/a.png"] } })],
  ])("refuses %s it cannot do before sending anything", async (field, request) => {
    const sent = fake.requests.length;
    await expect(h.router.admits!(request)).rejects.toMatchObject({ status: 400, message: `${field} has an unsupported value` });
    expect(fake.requests.length).toBe(sent);
  });
});
