/**
 * The one "own account" rule of the `Account` entity's fields (docs/architecture.md §7.1): both
 * subgraphs add fields to `Account`, and each answers only for the caller's own account.
 */
import type { Caller } from "../../src/auth/keys.ts";
import type { CallerAccess } from "./auth.ts";

/**
 * The caller of an `Account` field.
 * @param access the request's caller accessor (auth.ts {@link CallerAccess})
 * @param accountId the `Account` the field belongs to
 * @param scope the scope the field needs
 * @returns the caller holding `scope` when its key passes every policy and belongs to
 *   `accountId`; null when the key fails or is another account's (accounts never leak)
 * @throws AppError 403 `forbidden` for the caller's own account without `scope`
 */
export async function ownAccountCaller(access: CallerAccess, accountId: string, scope: string): Promise<Caller | null> {
  const caller = await access.callerOrNull();
  return caller && caller.accountId === accountId ? access.caller(scope) : null;
}
