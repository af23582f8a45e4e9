/**
 * The contract every channel type passes (issue 24 §4; ADR 0023): submit, poll to success, poll
 * to failure, timeout, 429 with Retry-After, bad key, lost submission, a result fetched through
 * the signed `/media/p/` URL, and a request the type cannot do refused before anything is sent.
 * Each type runs against its fake provider (test/support/providers/<type>.ts), a real HTTP server
 * speaking the documented shapes, through the real channel router, health recorder, database,
 * result store on disk and the router's media handler. Adding a type: one entry in TYPES.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../../src/errors.ts";
import type { ChannelRouter } from "../../src/generation/channels/router.ts";
import { addChannel, setChannelStatus, type ChannelRecord } from "../../src/generation/channels/store.ts";
import { createLocalMedia } from "../../src/generation/media/local.ts";
import { UpstreamError } from "../../src/generation/upstream/types.ts";
import type { GenerationRequest } from "../../src/generation/validation.ts";
import type { FakeProvider } from "../support/providers/base.ts";
import { startChannelHarness, type ChannelHarness } from "../support/providers/harness.ts";
import { startFakeArk } from "../support/providers/ark.ts";
import { startFakeDashScope } from "../support/providers/dashscope.ts";
import { startFakeMiniMax } from "../support/providers/minimax.ts";
import { startFakeVeo } from "../support/providers/gemini-veo.ts";
import { startFakeKling } from "../support/providers/kling.ts";
import { startFakeOpenAi } from "../support/providers/openai-compatible.ts";
import { startFakeSwitchyard } from "../support/providers/switchyard.ts";

/** A request every type can do: model 52, 720P, 16:9, 8 s for OpenAI (4/8/12), 5 s for Kling (5/10). */
const request = (seconds: number): GenerationRequest => ({
  kind: "video",
  modelId: 52,
  modelName: "video-52",
  prompt: "a lighthouse at dusk",
  size: "16:9",
  seconds,
  resolution: "720P",
  count: 1,
  references: { images: [], audios: [], videos: [], frameStart: null, frameEnd: null },
});

/** One channel type under contract. */
interface TypeUnderContract {
  type: string;
  start(): Promise<FakeProvider>;
  seconds: number;
  /** The provider's id as the adapter keeps it. */
  upstreamId(fakeId: string): string;
  /** Whether the protocol lets a lost submission be found. */
  findsLost: boolean;
  /** Whether results are kept and served behind our signed URL (else the provider's URL is passed on). */
  keepsResults: boolean;
  /**
   * How the provider refuses a bad key and a rate limit when not by HTTP status (MiniMax: an HTTP
   * 200 whose `base_resp` code is not 0): the message's start. Absent: HTTP 401 and 429.
   */
  refusesInBody?: { badKey: RegExp; rateLimit: RegExp };
  /** The start of a bad key's failure when it is not an HTTP 401 (Google: 400 "API key not valid"). */
  badKeyMessage?: RegExp;
  /** Our states a new task reads as before it runs (default queued 0 or submitted 4; Veo: running 3). */
  opensAs?: number[];
  /** A request this type cannot do, and the field the 400 names (null: it can do every valid request). */
  cannot: { request: GenerationRequest; field: string } | null;
}

const TYPES: TypeUnderContract[] = [
  {
    type: "switchyard",
    start: startFakeSwitchyard,
    seconds: 5,
    upstreamId: (id) => id,
    findsLost: true,
    keepsResults: false,
    cannot: null,
  },
  {
    type: "openai-compatible",
    start: startFakeOpenAi,
    seconds: 8,
    upstreamId: (id) => id,
    findsLost: false,
    keepsResults: true,
    cannot: {
      request: { ...request(8), references: { images: [], audios: ["https://example.com/a.mp3"], videos: [], frameStart: null, frameEnd: null } },
      field: "reference_audios",
    },
  },
  {
    type: "kling",
    start: startFakeKling,
    seconds: 5,
    upstreamId: (id) => `t2v:${id}`,
    findsLost: true,
    keepsResults: true,
    cannot: { request: request(7), field: "seconds" },
  },
  {
    type: "ark",
    start: startFakeArk,
    seconds: 5,
    upstreamId: (id) => id,
    findsLost: false,
    keepsResults: true,
    cannot: { request: request(15), field: "seconds" },
  },
  {
    type: "dashscope",
    start: startFakeDashScope,
    seconds: 5,
    upstreamId: (id) => id,
    findsLost: false,
    keepsResults: true,
    cannot: {
      request: { ...request(5), references: { images: [], audios: [], videos: ["https://example.com/v.mp4"], frameStart: null, frameEnd: null } },
      field: "reference_videos",
    },
  },
  {
    type: "minimax",
    start: startFakeMiniMax,
    seconds: 6,
    upstreamId: (id) => `${id}:6`,
    findsLost: false,
    keepsResults: true,
    refusesInBody: { badKey: /^business code 1004: login fail/, rateLimit: /^business code 1002: rate limit exceeded/ },
    cannot: { request: request(5), field: "seconds" },
  },
  {
    type: "gemini-veo",
    start: startFakeVeo,
    seconds: 8,
    upstreamId: (id) => `8:${id}`,
    findsLost: false,
    keepsResults: true,
    badKeyMessage: /^HTTP 400: API key not valid/,
    opensAs: [3],
    cannot: {
      request: { ...request(8), references: { images: [], audios: [], videos: [], frameStart: "https://example.com/f.png", frameEnd: null } },
      field: "frame_start",
    },
  },
];

