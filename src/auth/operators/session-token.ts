/**
 * A console session's id format and its CSRF token (docs/adr/0022-operators-and-audit.md): pure
 * (node:crypto only), so the router, which makes the id and sets the cookie, reads them without
 * importing the sessions' store (docs/architecture.md §1.2); ./sessions.ts re-exports them.
 */
import { createHash, timingSafeEqual } from "node:crypto";

/** A session id as the router makes it: 43 base64url characters (32 random bytes). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** The CSRF token of a session: base64url SHA-256 of a label and the session id. */
export function csrfTokenOf(sessionId: string): string {
  return createHash("sha256").update(`switchyard-csrf\0${sessionId}`).digest("base64url");
}

/** Whether `presented` is the CSRF token of the session (constant time). */
export function csrfMatches(sessionId: string, presented: string | null | undefined): boolean {
  if (typeof presented !== "string") return false;
  const expected = Buffer.from(csrfTokenOf(sessionId));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
