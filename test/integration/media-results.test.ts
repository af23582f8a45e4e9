/**
 * Provider results kept by the result store (src/generation/media/; README "Channel types"; ADR
 * 0023), on disk and in an S3-compatible bucket (s3rver, a real S3 API server on loopback, through
 * the AWS SDK): one download however many polls ask at once, per-channel names, signed URLs checked
 * by the router's handler (byte ranges too), and the retention sweep.
 */
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveProviderMedia } from "../../router/media.ts";
import { openMediaStore, type MediaStore } from "../../src/generation/media/index.ts";
import { mediaSigningKey, verifyMediaSignature } from "../../src/generation/media/local.ts";

const SECRET = "media-test-secret-0123456789abcdef";
const video = (text: string) => async () => new Response(text, { headers: { "content-type": "video/mp4" } });

/** A store of each kind, and what stops it. */
interface Setup {
  store(ttlSeconds?: number, secret?: string): Promise<MediaStore>;
  close(): Promise<void>;
}

async function diskSetup(dir: string): Promise<Setup> {
  const settings = { dataDir: dir, mediaStore: "disk" as const, mediaS3Region: "us-east-1", mediaS3Prefix: "media/" };
  return {
    store: (ttl = 60, secret = SECRET) => openMediaStore({ ...settings, mediaUrlTtlSeconds: ttl }, () => base, secret),
    async close() {},
  };
}

async function s3Setup(dir: string): Promise<Setup> {
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: path.join(dir, "s3"),
    configureBuckets: [{ name: "results", configs: [] }],
  });
  const { port } = (await server.run()) as AddressInfo;
  const settings = {
    dataDir: dir,
    mediaStore: "s3" as const,
    mediaS3Endpoint: `http://127.0.0.1:${port}`,
    mediaS3Region: "us-east-1",
    mediaS3Bucket: "results",
    mediaS3Prefix: "media/",
    mediaS3AccessKeyId: "S3RVER",
    mediaS3SecretAccessKey: "S3RVER",
  };
  return {
    store: (ttl = 60, secret = SECRET) => openMediaStore({ ...settings, mediaUrlTtlSeconds: ttl }, () => base, secret),
    close: () => server.close(),
  };
}

let base = "";

describe.each([
  ["disk", diskSetup],
  ["s3", s3Setup],
] as const)("provider results kept (%s)", (kind, makeSetup) => {
  let dir: string;
  let setup: Setup;
  let server: http.Server;
  let store: MediaStore;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "switchyard-media-test-"));
    setup = await makeSetup(dir);
    store = await setup.store();
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://media");
      void serveProviderMedia(req, res, url.pathname.slice("/media/p/".length), url.searchParams, store.source, mediaSigningKey(SECRET));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await setup?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("downloads a result once for polls asking at the same time, each getting a signed URL to it", async () => {
    const channel = store.forChannel("chn_a");
    let opened = 0;
    const open = async () => {
      opened += 1;
      return video("frame-bytes")();
    };
    const urls = await Promise.all([channel.keep("t2v:1-0", open, "mp4"), channel.keep("t2v:1-0", open, "mp4"), channel.keep("t2v:1-0", open, "mp4")]);
    expect(opened).toBe(1);
    expect(new Set(urls.map((u) => new URL(u).pathname)).size).toBe(1);
    const served = await fetch(urls[0]!);
    expect(served.headers.get("content-type")).toBe("video/mp4");
    expect(await served.text()).toBe("frame-bytes");
    const ranged = await fetch(urls[0]!, { headers: { range: "bytes=6-10" } });
    expect(ranged.status).toBe(206);
    expect(await ranged.text()).toBe("bytes");
    expect(await channel.urlOf("t2v:1-0")).toMatch(/\/media\/p\/[0-9a-f]{40}\.mp4\?/);
    // Another channel's result under the same provider id is another object.
    const other = await store.forChannel("chn_b").keep("t2v:1-0", video("other"), "mp4");
    expect(new URL(other).pathname).not.toBe(new URL(urls[0]!).pathname);
  });

  it("answers 403 for a URL signed with another key or expired, and 404 for a name it never kept", async () => {
    const foreign = await (await setup.store(60, "another-secret-0123456789abcdef!!")).forChannel("chn_a").keep("img-0", video("x"), "mp4");
    expect((await fetch(foreign)).status).toBe(403);
    const expired = await (await setup.store(-10)).forChannel("chn_a").keep("img-0", video("x"), "mp4");
    expect(await (await fetch(expired)).json()).toEqual({ code: 403, message: "Media link expired" });
    const name = "0".repeat(40);
    const exp = String(Math.floor(Date.now() / 1000) + 60);
    expect(verifyMediaSignature(mediaSigningKey(SECRET), `${name}.mp4`, exp, "x")).toBe("invalid");
    expect((await fetch(`${base}/media/p/..%2F..%2Fetc%2Fpasswd?exp=${exp}&sig=x`)).status).toBe(404);
  });

  it("sweeps results older than the retention, and only those", async () => {
    const channel = store.forChannel("chn_sweep");
    const url = await channel.keep("old", video("old"), "mp4");
    expect(await store.sweep(86_400)).toBe(0);
    expect((await fetch(url)).status).toBe(200);
    if (kind === "disk") await writeFile(path.join(dir, "media", "stray.txt"), "not ours");
    // Ten days on, everything kept so far is past a one-day retention.
    expect(await store.sweep(86_400, Date.now() + 10 * 86_400_000)).toBeGreaterThanOrEqual(1);
    expect((await fetch(url)).status).toBe(404);
    expect(await channel.urlOf("old")).toBeNull();
    if (kind === "disk") expect(await readdir(path.join(dir, "media"))).toContain("stray.txt");
  });
});
