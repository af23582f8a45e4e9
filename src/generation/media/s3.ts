/**
 * Provider results kept in an S3-compatible bucket instead of `DATA_DIR/media` (MEDIA_STORE=s3;
 * README "Channel types"; ADR 0023), for deployments whose router and generation processes share
 * no disk. Same names, same signed `/media/p/<hash>.<ext>` URLs as ./local.ts; the router streams
 * the object from the bucket (router/media.ts). Client: the AWS SDK v3 (`@aws-sdk/client-s3`);
 * tested against s3rver (test/integration/media-results.test.ts).
 *
 * - Object key `<prefix><hash>`, its content type stored with it (the URL's extension follows it).
 * - A result is first written to a temporary file (so its length is known to PutObject and a
 *   broken download uploads nothing), then uploaded, then the file is removed.
 * - Retention: {@link createS3Media}'s `sweep` lists the prefix and deletes objects older than
 *   MEDIA_RETENTION_SECONDS (a bucket lifecycle rule does the same without the listing).
 */
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { UpstreamError } from "../upstream/types.ts";
import { MEDIA_TYPES, mediaHash, signedMediaUrl, type LocalMedia, type MediaSource } from "./local.ts";

/** Settings of the bucket (MEDIA_S3_*). */
export interface S3Settings {
  /** An S3-compatible endpoint (MinIO, R2, …); unset: AWS. Path-style addressing when set. */
  endpoint?: string;
  region: string;
  bucket: string;
  /** Key prefix, for example `media/`. */
  prefix: string;
  /** Unset: the SDK's default credential chain. */
  accessKeyId?: string;
  secretAccessKey?: string;
}

/** A client of the bucket. */
export function s3ClientFor(settings: S3Settings): S3Client {
  return new S3Client({
    region: settings.region,
    // An S3-compatible store: path-style addressing, and checksums only where S3 requires them
    // (the SDK's default aws-chunked checksum framing is not understood by every such store).
    ...(settings.endpoint
      ? {
          endpoint: settings.endpoint,
          forcePathStyle: true,
          requestChecksumCalculation: "WHEN_REQUIRED" as const,
          responseChecksumValidation: "WHEN_REQUIRED" as const,
        }
      : {}),
    ...(settings.accessKeyId && settings.secretAccessKey
      ? { credentials: { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey } }
      : {}),
  });
}

/** Largest result kept (bytes): 2 GiB. */
const MAX_BYTES = 2 * 1024 ** 3;

/** The extension of a content type, or undefined. */
const extensionOf = (type: string | undefined) => Object.entries(MEDIA_TYPES).find(([, t]) => t === (type ?? "").split(";")[0]!.trim().toLowerCase())?.[0];

/** True when the SDK error says the object is not there. */
const notFound = (error: unknown) => {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NotFound" || e?.name === "NoSuchKey" || e?.$metadata?.httpStatusCode === 404;
};

/** The bucket as a result store (per channel), a source for the router, and the retention sweep. */
export interface S3Media extends LocalMedia {
  source: MediaSource;
  /** Deletes objects older than the retention. @returns how many */
  sweep(retentionSeconds: number, nowMs?: number): Promise<number>;
}

/** Creates the store over one bucket. */
export function createS3Media(options: { client: S3Client; settings: S3Settings; baseUrl: () => string; key: Buffer; ttlSeconds: number }): S3Media {
  const { client, settings } = options;
  const Bucket = settings.bucket;
  const objectKey = (hash: string) => `${settings.prefix}${hash}`;

  /** The URL name of a kept object (`<hash>.<ext>`), or null. */
  async function existing(hash: string): Promise<string | null> {
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket, Key: objectKey(hash) }));
      return `${hash}.${extensionOf(head.ContentType) ?? "mp4"}`;
    } catch (error) {
      if (notFound(error)) return null;
      throw new UpstreamError("failed", `result store: ${(error as Error).name}`);
    }
  }
  const pending = new Map<string, Promise<string>>();

  async function upload(hash: string, open: () => Promise<Response>, extension: string): Promise<string> {
    const response = await open();
    if (!response.body) throw new UpstreamError("failed", "the result has no body", "body");
    const ext = extensionOf(response.headers.get("content-type") ?? undefined) ?? (MEDIA_TYPES[extension] ? extension : "mp4");
    const dir = await mkdtemp(path.join(os.tmpdir(), "switchyard-result-"));
    const file = path.join(dir, "result");
    try {
      let bytes = 0;
      const body = Readable.fromWeb(response.body as never);
      body.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_BYTES) body.destroy(new Error("the result is larger than 2 GiB"));
      });
      await pipeline(body, createWriteStream(file)).catch((error) => {
        throw new UpstreamError("failed", `result download: ${(error as Error).message}`, "transport");
      });
      const { size } = await stat(file);
      await client
        .send(new PutObjectCommand({ Bucket, Key: objectKey(hash), Body: createReadStream(file), ContentLength: size, ContentType: MEDIA_TYPES[ext] }))
        .catch((error) => {
          throw new UpstreamError("failed", `result store: ${(error as Error).name}`);
        });
      return `${hash}.${ext}`;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  const url = (name: string) => signedMediaUrl(options.baseUrl(), name, options.key, options.ttlSeconds);

  return {
    forChannel(channelId) {
      return {
        async keep(key, open, extension) {
          const hash = mediaHash(channelId, key);
          const kept = await existing(hash);
          if (kept) return url(kept);
          let running = pending.get(hash);
          if (!running) {
            running = upload(hash, open, extension).finally(() => pending.delete(hash));
            pending.set(hash, running);
          }
          return url(await running);
        },
        async urlOf(key) {
          const kept = await existing(mediaHash(channelId, key));
          return kept ? url(kept) : null;
        },
      };
    },
    source: {
      async stat(name) {
        try {
          const head = await client.send(new HeadObjectCommand({ Bucket, Key: objectKey(name.slice(0, name.indexOf("."))) }));
          return { size: Number(head.ContentLength ?? 0) };
        } catch (error) {
          if (notFound(error)) return null;
          throw error;
        }
      },
      async open(name, start, end) {
        const object = await client.send(new GetObjectCommand({ Bucket, Key: objectKey(name.slice(0, name.indexOf("."))), Range: `bytes=${start}-${end}` }));
        return object.Body as Readable;
      },
    },
    async sweep(retentionSeconds, nowMs = Date.now()) {
      let deleted = 0;
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: settings.prefix, ContinuationToken: token }));
        for (const object of page.Contents ?? []) {
          if (object.Key && object.LastModified && nowMs - object.LastModified.getTime() > retentionSeconds * 1000) {
            await client.send(new DeleteObjectCommand({ Bucket, Key: object.Key }));
            deleted++;
          }
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return deleted;
    },
  };
}
