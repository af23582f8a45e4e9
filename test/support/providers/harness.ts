/**
 * The channel router over fake providers, as the channel-type tests use it: a migrated test
 * database with `chn_default` disabled, the real router and health recorder, the result store in a
 * temporary folder, and the router's `/media/p/` handler on a port of its own.
 */
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { serveProviderMedia } from "../../../router/media.ts";
import { migrate } from "../../../src/db/index.ts";
import { createKeyBox, type KeyBox } from "../../../src/generation/channels/crypto.ts";
import { createChannelHealth } from "../../../src/generation/channels/health.ts";
import { createChannelRouter, type ChannelRouter } from "../../../src/generation/channels/router.ts";
import { addChannel, setChannelStatus, upsertDefaultChannel } from "../../../src/generation/channels/store.ts";
import { createLocalMedia, diskMediaSource, mediaSigningKey, type LocalMedia } from "../../../src/generation/media/local.ts";
import type { GenerationRequest } from "../../../src/generation/validation.ts";
import { openTestDb, type TestDb } from "../db.ts";
import type { FakeProvider } from "./base.ts";

/** A running harness. */
export interface ChannelHarness {
  testDb: TestDb;
  box: KeyBox;
  router: ChannelRouter;
  media: LocalMedia;
  mediaDir: string;
  mediaUrl: string;
  key: Buffer;
  close(): Promise<void>;
}

/** Starts the harness. @param timeoutMs UPSTREAM_TIMEOUT_MS of the router */
export async function startChannelHarness(name: string, timeoutMs = 1500): Promise<ChannelHarness> {
  const testDb = await openTestDb(`switchyard-${name}-`);
  await migrate(testDb.db);
  const box = createKeyBox("0123456789abcdef0123456789abcdef");
  const key = mediaSigningKey("fedcba9876543210fedcba9876543210");
  const mediaDir = await mkdtemp(path.join(os.tmpdir(), "switchyard-media-"));
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://media");
    void serveProviderMedia(req, res, url.pathname.slice("/media/p/".length), url.searchParams, diskMediaSource(mediaDir), key);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const mediaUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const media = createLocalMedia({ dir: mediaDir, baseUrl: () => mediaUrl, key, ttlSeconds: 600 });
  await upsertDefaultChannel(testDb.db, "simulator:");
  await setChannelStatus(testDb.db, "chn_default", false);
  const logger = pino({ level: "silent" });
  const health = createChannelHealth({ db: testDb.db, logger, threshold: 100, probeBaseMs: 600_000 });
  const router = createChannelRouter({
    db: testDb.db,
    logger,
    box,
    implicit: { name: "unused" } as never,
    health,
    timeoutMs,
    maxAttempts: 3,
    results: (id) => media.forChannel(id),
  });
  return {
    testDb,
    box,
    router,
    media,
    mediaDir,
    mediaUrl,
    key,
    async close() {
      await health.stop();
      await new Promise((resolve) => server.close(resolve));
      await testDb.close();
      await rm(mediaDir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the harness named `name`, then the fake provider, then adds one channel of `fields` over
 * it (the fake's URL and credentials), as each channel-type mapping test sets up.
 */
export async function startChannelOver<F extends FakeProvider>(
  name: string,
  startFake: () => Promise<F>,
  fields: Omit<Parameters<typeof addChannel>[2], "baseUrl">,
): Promise<{ h: ChannelHarness; fake: F; channelId: string }> {
  const h = await startChannelHarness(name);
  let fake: F | undefined;
  try {
    fake = await startFake();
    const { id } = await addChannel(h.testDb.db, h.box, { ...fields, baseUrl: fake.url, ...fake.credentials });
    return { h, fake, channelId: id };
  } catch (error) {
    await fake?.close();
    await h.close();
    throw error;
  }
}

/** A request without references of any kind. */
export const NO_REFERENCES = { images: [], audios: [], videos: [], frameStart: null, frameEnd: null };

/** A validated video request of model 52 (5 s, 720P, no references), with `fields` over it. */
export const video = (fields: Partial<GenerationRequest>): GenerationRequest => ({
  kind: "video",
  modelId: 52,
  modelName: "video-52",
  prompt: "a lighthouse at dusk",
  size: null,
  seconds: 5,
  resolution: "720P",
  count: 1,
  references: NO_REFERENCES,
  ...fields,
});

/** A validated image request of model 45 (1k, one image), with `fields` over it. */
export const image = (fields: Partial<GenerationRequest>): GenerationRequest => ({
  ...video({}),
  kind: "image",
  modelId: 45,
  modelName: "image-45",
  seconds: null,
  resolution: "1k",
  ...fields,
});

/** The last POST a fake provider received (a submission). */
export const lastPost = (fake: FakeProvider) => fake.requests.filter((r) => r.method === "POST").at(-1)!;
