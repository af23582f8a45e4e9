/**
 * The result store of this deployment (README "Channel types"; ADR 0023): `DATA_DIR/media` by
 * default, an S3-compatible bucket with MEDIA_STORE=s3. The generation process keeps results in it
 * (one store per channel) and sweeps it; the router reads from it ({@link MediaStore.source}).
 */
import path from "node:path";
import { ConfigError } from "../../config.ts";
import type { ResultStore } from "../upstream/result-store.ts";
import { createLocalMedia, diskMediaSource, mediaSigningKey, sweepMedia, type MediaSource } from "./local.ts";

/** The settings read here (src/config.ts). */
export interface MediaSettings {
  dataDir: string;
  mediaStore: "disk" | "s3";
  mediaUrlTtlSeconds: number;
  mediaS3Endpoint?: string;
  mediaS3Region: string;
  mediaS3Bucket?: string;
  mediaS3Prefix: string;
  mediaS3AccessKeyId?: string;
  mediaS3SecretAccessKey?: string;
}

/** A deployment's result store. */
export interface MediaStore {
  forChannel(channelId: string): ResultStore;
  /** What the router streams `/media/p/` from. */
  source: MediaSource;
  /** Deletes results older than the retention (as of `nowMs`, default now). @returns how many */
  sweep(retentionSeconds: number, nowMs?: number): Promise<number>;
}

/**
 * Opens the store.
 * @param baseUrl the public URL customers reach the router at
 * @param secret SUBGRAPH_SECRET (the URL-signing key is derived from it)
 * @throws ConfigError MEDIA_STORE=s3 without MEDIA_S3_BUCKET
 */
export async function openMediaStore(settings: MediaSettings, baseUrl: () => string, secret: string): Promise<MediaStore> {
  const key = mediaSigningKey(secret);
  if (settings.mediaStore === "s3") {
    if (!settings.mediaS3Bucket) throw new ConfigError("MEDIA_S3_BUCKET is required when MEDIA_STORE=s3");
    // Loaded only when used: the SDK is large, and most deployments keep results on disk.
    const { createS3Media, s3ClientFor } = await import("./s3.ts");
    const s3 = {
      endpoint: settings.mediaS3Endpoint,
      region: settings.mediaS3Region,
      bucket: settings.mediaS3Bucket,
      prefix: settings.mediaS3Prefix,
      accessKeyId: settings.mediaS3AccessKeyId,
      secretAccessKey: settings.mediaS3SecretAccessKey,
    };
    return createS3Media({ client: s3ClientFor(s3), settings: s3, baseUrl, key, ttlSeconds: settings.mediaUrlTtlSeconds });
  }
  const dir = path.join(settings.dataDir, "media");
  const local = createLocalMedia({ dir, baseUrl, key, ttlSeconds: settings.mediaUrlTtlSeconds });
  return { forChannel: local.forChannel, source: diskMediaSource(dir), sweep: (retention, nowMs) => sweepMedia(dir, retention, nowMs) };
}
