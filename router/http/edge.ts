/**
 * The router's edge facts (docs/architecture.md §2.12; README "Security model", row "router edge (HTTP)"): what
 * the router states about every HTTP request before anything else reads it, like Hive Gateway's
 * `useRequestId` but for every path (REST shims, pages, `/health`), not only `/graphql`.
 * - `X-Request-Id`: a client's well-formed one is echoed for correlation only, else a new UUID;
 *   set on the request (for the subgraphs and the log) and on the response.
 * - Every `x-switchyard-*` header a client sends is dropped: only the router speaks for itself to
 *   the subgraphs.
 * - `x-switchyard-client-ip`: the client's address, the nearest untrusted hop (TRUST_PROXY, proxy-addr).
 * - `x-switchyard-count-id`: a fresh id the rate limiter counts the request under (once, however
 *   many subgraphs it reaches), and the key of its report (router/request-report.ts).
 */
import type http from "node:http";
import { randomUUID } from "node:crypto";
import proxyaddr from "proxy-addr";

/** A client's `X-Request-Id` that is echoed; anything else is replaced. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,80}$/;

/** The ids the edge gave one request. */
export interface EdgeIds {
  /** The request id (the client's, when well-formed, else a UUID). */
  requestId: string;
  /** The count id (always a new UUID). */
  countId: string;
}

/** The edge of one router: its proxy trust, and the stamp it puts on each request. */
export interface Edge {
  /** The client's address of a request or WebSocket upgrade: the nearest untrusted hop; "" when the socket has none (closed). */
  clientIp(req: http.IncomingMessage): string;
  /**
   * The scheme a trusted proxy says the client used (`X-Forwarded-Proto`, its first value), or null
   * when the socket's peer is not a TRUST_PROXY address (a client's own header is never believed).
   */
  trustedProto(req: http.IncomingMessage): string | null;
  /** Rewrites the request's headers with the edge facts and sets `X-Request-Id` on the response. @returns the ids it gave */
  stamp(req: http.IncomingMessage, res: http.ServerResponse): EdgeIds;
}

/**
 * Creates the edge of one router.
 * @param trustProxy TRUST_PROXY: addresses or ranges (proxy-addr's forms) whose X-Forwarded-For is believed; none by default
 */
export function createEdge(trustProxy: readonly string[] = []): Edge {
  // Behind nginx the socket's peer is the proxy; the client is the nearest untrusted hop of X-Forwarded-For.
  const trust = proxyaddr.compile([...trustProxy]);
  const clientIp = (req: http.IncomingMessage) => (req.socket.remoteAddress ? proxyaddr(req, trust) : "");
  return {
    clientIp,
    trustedProto(req) {
      const proto = req.headers["x-forwarded-proto"];
      return typeof proto === "string" && req.socket.remoteAddress && trust(req.socket.remoteAddress, 0) ? proto.split(",")[0]!.trim() : null;
    },
    stamp(req, res) {
      // A client's X-Request-Id is echoed for correlation only; nothing counts or trusts it.
      const incoming = req.headers["x-request-id"];
      const requestId = typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : randomUUID();
      req.headers["x-request-id"] = requestId;
      // Only the router speaks for itself to the subgraphs: every x-switchyard-* is its own.
      for (const name of Object.keys(req.headers)) if (name.startsWith("x-switchyard-")) delete req.headers[name];
      req.headers["x-switchyard-client-ip"] = clientIp(req);
      // The id the rate limiter counts this request under (once, however many subgraphs it reaches).
      const countId = randomUUID();
      req.headers["x-switchyard-count-id"] = countId;
      res.setHeader("x-request-id", requestId);
      return { requestId, countId };
    },
  };
}
