/**
 * Provider results kept on disk (src/generation/media/local.ts; README "Channel types"; ADR 0023):
 * one download however many polls ask at once, signed URLs checked by the router's handler, and
 * the retention sweep. Real files in a temporary folder, the router's own handler over HTTP.
 */
import { mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveProviderMedia } from "../../router/media.ts";
import { createLocalMedia, mediaSigningKey, sweepMedia, verifyMediaSignature } from "../../src/generation/media/local.ts";

describe("provider results on disk", () => {
  let dir: string;
  let server: http.Server;
  let base: string;
  const key = mediaSigningKey("media-test-secret-0123456789abcdef");

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "switchyard-media-test-"));
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://media");
      void serveProviderMedia(req, res, url.pathname.slice("/media/p/".length), url.searchParams, dir, key);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it("downloads a result once for polls asking at the same time, each getting a signed URL to it", async () => {
    const store = createLocalMedia({ dir, baseUrl: () => base, key, ttlSeconds: 60 }).forChannel("chn_a");
    let opened = 0;
    const open = async () => {
      opened += 1;
      return new Response("frame-bytes", { headers: { "content-type": "video/mp4" } });
    };
    const urls = await Promise.all([store.keep("t2v:1-0", open, "mp4"), store.keep("t2v:1-0", open, "mp4"), store.keep("t2v:1-0", open, "mp4")]);
    expect(opened).toBe(1);
    expect(new Set(urls.map((u) => new URL(u).pathname)).size).toBe(1);
    expect(await (await fetch(urls[0]!)).text()).toBe("frame-bytes");
    expect((await readdir(dir)).filter((n) => n.endsWith(".part"))).toEqual([]);
    // Another channel's result under the same provider id is another file.
    const other = await createLocalMedia({ dir, baseUrl: () => base, key, ttlSeconds: 60 })
      .forChannel("chn_b")
      .keep("t2v:1-0", async () => new Response("other", { headers: { "content-type": "video/mp4" } }), "mp4");
    expect(new URL(other).pathname).not.toBe(new URL(urls[0]!).pathname);
  });

  it("answers 403 for a URL signed with another key and 404 for a name it never kept", async () => {
    const store = createLocalMedia({ dir, baseUrl: () => base, key: mediaSigningKey("another-secret-0123456789abcdef!!"), ttlSeconds: 60 }).forChannel("chn_a");
    const foreign = await store.keep("img-0", async () => new Response("png", { headers: { "content-type": "image/png" } }), "png");
    expect((await fetch(foreign)).status).toBe(403);
    const name = "0".repeat(40);
    const exp = String(Math.floor(Date.now() / 1000) + 60);
    expect(verifyMediaSignature(key, `${name}.mp4`, exp, "x")).toBe("invalid");
    expect((await fetch(`${base}/media/p/${name}.mp4?exp=${exp}&sig=x`)).status).toBe(403);
    expect((await fetch(`${base}/media/p/..%2F..%2Fetc%2Fpasswd?exp=${exp}&sig=x`)).status).toBe(404);
  });

  it("sweeps results older than the retention and leaves newer ones", async () => {
    const store = createLocalMedia({ dir, baseUrl: () => base, key, ttlSeconds: 60 }).forChannel("chn_sweep");
    const oldUrl = await store.keep("old", async () => new Response("old", { headers: { "content-type": "video/mp4" } }), "mp4");
    const newUrl = await store.keep("new", async () => new Response("new", { headers: { "content-type": "video/mp4" } }), "mp4");
    const oldFile = path.join(dir, new URL(oldUrl).pathname.split("/").at(-1)!);
    const longAgo = new Date(Date.now() - 10 * 86_400_000);
    await utimes(oldFile, longAgo, longAgo);
    await writeFile(path.join(dir, "stray.txt"), "not ours");
    expect(await sweepMedia(dir, 86_400)).toBe(1);
    expect((await fetch(oldUrl)).status).toBe(404);
    expect(await store.urlOf("old")).toBeNull();
    expect((await fetch(newUrl)).status).toBe(200);
    expect(await readdir(dir)).toContain("stray.txt");
  });
});
