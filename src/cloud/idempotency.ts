/**
 * Idempotency keys (docs/api/cloud.md §5.3; Stripe's semantics), scoped per account and operation
 * (`order.create`, `order.renew`, `domains.create`, `domains.purge`: one key may serve an order's
 * creation and its renewal): the same key and request replay the first result without doing
 * anything again; the same key with another request of the same operation is 409 `conflict`; a
 * retry while the first is still running is 409 too. Keys are kept 24 hours.
 * Only completed results are kept: a request that fails releases its key, so a corrected retry
 * with the same key can succeed (as Stripe does for requests that fail validation).
 */
import { createHash } from "node:crypto";
import type { Knex } from "knex";
import { AppError } from "../errors.ts";
import { isUniqueViolation, nowIso, type Db } from "../db/index.ts";

/** How long a completed key is kept, in milliseconds. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A claim older than this is taken to belong to a crashed process and may be taken over. */
export const IN_PROGRESS_STALE_MS = 60 * 1000;

/** The outcome of {@link withIdempotency}. */
export interface IdempotentResult<T> {
  result: T;
  /** True when this is a replay of an earlier request's result. */
  replayed: boolean;
}

/** SHA-256 of a canonical JSON form of a request (object keys sorted), for comparing retries. */
export function requestHash(operation: string, request: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value && typeof value === "object"
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
          )
        : value;
  return createHash("sha256")
    .update(JSON.stringify([operation, canonical(request)]))
    .digest("hex");
}

/**
 * Runs `work` at most once per (account, operation, idempotency key).
 * `work` receives the transaction in which the key is completed, so the result is stored
 * atomically with the change it describes.
 * @param key the Idempotency-Key (1-255 characters), or null/undefined to run without one
 * @param work does the change and returns a JSON-serializable snapshot of the result
 * @returns the result, and whether it was replayed
 * @throws AppError `conflict` (409) for another request under the same key or one still running;
 *   `invalid_request` for an over-long key; whatever `work` throws (the key is then released)
 */
export async function withIdempotency<T>(
  db: Db,
  scope: { accountId: string; key?: string | null; operation: string; request: unknown },
  work: (trx: Knex.Transaction) => Promise<T>,
): Promise<IdempotentResult<T>> {
  if (scope.key == null || scope.key === "") return { result: await db.transaction(work), replayed: false };
  if (scope.key.length > 255) throw new AppError("invalid_request", "Idempotency-Key must be at most 255 characters", { field: "Idempotency-Key" });
  const hash = requestHash(scope.operation, scope.request);
  const where = { account_id: scope.accountId, operation: scope.operation, idempotency_key: scope.key };
  const now = Date.now();

  // Claim the key (or find the earlier request) in a short transaction of its own, so a
  // concurrent retry sees the claim.
  const earlier = await db
    .transaction(async (trx) => {
      const row = await trx("idempotency_keys").where(where).first();
      if (row && Date.parse(row.expires_at) > now) {
        const stale = row.state === "in_progress" && now - Date.parse(row.created_at) > IN_PROGRESS_STALE_MS;
        if (!stale) return row;
        await trx("idempotency_keys").where(where).delete();
      } else if (row) {
        await trx("idempotency_keys").where(where).delete();
      }
      await trx("idempotency_keys").insert({
        ...where,
        request_hash: hash,
        state: "in_progress",
        response: null,
        created_at: nowIso(),
        expires_at: new Date(now + IDEMPOTENCY_TTL_MS).toISOString(),
      });
      return null;
    })
    .catch((error) => {
      // A concurrent claim won the insert race.
      if (isUniqueViolation(error)) return { state: "in_progress", request_hash: hash };
      throw error;
    });

  if (earlier) {
    if (earlier.request_hash !== hash) {
      throw new AppError("conflict", "Idempotency-Key was already used with a different request", { field: "Idempotency-Key" });
    }
    if (earlier.state !== "completed") {
      throw new AppError("conflict", "A request with this Idempotency-Key is still being processed", { field: "Idempotency-Key" });
    }
    return { result: JSON.parse(earlier.response) as T, replayed: true };
  }

  try {
    const result = await db.transaction(async (trx) => {
      const value = await work(trx);
      await trx("idempotency_keys")
        .where(where)
        .update({ state: "completed", response: JSON.stringify(value) });
      return value;
    });
    return { result, replayed: false };
  } catch (error) {
    await db("idempotency_keys")
      .where({ ...where, state: "in_progress" })
      .delete();
    throw error;
  }
}
