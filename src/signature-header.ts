/**
 * The signature header `X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]` and its
 * check (docs/architecture.md §8), shared by request signatures (src/auth/signatures.ts) and
 * callback signatures (src/events/webhook-signing.ts): a leaf both import, so neither module
 * imports the other (§1.2).
 */
import { timingSafeEqual } from "node:crypto";
import { AppError } from "./errors.ts";

/** A parsed `t=<seconds>,v1=<hex>[,v1=<hex>...]` header. */
export interface ParsedSignatureHeader {
  /** Unix seconds. */
  timestamp: number;
  /** Every `v1` value, lower case. */
  signatures: string[];
}

/**
 * Parses a signature header `t=<unix seconds>,v1=<hex>[,v1=<hex>...]` (docs/architecture.md §8; unknown
 * schemes such as `v0=` are ignored, as Stripe does).
 * @returns the timestamp and the `v1` values, or null when `t` or every well-formed `v1` is missing
 */
export function parseSignatureHeader(header: string): ParsedSignatureHeader | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === "t") {
      if (!/^\d{1,12}$/.test(value)) return null;
      timestamp = Number(value);
    } else if (name === "v1" && /^[0-9a-fA-F]{64}$/.test(value)) {
      signatures.push(value.toLowerCase());
    }
  }
  return timestamp === null || signatures.length === 0 ? null : { timestamp, signatures };
}

/**
 * Checks a signature header against the expected HMAC, in constant time per candidate.
 * @param header the header value (null or empty: missing)
 * @param expectedFor computes the expected hex HMAC for the header's timestamp
 * @param toleranceSeconds allowed clock difference, both directions
 * @param nowSeconds the current unix time in seconds
 * @returns the signature that matched: its timestamp and hex HMAC (the same for every header that
 *   signs the same content at the same second, however its `v1` values are arranged)
 * @throws AppError `unauthorized` (401): `Missing request signature`, `Invalid request signature`,
 *   `Request signature timestamp outside the tolerance`
 */
export function verifySignatureHeader(
  header: string | null | undefined,
  expectedFor: (timestamp: number) => string,
  toleranceSeconds: number,
  nowSeconds: number,
): VerifiedSignature {
  if (!header?.trim()) throw new AppError("unauthorized", "Missing request signature");
  const parsed = parseSignatureHeader(header);
  if (!parsed) throw new AppError("unauthorized", "Invalid request signature");
  const expected = Buffer.from(expectedFor(parsed.timestamp), "hex");
  let matched = false;
  for (const candidate of parsed.signatures) {
    // Every candidate is compared (no early exit) so timing does not tell which one matched.
    if (timingSafeEqual(Buffer.from(candidate, "hex"), expected)) matched = true;
  }
  if (!matched) throw new AppError("unauthorized", "Invalid request signature");
  if (Math.abs(nowSeconds - parsed.timestamp) > toleranceSeconds) {
    throw new AppError("unauthorized", "Request signature timestamp outside the tolerance");
  }
  return { timestamp: parsed.timestamp, hmac: expected.toString("hex") };
}

/** A signature that verified: its `t` and the HMAC it matched. */
export interface VerifiedSignature {
  /** Unix seconds. */
  timestamp: number;
  /** The matching hex HMAC. */
  hmac: string;
}
