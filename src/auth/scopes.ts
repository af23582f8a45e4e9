/**
 * Key scopes (docs/architecture.md §8.3; README "Scopes" says what each operation needs; ADR 0007):
 * the list a key's scopes come from, and the check of one scope.
 */
import { AppError } from "../errors.ts";
import type { Caller } from "./caller.ts";

/**
 * Every scope a key can hold (docs/architecture.md §8; README "Scopes" says what each operation needs); a key
 * created without scopes holds them all. `resources:write` came later (ADR 0007): migration 007
 * gave it to every key that held `resources:read`.
 */
export const ALL_SCOPES = [
  "generation",
  "catalog:read",
  "orders:read",
  "orders:write",
  "domains:read",
  "domains:write",
  "usage:read",
  "resources:read",
  "resources:write",
  "billing:read",
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

/**
 * Requires a scope of the caller's key (docs/architecture.md §8 key scopes; docs/api/cloud.md §7: 403 for
 * insufficient key permissions).
 * @param caller the authenticated key
 * @param scope a scope such as `orders:write`
 * @returns nothing when the key holds the scope
 * @throws AppError `forbidden` (403) `API key lacks the <scope> scope`, details `{ scope }`
 */
export function requireScope(caller: Pick<Caller, "scopes">, scope: string): void {
  if (!caller.scopes.includes(scope)) {
    throw new AppError("forbidden", `API key lacks the ${scope} scope`, { scope });
  }
}
