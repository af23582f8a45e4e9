/**
 * Callback signatures (docs/architecture.md §8.4): `X-Service-Signature: t=<unix seconds>,v1=<hex
 * HMAC-SHA256(webhook_secret, "<t>.<raw body>")>`, the header format of request signatures
 * (src/signature-header.ts) over the body alone.
 */
import { hmacSha256Hex } from "../digest.ts";
import { verifySignatureHeader } from "../signature-header.ts";

function webhookPayload(rawBody: string | Uint8Array, t: number): string | Buffer {
  return typeof rawBody === "string" ? `${t}.${rawBody}` : Buffer.concat([Buffer.from(`${t}.`), rawBody]);
}

/**
 * Signs a callback body (docs/architecture.md §8).
 * @param secret the key's `webhook_secret`
 * @param rawBody the exact body bytes sent (a string is taken as UTF-8)
 * @param t unix seconds
 * @returns the `X-Service-Signature` value `t=<t>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`
 */
export function signWebhook(secret: string, rawBody: string | Uint8Array, t: number): string {
  const seconds = Math.floor(t);
  return `t=${seconds},v1=${hmacSha256Hex(secret, webhookPayload(rawBody, seconds))}`;
}

/**
 * Verifies a callback's `X-Service-Signature` (docs/architecture.md §8), for receivers and tests: one `v1`
 * value must match (several are allowed while a secret rotates), compared in constant time, and
 * `t` must be within the tolerance of now, in either direction.
 * @param secret the key's `webhook_secret`
 * @param rawBody the body bytes exactly as received
 * @param header the header value, null or undefined when absent
 * @param toleranceSeconds allowed clock difference (default 300)
 * @param nowSeconds the receiver's unix time in seconds (default: the clock)
 * @returns nothing when valid
 * @throws AppError `unauthorized` (401): `Missing request signature`, `Invalid request signature`,
 *   `Request signature timestamp outside the tolerance`
 */
export function verifyWebhookSignature(
  secret: string,
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  toleranceSeconds = 300,
  nowSeconds = Math.floor(Date.now() / 1000),
): void {
  verifySignatureHeader(header, (t) => hmacSha256Hex(secret, webhookPayload(rawBody, t)), toleranceSeconds, nowSeconds);
}
