/**
 * Request signatures (docs/api/cloud.md §5; docs/architecture.md §8.3). The header format and its
 * check, shared with callback signatures (src/events/webhook-signing.ts), are src/signature-header.ts.
 *
 * ## Request signatures (`X-Service-Signature`)
 *
 * A key created with `--require-signature` must sign each request. The algorithm, for the README:
 *
 * ```
 * t        = the current time in unix seconds (an integer)
 * body_sha = hex SHA-256 of the raw request body bytes (of the empty string when there is no body)
 * payload  = t + "." + METHOD + "." + path + "." + body_sha
 *            METHOD upper case (GET, POST, ...); path exactly as sent on the request line,
 *            query string included: /openapi/v1/products?category=cdn
 * v1       = hex HMAC-SHA256(secret, payload)   (lower case hex)
 * header   X-Service-Signature: t=<t>,v1=<v1>
 * ```
 *
 * The server accepts the request when one `v1` value matches (several may be sent while a secret
 * rotates: `t=1700000000,v1=<new>,v1=<old>`) and `t` is within 300 seconds of the server's clock,
 * in either direction. Values are compared in constant time. Failures are 401 `unauthorized`:
 * `Missing request signature`, `Invalid request signature` (malformed header or no matching
 * `v1`), `Request signature timestamp outside the tolerance` (a matching `v1` but a stale or
 * future `t`). The secret is the key's `webhook_secret` (printed by `keys create --json`): the API
 * key itself is stored only as a hash, so the server could not verify an HMAC keyed with it.
 *
 * Example (shell):
 * ```
 * t=$(date +%s); body='{"product_id":"p1"}'
 * sha=$(printf '%s' "$body" | sha256sum | cut -d' ' -f1)
 * v1=$(printf '%s' "$t.POST./openapi/v1/orders.$sha" | openssl dgst -sha256 -hmac "$SECRET" -hex | sed 's/^.* //')
 * curl -H "X-Service-Signature: t=$t,v1=$v1" ...
 * ```
 */
import { hmacSha256Hex, sha256Hex } from "../digest.ts";
import { verifySignatureHeader, type VerifiedSignature } from "../signature-header.ts";

export type { VerifiedSignature };

/** Request-signature tolerance in seconds, in both directions (docs/architecture.md §8.3). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** What a request signature covers (see the module docstring). */
export interface SignedRequest {
  /** HTTP method; upper-cased before signing. */
  method: string;
  /** The request target as sent: path and query string, e.g. `/openapi/v1/orders?x=1`. */
  path: string;
  /** The raw body (empty or absent: the empty body). */
  body?: string | Uint8Array | null;
  /** Unix seconds. */
  timestamp: number;
}

function requestPayload(timestamp: number, method: string, path: string, bodySha256: string): string {
  return `${timestamp}.${method.toUpperCase()}.${path}.${bodySha256.toLowerCase()}`;
}

/**
 * Signs a request the way clients must (docs/architecture.md §8.3; algorithm in the module docstring).
 * @param secret the key's `webhook_secret`
 * @param request method, path with query, raw body, unix-seconds timestamp
 * @returns the `X-Service-Signature` header value `t=<t>,v1=<hex>`
 */
export function signRequest(secret: string, request: SignedRequest): string {
  const t = Math.floor(request.timestamp);
  return `t=${t},v1=${hmacSha256Hex(secret, requestPayload(t, request.method, request.path, sha256Hex(request.body)))}`;
}

/**
 * Verifies a request's `X-Service-Signature` (docs/api/cloud.md §5; algorithm in the module
 * docstring): one `v1` must match, `t` within {@link SIGNATURE_TOLERANCE_SECONDS} of now.
 * @param secret the key's `webhook_secret`
 * @param header the `X-Service-Signature` value, null when absent
 * @param request method, path with query, hex SHA-256 of the raw body ({@link sha256Hex}), now in unix seconds
 * @returns the signature that matched (for the replay check, {@link RateLimiter.claimSignature})
 * @throws AppError `unauthorized` (401): `Missing request signature`, `Invalid request signature`,
 *   `Request signature timestamp outside the tolerance`
 */
export function verifyRequestSignature(
  secret: string,
  header: string | null,
  request: { method: string; path: string; bodySha256: string; nowSeconds: number },
): VerifiedSignature {
  return verifySignatureHeader(
    header,
    (t) => hmacSha256Hex(secret, requestPayload(t, request.method, request.path, request.bodySha256)),
    SIGNATURE_TOLERANCE_SECONDS,
    request.nowSeconds,
  );
}
