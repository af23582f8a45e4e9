/**
 * What the `gemini-veo` channel type sends and reads (README "Channels" table; ADR 0023): the
 * key in `x-goog-api-key`, Veo's parameters, the operation's outcomes (filtered by safety
 * included), the video fetched with the key and served at our signed URL, Google's `RetryInfo`,
 * and what it refuses before any debit. Real router, fake Gemini API over HTTP
 * (test/support/providers/gemini-veo.ts).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addChannel } from "../../src/generation/channels/store.ts";
import type { GenerationRequest } from "../../src/generation/validation.ts";
import type { FakeProvider } from "../support/providers/base.ts";
import { startFakeVeo } from "../support/providers/gemini-veo.ts";
import { startChannelOver, type ChannelHarness, lastPost, video as baseVideo, NO_REFERENCES } from "../support/providers/harness.ts";

const video = (fields: Partial<GenerationRequest>): GenerationRequest => baseVideo({ seconds: 8, ...fields });

describe("channel type gemini-veo: what is sent and read", () => {
  let h: ChannelHarness;
  let fake: FakeProvider;
  let channelId: string;

  beforeAll(async () => {
    ({ h, fake, channelId } = await startChannelOver("veo-mapping", startFakeVeo, {
      name: "veo",
      type: "gemini-veo",
      models: [52, 67],
      modelMapping: [{ modelId: 67, upstreamModel: "veo-3.0-fast-generate-001" }],
    }));
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

  it("never sends the key to a video uri on another host", async () => {
    const seen: (string | undefined)[] = [];
    const elsewhere = http.createServer((req, res) => {
      seen.push(req.headers["x-goog-api-key"] as string | undefined);
      res.writeHead(200, { "content-type": "video/mp4" });
      res.end("elsewhere");
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
    const name = "models/veo-3.1-generate-preview/operations/elsewhere1";
    const relay = await startFakeVeoRelay(fake.credentials.apiKey!, name, `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/v.mp4`);
    try {
      const { id } = await addChannel(h.testDb.db, h.box, { name: "veo-relay", type: "gemini-veo", baseUrl: relay.url, models: [51], ...fake.credentials });
      h.router.invalidate();
      const state = await h.router.fetchStatus(`8:${name}`, id);
      expect(state.status).toBe(1);
      expect(seen).toEqual([undefined]);
      expect(Buffer.from(await (await fetch(state.result!)).arrayBuffer()).toString()).toBe("elsewhere");
    } finally {
      await new Promise((resolve) => relay.server.close(resolve));
      await new Promise((resolve) => elsewhere.close(resolve));
    }
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

/** A stand-in Gemini API that answers one operation as done, with its video `uri` at `uri`. */
async function startFakeVeoRelay(apiKey: string, name: string, uri: string): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer((req, res) => {
    const ok = req.headers["x-goog-api-key"] === apiKey && req.url === `/v1beta/${name}`;
    res.writeHead(ok ? 200 : 404, { "content-type": "application/json" });
    res.end(
      JSON.stringify(ok ? { name, done: true, response: { generateVideoResponse: { generatedSamples: [{ video: { uri } }] } } } : { error: { code: 404 } }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}
