/**
 * Provider results kept on disk under `DATA_DIR/media` and served by signed, expiring URLs
 * (README "Channels", "Results"; ADR 0023).
 *
 * - A result is downloaded once (to `<name>.part`, then renamed, so a reader never sees half a
 *   file), named by a hash of its channel and key: no provider id, URL or key is in the name.
 * - Its URL is `{PUBLIC_URL}/media/p/<name>?exp=<unix seconds>&sig=<HMAC-SHA-256>`; the router
 *   (router/media.ts) checks the signature and the expiry and streams the file. The signing key is
 *   derived from SUBGRAPH_SECRET, which the router and the generation process share.
 * - MEDIA_URL_TTL_SECONDS sets how long a URL is valid; MEDIA_RETENTION_SECONDS how long a file is
 *   kept ({@link sweepMedia}, run by the generation process). A task's stored URL stops working
 *   at the earlier of the two.
 *
 * The S3-compatible alternative (MEDIA_STORE=s3) is ./s3.ts; ./index.ts picks one.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { UpstreamError } from "../upstream/types.ts";
import type { ResultStore } from "../upstream/result-store.ts";
import { MEDIA_NAME, MEDIA_TYPES, mediaSigningKey, signedMediaUrl, verifyMediaSignature, type MediaSource } from "./signed-url.ts";

export { MEDIA_NAME, MEDIA_TYPES, mediaSigningKey, signedMediaUrl, verifyMediaSignature, type MediaSource };

/** Largest result kept (bytes): 2 GiB. */
const MAX_BYTES = 2 * 1024 ** 3;

/** The stored name of a channel's result (40 hex digits): tells nothing of the provider. */
export function mediaHash(channelId: string, key: string): string {
  return createHash("sha256").update(`${channelId}\n${key}`).digest("hex").slice(0, 40);
}

/** Kept results under `dir` (`DATA_DIR/media`). */
export function diskMediaSource(dir: string): MediaSource {
  return {
    async stat(name) {
      const info = await stat(path.join(dir, name)).catch(() => null);
      return info?.isFile() ? { size: info.size } : null;
    },
    async open(name, start, end) {
      return createReadStream(path.join(dir, name), { start, end });
    },
  };
}

/** Settings of the local store. */
export interface LocalMediaOptions {
  /** `DATA_DIR/media`. */
  dir: string;
  /** The public base URL customers reach the router at. */
  baseUrl: () => string;
  /** {@link mediaSigningKey} of SUBGRAPH_SECRET. */
  key: Buffer;
  /** MEDIA_URL_TTL_SECONDS. */
  ttlSeconds: number;
}

/** The local store: one {@link ResultStore} per channel. */
export interface LocalMedia {
  forChannel(channelId: string): ResultStore;
}

/** Creates the store (the directory is made on first use). */
export function createLocalMedia(options: LocalMediaOptions): LocalMedia {
  const signedUrl = (name: string) => signedMediaUrl(options.baseUrl(), name, options.key, options.ttlSeconds);
  const hashOf = mediaHash;
  /** The kept file of a hash, whatever its extension, or null. */
  async function existing(hash: string): Promise<string | null> {
    for (const ext of Object.keys(MEDIA_TYPES)) {
      const size = await stat(path.join(options.dir, `${hash}.${ext}`)).then(
        (s) => s.size,
        () => -1,
      );
      if (size >= 0) return `${hash}.${ext}`;
    }
    return null;
  }
  // Downloads under way in this process, so two polls of one task download once.
  const pending = new Map<string, Promise<string>>();

  async function download(hash: string, open: () => Promise<Response>, extension: string): Promise<string> {
    const response = await open();
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    const ext = Object.entries(MEDIA_TYPES).find(([, t]) => t === type)?.[0] ?? (MEDIA_TYPES[extension] ? extension : "mp4");
    const name = `${hash}.${ext}`;
    const part = path.join(options.dir, `${hash}.${process.pid}.part`);
    await mkdir(options.dir, { recursive: true });
    if (!response.body) throw new UpstreamError("failed", "the result has no body", "body");
    let bytes = 0;
    const body = Readable.fromWeb(response.body as never);
    body.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_BYTES) body.destroy(new Error("the result is larger than 2 GiB"));
    });
    try {
      await pipeline(body, createWriteStream(part));
    } catch (error) {
      await rm(part, { force: true });
      throw new UpstreamError("failed", `result download: ${(error as Error).message}`, "transport");
    }
    await rename(part, path.join(options.dir, name));
    return name;
  }

  return {
    forChannel(channelId) {
      return {
        async keep(key, open, extension) {
          const hash = hashOf(channelId, key);
          const kept = await existing(hash);
          if (kept) return signedUrl(kept);
          let running = pending.get(hash);
          if (!running) {
            running = download(hash, open, extension).finally(() => pending.delete(hash));
            pending.set(hash, running);
          }
          return signedUrl(await running);
        },
        async urlOf(key) {
          const kept = await existing(hashOf(channelId, key));
          return kept ? signedUrl(kept) : null;
        },
      };
    },
  };
}

/**
 * Deletes kept results older than the retention (and `.part` files an interrupted download left).
 * @param retentionSeconds MEDIA_RETENTION_SECONDS
 * @returns how many files were deleted
 */
export async function sweepMedia(dir: string, retentionSeconds: number, nowMs = Date.now()): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  let deleted = 0;
  for (const name of names) {
    if (!MEDIA_NAME.test(name) && !name.endsWith(".part")) continue;
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => null);
    const limit = name.endsWith(".part") ? 86_400_000 : retentionSeconds * 1000;
    if (info && nowMs - info.mtimeMs > limit) {
      await rm(file, { force: true });
      deleted++;
    }
  }
  return deleted;
}
