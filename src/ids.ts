/**
 * Identifiers: a readable prefix, a time component (so ids sort roughly by creation) and
 * randomness. Example: `task_lq2x9k3a_8f3c0d2b1e7a`.
 */
import { randomBytes } from "node:crypto";

/** Creates a new id with the given prefix (`task`, `acc`, `key`, ...). */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}${randomBytes(6).toString("hex")}`;
}
