/**
 * Pieces both OpenAPI documents share that are not a body (bodies: router/rest/shapes/): the
 * bearer scheme, the request id, signature and rate-limit headers, and the handler that serves a
 * document as JSON.
 */
import type { ServerResponse } from "node:http";
import type { Header, OpenApiDocument, Parameter } from "./types.ts";

/** `Authorization: Bearer <API_KEY>` (docs/api/generation.md §5, docs/api/cloud.md §5). */
export const bearerAuth = {
  type: "http",
  scheme: "bearer",
  description: "API key, sent as `Authorization: Bearer <API_KEY>`. Missing or unknown: 401; disabled: 403.",
} as const;

/** The `X-Request-Id` request header: a client's own id, echoed when it is valid. */
export const requestIdParameter: Parameter = {
  name: "X-Request-Id",
  in: "header",
  required: false,
  description: "Optional request id of the client; echoed in the `X-Request-Id` response header when it matches the pattern, otherwise replaced by a new UUID.",
  schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,80}$" },
};

/** The `X-Service-Signature` request header (docs/architecture.md §8; algorithm in src/auth/signatures.ts). */
export const signatureParameter: Parameter = {
  name: "X-Service-Signature",
  in: "header",
  required: false,
  description:
    'Request signature `t=<unix seconds>,v1=<hex HMAC-SHA256(webhook_secret, "<t>.<METHOD>.<path with query>.<hex SHA-256 of the raw body>")>`. ' +
    "Required for keys created with `--require-signature`; checked whenever sent. Several `v1` values may be sent; `t` must be within 300 seconds of the server's clock. " +
    "A missing, wrong or stale signature is 401.",
  schema: { type: "string", minLength: 1, examples: ["t=1700000000,v1=5f2b…"] },
};

/** `X-Request-Id` on every response. */
export const requestIdHeader: Header = {
  description: "The request's id: the client's valid `X-Request-Id`, or a new UUID. Also logged.",
  required: true,
  schema: { type: "string", minLength: 1, maxLength: 80 },
};

/** `Retry-After` on a 429 of the cloud API. */
export const retryAfterHeader: Header = {
  description: "Seconds to wait before the key's rate limit admits another request.",
  required: true,
  schema: { type: "string", pattern: "^[1-9][0-9]*$" },
};

/** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers) on answers to a key with a rate limit. */
export const rateLimitPolicyHeader: Header = {
  description:
    'Sent for a key with a rate limit (draft-ietf-httpapi-ratelimit-headers): its policy, `"default";q=<requests>;w=<window in seconds>`. ' +
    "Absent for a key without one and for a request whose key does not authenticate.",
  required: false,
  schema: { type: "string", pattern: '^"default";q=[0-9]+;w=[1-9][0-9]*$', examples: ['"default";q=5;w=1'] },
};

/** `RateLimit` (draft-ietf-httpapi-ratelimit-headers) on answers to a key with a rate limit. */
export const rateLimitHeader: Header = {
  description:
    'Sent with `RateLimit-Policy`: `"default";r=<requests left in the current window>;t=<seconds until it resets>`. ' +
    "A 429 has `r=0`, and `t` equals `Retry-After`.",
  required: false,
  schema: { type: "string", pattern: '^"default";r=[0-9]+;t=[0-9]+$', examples: ['"default";r=3;t=1'] },
};

/** The RateLimit headers by reference, for a document whose components hold them under these names. */
export const rateLimitHeaderRefs = {
  "RateLimit-Policy": { $ref: "#/components/headers/RateLimit-Policy" },
  RateLimit: { $ref: "#/components/headers/RateLimit" },
} as const;

/**
 * A router handler that answers a document as JSON (serialized once).
 * @param document the OpenAPI document
 * @returns a handler writing 200 `application/json`
 */
export function serveDocument(document: OpenApiDocument): (call: { res: ServerResponse }) => void {
  const text = JSON.stringify(document);
  const length = String(Buffer.byteLength(text));
  return ({ res }) => {
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": length });
    res.end(text);
  };
}
