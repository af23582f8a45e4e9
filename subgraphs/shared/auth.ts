/**
 * Authentication and key policy for every subgraph (docs/api/generation.md §5, docs/api/cloud.md §5):
 * the key (401/403 disabled), its source-IP allow-list (403), its request signature when present
 * or required (401), its rate limit (429) and, per field, its scopes (403). The facts only the
 * router knows (client IP, count id, signed method/path/body digest) come in the router's signed
 * internal context (internal-context.ts): `req.headers` here are those verified headers, never
 * the HTTP headers of the subgraph request.
 */
import type { IncomingMessage } from "node:http";
import { randomUUID } from "node:crypto";
import { authenticate, type Caller } from "../../src/auth/keys.ts";
import { checkSourceIp, requireScope, verifyRequestSignature, type RateLimiter } from "../../src/auth/policy.ts";
import type { Db } from "../../src/db/index.ts";
import { countAndNote, noteCaller } from "./caller-report.ts";

/** What a subgraph reads of a request: its headers (HTTP, or graphql-ws connection params lower-cased). */
export type RequestLike = Pick<IncomingMessage, "headers">;

/** Reads one request header as a string. */
export function headerOf(req: RequestLike, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The caller of one request, authenticated once, checked per scope. */
export interface CallerAccess {
  /**
   * The authenticated caller holding `scope` (when given).
   * @throws AppError 401 unauthorized, 403 key_disabled/forbidden, 429 rate_limited
   */
  caller(scope?: string): Promise<Caller>;
  /** The caller when the key passes every policy, else null (never throws). */
  callerOrNull(): Promise<Caller | null>;
}

/**
 * Builds the caller accessor of one subgraph request.
 * @param rateLimiter shared per process (or backed by Redis)
 */
export function callerAccess(db: Db, rateLimiter: RateLimiter, req: RequestLike): CallerAccess {
  let checked: Promise<Caller> | undefined;
  const check = () =>
    (checked ??= (async () => {
      const caller = await authenticate(db, headerOf(req, "authorization"));
      noteCaller(req, caller); // for the router's request log and RateLimit headers (caller-report.ts)
      checkSourceIp(caller, headerOf(req, "x-switchyard-client-ip") ?? null);
      const signature = headerOf(req, "x-service-signature") ?? null;
      // The id the router minted for the client request (never the client's X-Request-Id): one
      // client request reaching both subgraphs counts once, and may show its signature twice.
      const countId = headerOf(req, "x-switchyard-count-id") ?? null;
      if (caller.requireSignature || signature) {
        const verified = verifyRequestSignature(caller.signingSecret ?? "", signature, {
          method: headerOf(req, "x-switchyard-method") ?? "",
          path: headerOf(req, "x-switchyard-path") ?? "",
          bodySha256: headerOf(req, "x-switchyard-body-sha256") ?? "",
          nowSeconds: Math.floor(Date.now() / 1000),
        });
        await rateLimiter.claimSignature(caller.keyId, verified, countId ?? randomUUID());
      }
      await countAndNote(rateLimiter, caller, countId, req);
      return caller;
    })());
  return {
    async caller(scope) {
      const caller = await check();
      if (scope) requireScope(caller, scope);
      return caller;
    },
    callerOrNull: () => check().catch(() => null),
  };
}
