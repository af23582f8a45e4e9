/**
 * The signed `/media/p/` URL of a kept result (README "Results"; ADR 0023): its name, its content
 * types and the HMAC that signs and verifies it. Pure (node:crypto only): the stores that sign
 * (./local.ts, ./s3.ts) and the router that serves the URL (router/media.ts) share it, and the
 * router imports no business module (docs/architecture.md §1.2).
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/** Extensions a kept result may have, with the content type it is served as. */
export const MEDIA_TYPES: Readonly<Record<string, string>> = {
  mp4: "video/mp4",
  png: "image/png",
  jpg: "image/jpeg",
  webp: "image/webp",
};

/** A kept file's name: 40 hex digits and an extension of {@link MEDIA_TYPES}. */
export const MEDIA_NAME = /^[0-9a-f]{40}\.(mp4|png|jpg|webp)$/;

/** The URL-signing key of a SUBGRAPH_SECRET. */
export function mediaSigningKey(secret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), Buffer.alloc(0), "switchyard media url v1", 32));
}

function signature(key: Buffer, name: string, exp: number): string {
  return createHmac("sha256", key).update(`${name}.${exp}`).digest("base64url");
}

/**
 * Whether a `/media/p/` request is signed and not expired.
 * @param exp the `exp` parameter (unix seconds), `sig` the `sig` parameter
 */
export function verifyMediaSignature(key: Buffer, name: string, exp: string | null, sig: string | null, nowMs = Date.now()): "ok" | "expired" | "invalid" {
  if (!exp || !sig || !/^\d{1,12}$/.test(exp)) return "invalid";
  const expected = Buffer.from(signature(key, name, Number(exp)));
  const given = Buffer.from(sig);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return "invalid";
  return Number(exp) * 1000 < nowMs ? "expired" : "ok";
}

/** A signed URL of a kept result, valid for `ttlSeconds`. */
export function signedMediaUrl(baseUrl: string, name: string, key: Buffer, ttlSeconds: number): string {
  const exp = Math.floor(Date.now() / 1000) + ttlSeconds;
  return `${baseUrl.replace(/\/+$/, "")}/media/p/${name}?exp=${exp}&sig=${signature(key, name, exp)}`;
}

/** Where the router reads kept results from (disk: {@link diskMediaSource}; S3: ./s3.ts). */
export interface MediaSource {
  /** The size of a kept result by its URL name, or null when it is not kept. */
  stat(name: string): Promise<{ size: number } | null>;
  /** Its bytes from `start` to `end` inclusive. */
  open(name: string, start: number, end: number): Promise<NodeJS.ReadableStream>;
}
