/**
 * Identifiers: a readable prefix, a time component (so ids sort roughly by creation) and
 * randomness. Example: `task_lq2x9k3a_8f3c0d2b1e7a`.
 */
import { randomFillSync } from "node:crypto";

/** Random bytes drawn from the CSPRNG 4 KiB at a time: one call per id cost ~1% of a submission. */
const pool = Buffer.alloc(4096);
let used = pool.length;

/** Creates a new id with the given prefix (`task`, `acc`, `key`, ...). */
export function newId(prefix: string): string {
  if (used + 6 > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  used += 6;
  return `${prefix}_${Date.now().toString(36)}${pool.toString("hex", used - 6, used)}`;
}

/**
 * The prefix of each kind of object's id, as the generators write it (`newId`, `txn_<ledger id>`,
 * `stm_YYYY-MM`, `dom_<domain>`): a global id (GraphQL `Node.id`, docs/adr/0019-global-object-ids.md)
 * names its kind by its prefix alone. No prefix starts another, so an id has at most one kind.
 */
export const ID_PREFIXES = {
  task: "task_",
  order: "ord_",
  resource: "res_",
  domain: "dom_",
  purge: "purge_",
  product: "prd_",
  vendor: "vnd_",
  transaction: "txn_",
  statement: "stm_",
  account: "acc_",
} as const;

/** A kind of object with a global id. */
export type IdKind = keyof typeof ID_PREFIXES;

/** The longest global id: `dom_` and a domain of at most 253 characters. Longer is malformed. */
const MAX_GLOBAL_ID_LENGTH = 4 + 253;

/**
 * The kind of object an id names, by its prefix.
 * @param id any string
 * @returns the kind, or null when the id carries no known prefix or is longer than any id (the
 *   caller answers such an id as naming nothing)
 */
export function kindOfId(id: string): IdKind | null {
  if (typeof id !== "string" || id.length > MAX_GLOBAL_ID_LENGTH) return null;
  for (const [kind, prefix] of Object.entries(ID_PREFIXES) as [IdKind, string][]) {
    if (id.startsWith(prefix)) return kind;
  }
  return null;
}

/**
 * The global id of a CDN domain: `dom_` and its (lower-case, stored) name. Stable because a
 * domain is never renamed, and unique because a name belongs to one account at most.
 * @param name the stored domain name
 */
export function domainId(name: string): string {
  return `${ID_PREFIXES.domain}${name}`;
}
