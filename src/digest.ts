/**
 * Hex digests shared by request signatures (src/auth/signatures.ts), callback signatures
 * (src/events/webhook-signing.ts), stored key hashes (src/auth/keys.ts) and the router, which hashes
 * a signed request's body before the subgraphs verify it (docs/architecture.md §8.3); and the
 * constant-time comparison of configured bearer tokens (`ADMIN_TOKEN`, `METRICS_TOKEN`).
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/**
 * Hex SHA-256 of a raw body.
 * @param body the raw bytes or text (UTF-8); undefined or null hashes the empty body
 * @returns 64 lower-case hex digits
 */
export function sha256Hex(body: string | Uint8Array | null | undefined): string {
  return createHash("sha256")
    .update(body ?? "")
    .digest("hex");
}

/**
 * Hex HMAC-SHA256 of a payload.
 * @param secret the shared secret (UTF-8)
 * @param payload the signed text or bytes
 * @returns 64 lower-case hex digits
 */
export function hmacSha256Hex(secret: string, payload: string | Uint8Array): string {
  return createHmac("sha256", secret).update(payload).digest("hex");
}

/**
 * Compares a presented secret with the configured one in constant time: the comparison takes as
 * long whether the first or the last character differs, and whatever the length presented (both
 * are hashed to 32 bytes first, so not even the length leaks).
 * @param presented what the request carried
 * @param expected the configured secret
 * @returns true when they are equal
 */
export function secretsEqual(presented: string, expected: string): boolean {
  const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();
  return timingSafeEqual(digest(presented), digest(expected));
}
