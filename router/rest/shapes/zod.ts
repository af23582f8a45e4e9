/**
 * zod with OpenAPI metadata (`@asteasolutions/zod-to-openapi`): the one description of every REST
 * request and answer (docs/adr/0025-rest-shapes.md). A shape module imports `z` from here, so the
 * `.openapi()` extension is installed before any schema is built.
 */
import { extendZodWithOpenApi } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";

extendZodWithOpenApi(z);

export { z };

/** Largest magnitude of a GraphQL `Int` (32-bit signed): a larger JSON integer is a type error, not a value error. */
const MAX_INT32 = 2 ** 31 - 1;

/**
 * A JSON integer that GraphQL's `Int` can carry; a fraction, a string or a value beyond 32 bits
 * is a wire type error (see {@link checkBody}).
 */
export const int = () => z.number().int();

/**
 * Marks the 32-bit bound of an `Int` field: `superRefine` adds a custom issue flagged `wire` that
 * {@link checkBody} reports like a type error, as GraphQL would refuse the value as an `Int`.
 */
export function int32<T extends z.ZodTypeAny>(schema: T) {
  return schema.superRefine((value, ctx) => {
    if (typeof value === "number" && Math.abs(value) > MAX_INT32) ctx.addIssue({ code: z.ZodIssueCode.custom, params: { wire: true } });
  });
}

/** What {@link checkBody} found wrong first with a body. */
export type BodyProblem =
  /** A present field (or item of a list: `item`) whose JSON type is wrong; `message` from the shape's error map. */
  | { kind: "type"; field: string; item: boolean; message: string }
  /** A required field that is absent or null. */
  | { kind: "missing"; field: string };

/** Whether an issue is about the JSON type of a present value (not a value rule, not an absent field). */
function isWireIssue(issue: z.ZodIssue): boolean {
  if (issue.code === z.ZodIssueCode.custom) return issue.params?.wire === true;
  return issue.code === z.ZodIssueCode.invalid_type && issue.received !== "undefined" && issue.received !== "null";
}

/** Object keys whose value is null, removed (nested objects too, not inside arrays): null means omitted. */
function withoutNulls(value: unknown): unknown {
  if (!value || typeof value !== "object" || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null)
      .map(([k, v]) => [k, withoutNulls(v)]),
  );
}

/**
 * Checks a REST body's JSON types against its shape: the first present field (in the shape's
 * order, which is the GraphQL input's) whose type is wrong, else the first required field that is
 * absent or null. Value rules (ranges, enums, model-dependent limits) are the service's, which
 * answers them in the spec's order (src/generation/validation.ts, src/cloud/validation.ts).
 * @param errorMap the surface's zod error map: gives a type issue the spec's message
 * @returns the problem, or null when the body's types are right
 */
export function checkBody(shape: z.ZodTypeAny, body: Record<string, unknown>, errorMap: z.ZodErrorMap): BodyProblem | null {
  const result = shape.safeParse(withoutNulls(body), { errorMap });
  if (result.success) return null;
  const issues = result.error.issues;
  const wire = issues.find(isWireIssue);
  if (wire) {
    const item = wire.path.some((part) => typeof part === "number");
    return { kind: "type", field: fieldPath(wire.path), item, message: wire.message };
  }
  const missing = issues.find((issue) => issue.code === z.ZodIssueCode.invalid_type);
  return missing ? { kind: "missing", field: fieldPath(missing.path) } : null;
}

/** A field as REST errors name it: the object keys of an issue's path, joined with dots (items not counted). */
export function fieldPath(path: (string | number)[]): string {
  return path.filter((part) => typeof part === "string").join(".");
}

/** The object schema under optional/nullable/default/effects wrappers, or null when there is none. */
function objectOf(schema: z.ZodTypeAny): z.AnyZodObject | null {
  let current: z.ZodTypeAny = schema;
  for (;;) {
    if (current instanceof z.ZodObject) return current;
    if (current instanceof z.ZodOptional || current instanceof z.ZodNullable) current = current.unwrap();
    else if (current instanceof z.ZodDefault) current = current.removeDefault();
    else if (current instanceof z.ZodEffects) current = current.innerType();
    else return null;
  }
}

/**
 * A REST body (snake_case) as the GraphQL input (camelCase) of its shape: fields the shape does
 * not name are dropped, null kept as null, nested objects of the shape mapped the same way, other
 * values (lists, caller-owned JSON such as `metadata`) kept exactly as sent.
 * @param toCamel the tree's name converter (src/names.ts)
 */
export function toGraphqlInput(shape: z.ZodTypeAny, body: Record<string, unknown>, toCamel: (name: string) => string): Record<string, unknown> {
  const object = objectOf(shape);
  if (!object) return body;
  const input: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(object.shape as Record<string, z.ZodTypeAny>)) {
    if (!(name in body)) continue;
    const value = body[name];
    // An object without named fields (`metadata`) is the caller's own JSON, kept exactly as sent.
    const nested = objectOf(field);
    input[toCamel(name)] =
      nested && Object.keys(nested.shape).length > 0 && value && typeof value === "object" && !Array.isArray(value)
        ? toGraphqlInput(nested, value as Record<string, unknown>, toCamel)
        : value;
  }
  return input;
}
