/**
 * The admin token (docs/architecture.md §2 `ADMIN_TOKEN`): the bearer token of the admin GraphQL mutations
 * (keys, top-ups, catalog). It is not an API key: it is compared with the configured token only,
 * never looked up among keys, and no key is ever accepted in its place.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { AppError } from "../errors.ts";

/** Message of the 403 when no `ADMIN_TOKEN` is configured. */
export const ADMIN_DISABLED_MESSAGE = "Admin API is disabled";
/** Message of the 401 for an absent or wrong admin token. */
export const ADMIN_UNAUTHORIZED_MESSAGE = "Invalid or missing admin token";

/** The token of an `Authorization: Bearer <token>` header value (scheme case-insensitive), or null. */
function bearerToken(authorization: string | null | undefined): string | null {
  if (typeof authorization !== "string") return null;
  const match = /^bearer[ \t]+(\S.*)$/i.exec(authorization.trim());
  return match ? match[1]!.trim() : null;
}

/** SHA-256 of a string: equal-length inputs for {@link timingSafeEqual}, whatever the lengths given. */
const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/**
 * Checks the admin token of a request in constant time (the comparison takes as long whether the
 * first or the last character differs, and whatever the length presented).
 * @param expected the configured `ADMIN_TOKEN`; unset or empty disables the admin API
 * @param authorization the request's `Authorization` header value (`Bearer <token>`)
 * @returns nothing when the token matches
 * @throws AppError `forbidden` (403) `Admin API is disabled` when no token is configured (checked
 *   first, whatever the request carries); `unauthorized` (401) `Invalid or missing admin token`
 *   for an absent header, another scheme or a wrong token
 * @see docs/architecture.md §2 (admin), §4 (authentication comes first)
 */
export function checkAdminToken(expected: string | null | undefined, authorization: string | null | undefined): void {
  if (!expected) throw new AppError("forbidden", ADMIN_DISABLED_MESSAGE);
  const presented = bearerToken(authorization);
  // Compare digests even when nothing was presented, so an absent header costs the same.
  const matches = timingSafeEqual(digest(presented ?? ""), digest(expected));
  if (presented === null || !matches) throw new AppError("unauthorized", ADMIN_UNAUTHORIZED_MESSAGE);
}
