/**
 * The one camelCase ↔ snake_case name converter (docs/architecture.md §7.3). The domain takes
 * camelCase inputs; snake_case is the REST edge's dialect (router/rest/shapes/zod.ts) and the form in
 * which idempotency keys fingerprint a request, so a retry hashes the same whichever API sent it
 * and whichever release stored the key.
 */

/** A camelCase name in snake_case (`referenceImages` → `reference_images`); names only, never values. */
export function toSnake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** A snake_case name in camelCase (`reference_images` → `referenceImages`): the inverse of {@link toSnake}. */
export function toCamel(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * A camelCase input in the spec's snake_case shape: keys of nested objects converted too, except
 * under `metadata`, which is the caller's own data and kept exactly as sent.
 * @param input a domain input (plain JSON: objects, arrays, scalars)
 * @returns a new object; the input is not changed
 */
export function toSpecShape(input: unknown): unknown {
  if (Array.isArray(input)) return input.map(toSpecShape);
  if (!input || typeof input !== "object") return input;
  return Object.fromEntries(Object.entries(input).map(([key, value]) => [toSnake(key), key === "metadata" ? value : toSpecShape(value)]));
}
