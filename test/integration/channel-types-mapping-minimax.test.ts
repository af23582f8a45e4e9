/**
 * What the `minimax` channel type sends and reads (README "Channels" table; ADR 0023): Hailuo's
 * duration and resolution, first and last frames, the file retrieval behind a finished task,
 * MiniMax's `base_resp` refusals in HTTP 200 answers, and what it refuses before any debit. Real
 * router, fake MiniMax over HTTP (test/support/providers/minimax.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GenerationRequest } from "../../src/generation/validation.ts";
import type { FakeProvider } from "../support/providers/base.ts";
import { startChannelOver, type ChannelHarness, lastPost, video as baseVideo, NO_REFERENCES } from "../support/providers/harness.ts";
import { startFakeMiniMax } from "../support/providers/minimax.ts";

const video = (fields: Partial<GenerationRequest>): GenerationRequest => baseVideo({ seconds: 6, ...fields });

describe("channel type minimax: what is sent and read", () => {
  let h: ChannelHarness;
  let fake: FakeProvider;
  let channelId: string;

  beforeAll(async () => {
    ({ h, fake, channelId } = await startChannelOver("minimax-mapping", startFakeMiniMax, {
      name: "minimax",
      type: "minimax",
      models: [52, 67, 45],
      modelMapping: [{ modelId: 67, upstreamModel: "MiniMax-Hailuo-2.3" }],
    }));
  });
  afterAll(async () => {
    await fake?.close();
    await h?.close();
  });

  it("sends text-to-video with the mapped model, 720P as 768P and the seconds; the default duration is 6", async () => {
    await h.router.submit(video({ modelId: 67, modelName: "video-67", seconds: 10, size: "16:9" }), "task_mm_t2v");
    expect(lastPost(fake)).toMatchObject({ path: "/v1/video_generation", authorization: `Bearer ${fake.credentials.apiKey}` });
    expect(lastPost(fake).body).toEqual({ model: "MiniMax-Hailuo-2.3", prompt: "a lighthouse at dusk", duration: 10, resolution: "768P" });
    const { upstreamTaskId } = await h.router.submit(video({ seconds: null, resolution: "1080P" }), "task_mm_default");
    expect(lastPost(fake).body).toEqual({ model: "MiniMax-Hailuo-02", prompt: "a lighthouse at dusk", duration: 6, resolution: "1080P" });
    expect(upstreamTaskId).toBe(`${fake.lastTaskId()}:6`);
  });

  it("sends first and last frames as first_frame_image and last_frame_image", async () => {
    const frames = { ...NO_REFERENCES, frameStart: "https://example.com/first.png", frameEnd: "https://example.com/last.png" };
    await h.router.submit(video({ size: "9:16", references: frames }), "task_mm_frames");
    expect(lastPost(fake).body).toMatchObject({ first_frame_image: "https://example.com/first.png", last_frame_image: "https://example.com/last.png" });
  });

  it("maps Preparing, Queueing and Processing to open states, then fetches the file's download URL once and keeps the video", async () => {
    const { upstreamTaskId } = await h.router.submit(video({}), "task_mm_states");
    const task = fake.tasks.get(fake.lastTaskId())!;
    task.state = "Preparing";
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).status).toBe(4);
    task.state = "Queueing";
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).status).toBe(0);
    fake.settle(task.id, "running");
    expect((await h.router.fetchStatus(upstreamTaskId, channelId)).status).toBe(3);
    fake.settle(task.id, "succeeded");
    const state = await h.router.fetchStatus(upstreamTaskId, channelId);
    expect(state).toMatchObject({ status: 1, usage: { seconds: 6 } });
    await h.router.fetchStatus(upstreamTaskId, channelId);
    expect(fake.requests.filter((r) => r.path.startsWith("/v1/files/retrieve")).length).toBe(1);
    expect(Buffer.from(await (await fetch(state.result!)).arrayBuffer()).equals(fake.content)).toBe(true);
  });

  it("fails a submission MiniMax refuses in a 200 answer with its code and words", async () => {
    fake.next({ kind: "server_error", status: 200 });
    const error = await h.router.submit(video({}), "task_mm_1013").catch((e) => e);
    expect(error).toMatchObject({ kind: "failed", reason: "code", message: "business code 1013: internal service error" });
  });

  it.each([
    ["model_id", video({ kind: "image", modelId: 45, modelName: "image-45", seconds: null, resolution: "1k" })],
    ["resolution", video({ resolution: "480P" })],
    ["seconds", video({ seconds: 10, resolution: "1080P" })],
    ["size", video({ size: "1:1" })],
    ["reference_audios", video({ references: { ...NO_REFERENCES, images: ["https://example.com/a.png"], audios: ["https://example.com/a.mp3"] } })],
    ["reference_images", video({ references: { ...NO_REFERENCES, images: ["https://example.com/a.png", "https://example.com/b.png"] } })],
    ["frame_end", video({ references: { ...NO_REFERENCES, frameEnd: "https://example.com/l.png" } })],
  ])("refuses %s it cannot do before sending anything", async (field, request) => {
    const sent = fake.requests.length;
    const error = await h.router.admits!(request).catch((e) => e);
    expect(error).toMatchObject({ status: 400, details: { field } });
    expect(fake.requests.length).toBe(sent);
  });
});
