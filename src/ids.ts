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
