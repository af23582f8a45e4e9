/**
 * CORS at the router's edge (README "Security model"; issue 20 finding 8), one policy for every
 * path: `/graphql`, both REST shims, `/health`. Only the exact origins of CORS_ORIGINS get
 * `Access-Control-Allow-Origin` (their own origin, never a reflected one or `*`), and nobody gets
 * `Access-Control-Allow-Credentials`: an API key is a bearer token a page sends in
 * `Authorization` itself, which needs that header allowed, not the browser's credentials
 * (cookies, HTTP authentication), and the router sets no cookie. The router's own pages are
 * same-origin and need no header. A preflight from any other origin is refused with 403.
 *
 * (The gateway's own CORS, GraphQL Yoga's, is off: it echoed any origin with credentials.)
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** The methods of the API (a preflight's `Access-Control-Allow-Methods`). */
const ALLOWED_METHODS = "GET, POST, PUT, DELETE";

/** The request headers a page may send (a preflight's `Access-Control-Allow-Headers`). */
const ALLOWED_HEADERS =
  "authorization, content-type, accept, accept-language, idempotency-key, x-service-signature, x-request-id, x-graphql-event-stream-token";

/** The response headers a page may read beyond the CORS-safelisted ones. */
const EXPOSED_HEADERS = "x-request-id, retry-after, ratelimit, ratelimit-policy, idempotent-replayed, content-disposition";

/** How long a browser may keep a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE = "600";

/**
 * Applies the policy to one request: sets the CORS headers of an allowed origin's request, and
 * answers a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) itself.
 * @param origins the exact origins of CORS_ORIGINS (empty: no cross-origin caller)
 * @returns true when the request was a preflight and is answered (204 for an allowed origin, 403
 *   otherwise); false when it goes on to its route
 */
export function applyCors(req: IncomingMessage, res: ServerResponse, origins: ReadonlySet<string>): boolean {
  const origin = req.headers.origin;
  const allowed = typeof origin === "string" && origins.has(origin);
  // With origins configured an answer differs by Origin: caches must keep them apart.
  if (origins.size > 0) res.setHeader("vary", "Origin");
  if (req.method === "OPTIONS" && origin !== undefined && req.headers["access-control-request-method"] !== undefined) {
    req.resume();
    if (!allowed) {
      res.writeHead(403, { "content-length": "0" });
      res.end();
      return true;
    }
    res.writeHead(204, {
      "access-control-allow-origin": origin,
      "access-control-allow-methods": ALLOWED_METHODS,
      "access-control-allow-headers": ALLOWED_HEADERS,
      "access-control-max-age": PREFLIGHT_MAX_AGE,
      "content-length": "0",
    });
    res.end();
    return true;
  }
  if (allowed) {
    res.setHeader("access-control-allow-origin", origin);
    res.setHeader("access-control-expose-headers", EXPOSED_HEADERS);
  }
  return false;
}