describe.each(TYPES)("channel type $type: the contract", (spec) => {
  let h: ChannelHarness;
  let fake: FakeProvider;
  let router: ChannelRouter;
  let channel: ChannelRecord;
  let testDb: ChannelHarness["testDb"];
  let mediaUrl: string;

  beforeAll(async () => {
    h = await startChannelHarness(`channel-type-${spec.type}`);
    ({ router, testDb, mediaUrl } = h);
    fake = await spec.start();
    channel = await addChannel(testDb.db, h.box, { name: spec.type, type: spec.type, baseUrl: fake.url, models: [52], ...fake.credentials });
  });
  afterAll(async () => {
    await fake?.close();
    await h?.close();
  });

  it("submits and polls through running to success", async () => {
    const { upstreamTaskId } = await router.submit(request(spec.seconds), "task_contract_run");
    const fakeId = fake.lastTaskId();
    expect(upstreamTaskId).toBe(spec.upstreamId(fakeId));
    expect(spec.opensAs ?? [0, 4]).toContain((await router.fetchStatus(upstreamTaskId, channel.id)).status);
    fake.settle(fakeId, "running");
    expect((await router.fetchStatus(upstreamTaskId, channel.id)).status).toBe(3);
    fake.settle(fakeId, "succeeded");
    const state = await router.fetchStatus(upstreamTaskId, channel.id);
    expect(state.status).toBe(1);
    // A result needing no key and never expiring (another Switchyard's) is passed on as it is.
    if (!spec.keepsResults) expect(state.result).toMatch(/^https:\/\/media\.provider\.example\//);
  });

  it.runIf(spec.keepsResults)("serves the result through a signed URL that names nothing of the provider, with the provider's usage", async () => {
    const { upstreamTaskId } = await router.submit(request(spec.seconds), "task_contract_ok");
    const fakeId = fake.lastTaskId();
    fake.settle(fakeId, "succeeded");
    const state = await router.fetchStatus(upstreamTaskId, channel.id);
    expect(state.status).toBe(1);
    expect(state.result).toMatch(new RegExp(`^${mediaUrl}/media/p/[0-9a-f]{40}\\.mp4\\?exp=\\d+&sig=[\\w-]+$`));
    expect(state.usage).toMatchObject({ seconds: expect.any(Number) });
    for (const secret of [fake.url, ...Object.values(fake.credentials), fakeId]) expect(state.result).not.toContain(secret);
    const served = await fetch(state.result!);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await served.arrayBuffer()).equals(fake.content)).toBe(true);
    // A second poll signs again without a second download.
    const downloads = () => fake.requests.filter((r) => r.path.endsWith("/content") || r.path.startsWith("/cdn/")).length;
    const before = downloads();
    await router.fetchStatus(upstreamTaskId, channel.id);
    expect(downloads()).toBe(before);
    // One byte range, for players that seek.
    const ranged = await fetch(state.result!, { headers: { range: "bytes=2-9" } });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(fake.content.subarray(2, 10))).toBe(true);
  });

  it.runIf(spec.keepsResults)("refuses a tampered or expired media URL with 403", async () => {
    const { upstreamTaskId } = await router.submit(request(spec.seconds), "task_contract_sig");
    fake.settle(fake.lastTaskId(), "succeeded");
    const url = new URL((await router.fetchStatus(upstreamTaskId, channel.id)).result!);
    const tampered = new URL(url);
    tampered.searchParams.set("exp", String(Number(url.searchParams.get("exp")) + 1000));
    expect((await fetch(tampered)).status).toBe(403);
    const expired = createLocalMedia({ dir: h.mediaDir, baseUrl: () => mediaUrl, key: h.key, ttlSeconds: -10 }).forChannel(channel.id);
    const old = await expired.keep("never-downloaded", async () => new Response("x", { headers: { "content-type": "video/mp4" } }), "mp4");
    const answer = await fetch(old);
    expect(answer.status).toBe(403);
    expect(await answer.json()).toEqual({ code: 403, message: "Media link expired" });
  });

  it("polls to failure with the provider's words, its credentials redacted", async () => {
    const { upstreamTaskId } = await router.submit(request(spec.seconds), "task_contract_fail");
    const leaked = Object.values(fake.credentials)[0]!;
    fake.settle(fake.lastTaskId(), { failed: `Content policy violation (account ${leaked})` });
    const state = await router.fetchStatus(upstreamTaskId, channel.id);
    expect(state.status).toBe(2);
    expect(state.error).toContain("Content policy violation");
    expect(state.error).not.toContain(leaked);
  });

  it("reports a submission the provider does not answer in time as a timeout", async () => {
    fake.next({ kind: "hang" });
    const error = await router.submit(request(spec.seconds), "task_contract_hang").catch((e) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error.kind).toBe("timeout");
  });

  it("carries a 429's Retry-After on a refused submission and on a refused poll", async () => {
    fake.next({ kind: "rate_limit", retryAfterSeconds: 7 });
    const error = await router.submit(request(spec.seconds), "task_contract_429").catch((e) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    if (spec.refusesInBody) {
      expect(error).toMatchObject({ kind: "failed", reason: "code", retryAfterMs: 7000 });
      expect(error.message).toMatch(spec.refusesInBody.rateLimit);
    } else {
      expect(error).toMatchObject({ kind: "failed", reason: "http", retryAfterMs: 7000 });
      expect(error.message).toMatch(/^HTTP 429: .+ \(retry after 7 s\)$/);
    }
    const { upstreamTaskId } = await router.submit(request(spec.seconds), "task_contract_429b");
    fake.rateLimitPolls(3);
    const polled = await router.fetchStatus(upstreamTaskId, channel.id).catch((e) => e);
    fake.rateLimitPolls(null);
    expect(polled).toMatchObject({ reason: spec.refusesInBody ? "code" : "http", retryAfterMs: 3000 });
  });

  it("fails a submission with a bad key as the provider's 401, no credential in the text", async () => {
    const bad = await addChannel(testDb.db, h.box, { name: `${spec.type}-bad`, type: spec.type, baseUrl: fake.url, models: [51], ...fake.wrongCredentials });
    router.invalidate();
    const error = await router.submit({ ...request(spec.seconds), modelId: 51, modelName: "video-51" }, "task_contract_badkey").catch((e) => e);
    expect(error).toMatchObject({ kind: "failed", reason: spec.refusesInBody ? "code" : "http" });
    expect(error.message).toMatch(spec.refusesInBody?.badKey ?? spec.badKeyMessage ?? /^HTTP 401/);
    for (const secret of Object.values(fake.wrongCredentials)) expect(error.message).not.toContain(secret);
    await setChannelStatus(testDb.db, bad.id, false);
    router.invalidate();
  });

  it("finds a submission whose answer was lost when the protocol allows, else leaves it to a resend", async () => {
    fake.next({ kind: "accept_silently" });
    const error = await router.submit(request(spec.seconds), "task_contract_lost").catch((e) => e);
    expect(error.kind).toBe("timeout");
    const found = await router.findSubmission!("task_contract_lost");
    if (spec.findsLost) expect(found).toBe(spec.upstreamId(fake.lastTaskId()));
    else {
      expect(found).toBeNull();
      expect(router.adapterFor(channel).findSubmission).toBeUndefined();
    }
  });

  it.runIf(spec.cannot)("refuses a request the type cannot do before anything is sent, with the spec's 400", async () => {
    const cannot = spec.cannot!;
    const sent = fake.requests.length;
    const error = await router.admits!(cannot.request).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code: "invalid_request", message: `${cannot.field} has an unsupported value` });
    expect(fake.requests.length).toBe(sent);
    await expect(router.admits!(request(spec.seconds))).resolves.toBeUndefined();
  });

  it("answers a probe without creating a task", async () => {
    const tasks = fake.tasks.size;
    await expect(router.adapterFor(channel).probe!()).resolves.toBeUndefined();
    expect(fake.tasks.size).toBe(tasks);
  });
});
