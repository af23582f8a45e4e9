/**
 * Authentication and key policy for every subgraph: a thin adapter of src/auth/authenticate.ts (the
 * order of the checks) and src/auth/scopes.ts (per field). The facts only the router knows (client
 * IP, count id, signed method/path/body digest) come in the router's signed internal context
 * (internal-context.ts): `req.headers` here are those verified headers, never the HTTP headers of
 * the subgraph request.
 */
import type { IncomingMessage } from "node:http";
import { authenticateRequest, type RequestFacts } from "../../src/auth/authenticate.ts";
import { authenticate } from "../../src/auth/keys.ts";
import type { Caller } from "../../src/auth/caller.ts";
import type { RateLimiter } from "../../src/auth/rate-limit.ts";
import { requireScope } from "../../src/auth/scopes.ts";
import type { Db } from "../../src/db/index.ts";
import { callerObserver } from "./caller-report.ts";

/**
 * What a subgraph reads of a request: its headers (HTTP, or graphql-ws connection params
 * lower-cased) and, in-process only, the router's object for the client request (contract.ts
 * `LocalOperation.requestScope`).
 */
export type RequestLike = Pick<IncomingMessage, "headers"> & { requestScope?: object };

/** Reads one request header as a string. */
export function headerOf(req: RequestLike, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The facts of a request as the router stated them in its signed internal context. */
function requestFacts(req: RequestLike): RequestFacts {
  return {
    authorization: headerOf(req, "authorization"),
    clientIp: headerOf(req, "x-switchyard-client-ip") ?? null,
    signature: headerOf(req, "x-service-signature") ?? null,
    method: headerOf(req, "x-switchyard-method") ?? "",
    path: headerOf(req, "x-switchyard-path") ?? "",
    bodySha256: headerOf(req, "x-switchyard-body-sha256") ?? "",
    countId: headerOf(req, "x-switchyard-count-id") ?? null,
  };
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

/** Key lookups by client request (the router's in-process request scope), then by `Authorization` value. */
const lookups = new WeakMap<object, Map<string, Promise<Caller>>>();

/**
 * The key lookup of a subgraph request: one per client request when the router runs in this
 * process and states its request scope (both subgraphs' contexts share it: "one context per
 * request"); else the request's own. Only the lookup is shared: each subgraph still checks the
 * key's policy (allow-list, signature, rate limit) itself. The scope is an object the router
 * made, never a header, so nothing a client sends selects another request's lookup.
 */
function keyLookup(db: Db, req: RequestLike): (authorization: string | null | undefined) => Promise<Caller> {
  const scope = req.requestScope;
  if (!scope) return (authorization) => authenticate(db, authorization);
  return (authorization) => {
    let byValue = lookups.get(scope);
    if (!byValue) {
      byValue = new Map();
      lookups.set(scope, byValue);
    }
    const value = authorization ?? "";
    let caller = byValue.get(value);
    if (!caller) {
      caller = authenticate(db, authorization);
      byValue.set(value, caller);
    }
    return caller;
  };
}

/**
 * Builds the caller accessor of one subgraph request.
 * @param rateLimiter shared per process (or backed by Redis)
 * @param req the request's headers and, in-process, the router's request scope (see {@link keyLookup})
 */
export function callerAccess(db: Db, rateLimiter: RateLimiter, req: RequestLike): CallerAccess {
  let checked: Promise<Caller> | undefined;
  const lookupKey = keyLookup(db, req);
  // The router's request log and RateLimit headers learn the key and quota (caller-report.ts).
  const check = () => (checked ??= authenticateRequest(db, rateLimiter, requestFacts(req), callerObserver(req), lookupKey));
  return {
    async caller(scope) {
      const caller = await check();
      if (scope) requireScope(caller, scope);
      return caller;
    },
    callerOrNull: () => check().catch(() => null),
  };
}
