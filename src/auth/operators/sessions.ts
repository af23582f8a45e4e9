/**
 * Console sessions (issue 23 §1; docs/adr/0022-operators-and-audit.md): the router's sign-in route
 * makes a 256-bit random session id, the cloud subgraph stores its SHA-256 with the operator once
 * the password holds, and the router sets the id in an HttpOnly, SameSite=Strict cookie. A
 * session ends at sign-out (on the server: the row is marked ended), after
 * `ADMIN_SESSION_IDLE_MINUTES` without a request, or `ADMIN_SESSION_HOURS` after sign-in.
 * The CSRF token of a session is derived from its id ({@link csrfTokenOf}): only a page that was
 * handed it (same origin: the cookie is HttpOnly) can send it back with a write.
 */
import type { Db } from "../../db/index.ts";
import { secretDigest, toOperator, type Operator } from "./store.ts";
import { SESSION_ID_PATTERN, csrfMatches, csrfTokenOf } from "./session-token.ts";

export { SESSION_ID_PATTERN, csrfMatches, csrfTokenOf };

/** How long sessions live. */
export interface SessionSettings {
  /** Ends after this many seconds without a request (`ADMIN_SESSION_IDLE_MINUTES` × 60). */
  idleSeconds: number;
  /** Ends this many seconds after sign-in whatever happens (`ADMIN_SESSION_HOURS` × 3600). */
  absoluteSeconds: number;
}

/** Last-seen times are written at most this often (seconds): not one write per request. */
const TOUCH_SECONDS = 30;

/**
 * Stores a new session of an operator.
 * @param sessionId the id the router made ({@link SESSION_ID_PATTERN})
 * @returns when it ends at the latest (ISO 8601)
 */
export async function startSession(db: Db, operatorId: string, sessionId: string, settings: SessionSettings, now = Date.now()): Promise<string> {
  const at = new Date(now).toISOString();
  const expiresAt = new Date(now + settings.absoluteSeconds * 1000).toISOString();
  await db("operator_sessions").insert({ id_hash: secretDigest(sessionId), operator_id: operatorId, created_at: at, last_seen_at: at, expires_at: expiresAt });
  return expiresAt;
}

/**
 * The active operator of a live session, or null (unknown, ended, idle too long, past its absolute
 * expiry, or its operator disabled). Refreshes the last-seen time at most every 30 s.
 */
export async function operatorOfSession(db: Db, sessionId: string, settings: SessionSettings, now = Date.now()): Promise<Operator | null> {
  if (!SESSION_ID_PATTERN.test(sessionId)) return null;
  const idHash = secretDigest(sessionId);
  const row = await db("operator_sessions as s")
    .join("operators as o", "o.id", "s.operator_id")
    .where("s.id_hash", idHash)
    .first("s.last_seen_at", "s.expires_at", "s.ended_at", "o.id", "o.email", "o.role", "o.status", "o.created_at", "o.updated_at");
  if (!row || row.ended_at || row.status !== "active") return null;
  const lastSeen = Date.parse(row.last_seen_at);
  if (now >= Date.parse(row.expires_at) || now - lastSeen > settings.idleSeconds * 1000) return null;
  if (now - lastSeen > TOUCH_SECONDS * 1000)
    await db("operator_sessions")
      .where("id_hash", idHash)
      .update({ last_seen_at: new Date(now).toISOString() });
  return toOperator(row);
}

/** Ends a session on the server (sign-out). @returns whether a live session was ended */
export async function endSession(db: Db, sessionId: string, now = Date.now()): Promise<boolean> {
  if (!SESSION_ID_PATTERN.test(sessionId)) return false;
  const ended = await db("operator_sessions")
    .where("id_hash", secretDigest(sessionId))
    .whereNull("ended_at")
    .update({ ended_at: new Date(now).toISOString() });
  return ended > 0;
}
