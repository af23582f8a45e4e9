/**
 * HS256 JSON Web Tokens (RFC 7519, RFC 7515 §A.1), signing only: the bearer credential of the
 * `kling` channel type (./kling.ts). node:crypto's HMAC-SHA-256 over
 * `base64url(header).base64url(payload)`; nothing here reads a token someone else made.
 */
import { createHmac } from "node:crypto";

const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");

/**
 * Signs a payload.
 * @param payload the claims (`iss`, `exp`, `nbf` in seconds since the epoch)
 * @param secret the HMAC key (Kling's secret key)
 * @returns the compact token `header.payload.signature`
 */
export function signHs256(payload: Record<string, unknown>, secret: string): string {
  const body = `${HEADER}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}`;
  return `${body}.${createHmac("sha256", secret).update(body).digest("base64url")}`;
}
