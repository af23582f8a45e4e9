/**
 * Authentication and key policy for every subgraph: a thin adapter of src/auth/authenticate.ts (the
 * order of the checks) and src/auth/scopes.ts (per field). The facts only the router knows (client
 * IP, count id, signed method/path/body digest) come in the router's signed internal context
 * (internal-context.ts): `req.headers` here are those verified headers, never the HTTP headers of
 * the subgraph request.
 */
import type { IncomingMessage } from "node:http";
import { authenticateRequest, type RequestFacts } from "../../src/auth/authenticate.ts";
import { authenticate, authenticateWithTotals, type KeyTotals } from "../../src/auth/keys.ts";
import type { Caller } from "../../src/auth/caller.ts";
import type { RateLimiter } from "../../src/auth/rate-limit.ts";
import { requireScope } from "../../src/auth/scopes.ts";
import type { Db } from "../../src/db/index.ts";
import { callerObserver } from "./caller-report.ts";

/**
 * What a subgraph reads of a request: its headers (HTTP, or graphql-ws connection params
 * lower-cased) and, in-process only, the router's object for the client request and the kind of
 * this subgraph operation (contract.ts `LocalOperation.requestScope`, `operationType`).
 */
export type RequestLike = Pick<IncomingMessage, "headers"> & { requestScope?: object; operationType?: string };

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
  /**
   * The key's running totals and its account's balance as read with the key, when that is as
   * fresh as a read of them now would be for this request: only while every operation of the
   * client request so far is a query (see {@link keyLookup}). Null otherwise (over HTTP, in a
   * mutation, or after one in the same request): then read them.
   * @throws as {@link caller}
   */
  totals(): Promise<KeyTotals | null>;
}

/** One key lookup of a client request: the caller, and its totals when read with it. */
interface KeyRead {
  read: Promise<{ caller: Caller; totals: KeyTotals | null }>;
  caller: Promise<Caller>;
}

/** What a client request's subgraph operations share in this process. */
interface ScopeState {
  /** Key lookups by `Authorization` value. */
  lookups: Map<string, KeyRead>;
  /** Set once an operation that may write (anything but a query) starts in the request. */
  mayWrite: boolean;
}

/** Per client request (the router's in-process request scope). */
const scopes = new WeakMap<object, ScopeState>();

/** What {@link keyLookup} gives one subgraph operation. */
interface OperationKeyLookup {
  lookup(authorization: string | null | undefined): Promise<Caller>;
  totals(): Promise<KeyTotals | null>;
}

const noTotals = async () => null;

/**
 * The key lookup of a subgraph request: one per client request when the router runs in this
 * process and states its request scope (both subgraphs' contexts share it: "one context per
 * request"); else the request's own. Only the lookup is shared: each subgraph still checks the
 * key's policy (allow-list, signature, rate limit) itself. The scope is an object the router
 * made, never a header, so nothing a client sends selects another request's lookup.
 *
 * The read-only rule: while every operation of the client request is a query, the lookup also
 * reads the key's totals and balance (`authenticateWithTotals`), and {@link CallerAccess.totals}
 * hands them out; a query writes nothing, so nothing this request did is missing from them. An
 * operation of any other kind (a mutation, or one of unknown kind) marks the request before any
 * of its resolvers runs: from then on the totals are refused (and a lookup made then reads the
 * key alone), so a balance or count asked for after a write is read after it. Over HTTP there is
 * no scope and no operation kind at context time: the totals are always read on their own.
 */
function keyLookup(db: Db, req: RequestLike): OperationKeyLookup {
  const scope = req.requestScope;
  if (!scope) return { lookup: (authorization) => authenticate(db, authorization), totals: noTotals };
  let state = scopes.get(scope);
  if (!state) {
    state = { lookups: new Map(), mayWrite: false };
    scopes.set(scope, state);
  }
  if (req.operationType !== "query") state.mayWrite = true;
  const shared = state;
  let used: KeyRead | undefined;
  return {
    lookup(authorization) {
      const value = authorization ?? "";
      let entry = shared.lookups.get(value);
      if (!entry) {
        const read = shared.mayWrite ? authenticate(db, authorization).then((caller) => ({ caller, totals: null })) : authenticateWithTotals(db, authorization);
        entry = { read, caller: read.then((r) => r.caller) };
        shared.lookups.set(value, entry);
      }
      used = entry;
      return entry.caller;
    },
    totals: async () => (used && !shared.mayWrite ? (await used.read).totals : null),
  };
}

/**
 * Builds the caller accessor of one subgraph request.
 * @param rateLimiter shared per process (or backed by Redis)
 * @param req the request's headers and, in-process, the router's request scope and the
 *   operation's kind (see {@link keyLookup})
 */
export function callerAccess(db: Db, rateLimiter: RateLimiter, req: RequestLike): CallerAccess {
  let checked: Promise<Caller> | undefined;
  const key = keyLookup(db, req);
  // The router's request log and RateLimit headers learn the key and quota (caller-report.ts).
  const check = () => (checked ??= authenticateRequest(db, rateLimiter, requestFacts(req), callerObserver(req), key.lookup));
  return {
    async caller(scope) {
      const caller = await check();
      if (scope) requireScope(caller, scope);
      return caller;
    },
    callerOrNull: () => check().catch(() => null),
    async totals() {
      await check();
      return key.totals();
    },
  };
}
