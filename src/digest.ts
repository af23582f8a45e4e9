/**
 * Hex digests shared by request signatures (src/auth/signatures.ts), callback signatures
 * (src/events/webhook-signing.ts), stored key hashes (src/auth/keys.ts) and the router, which hashes
 * a signed request's body before the subgraphs verify it (docs/architecture.md §8.3).
 */
import { createHash, createHmac } from "node:crypto";

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
