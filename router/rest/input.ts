/**
 * Turns a REST body (snake_case) into a GraphQL input (camelCase) of a given input type,
 * checking JSON types strictly — GraphQL would otherwise coerce `"x"` into `["x"]` and answer a
 * type error in its own words. Each shim decides the error a type mismatch becomes.
 *
 * The REST edge is the only place the two dialects meet (docs/architecture.md "Conventions"), so
 * this module converts with the tree's one name converter (src/names.ts). The domain takes
 * camelCase inputs and names fields in its errors from its own maps, never by conversion.
 */
import { getNamedType, getNullableType, isInputObjectType, isListType, isNonNullType, type GraphQLInputObjectType, type GraphQLInputType } from "graphql";
import type { AppError } from "../../src/errors.ts";
import { toSnake } from "../../src/names.ts";

/** Builds the error of a field whose JSON type is wrong (`item`: an element of a list). */
export type TypeErrorFactory = (field: string, kind: "field" | "item") => AppError;

function matchesScalar(value: unknown, typeName: string): boolean {
  switch (typeName) {
    case "String":
    case "ID":
      return typeof value === "string";
    case "Int":
      return typeof value === "number" && Number.isInteger(value) && Math.abs(value) <= 2 ** 31 - 1;
    case "Float":
      return typeof value === "number" && Number.isFinite(value);
    case "Boolean":
      return typeof value === "boolean";
    case "JSONObject":
      return !!value && typeof value === "object" && !Array.isArray(value);
    default:
      return true;
  }
}

/**
 * Maps a REST body onto an input type. Unknown fields are dropped, null fields kept as null,
 * nested input objects mapped the same way (their fields named `parent.child` in errors), and
 * caller-owned JSON (`JSONObject` such as `metadata`) kept exactly as sent.
 * @returns the GraphQL input value
 * @throws the factory's error for the first field (in the input type's order) whose JSON type is wrong
 */
export function restBodyToInput(
  body: Record<string, unknown>,
  type: GraphQLInputObjectType,
  typeError: TypeErrorFactory,
  prefix = "",
): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of Object.values(type.getFields())) {
    const restName = toSnake(field.name);
    if (!(restName in body)) continue;
    const value = body[restName];
    const path = `${prefix}${restName}`;
    if (value === null) {
      input[field.name] = null;
      continue;
    }
    const fieldType = getNullableType(field.type) as GraphQLInputType;
    const named = getNamedType(fieldType);
    if (isListType(fieldType)) {
      if (!Array.isArray(value)) throw typeError(path, "field");
      if (!value.every((item) => matchesScalar(item, named.name))) throw typeError(path, "item");
      input[field.name] = value;
    } else if (isInputObjectType(fieldType)) {
      if (!value || typeof value !== "object" || Array.isArray(value)) throw typeError(path, "field");
      input[field.name] = restBodyToInput(value as Record<string, unknown>, fieldType, typeError, `${path}.`);
    } else {
      if (!matchesScalar(value, named.name)) throw typeError(path, "field");
      input[field.name] = value;
    }
  }
  return input;
}

/**
 * The first required field (non-null in `type`, without a default) that `input` omits or sets to
 * null, nested input objects included: GraphQL refuses such an input in its own words before the
 * service sees it, so a shim answers it with the service's own check instead (the spec's status
 * and message: docs/api/generation.md §7, docs/api/cloud.md §7).
 * @param input a GraphQL input made by {@link restBodyToInput} (types already checked)
 * @returns the field as REST names it (`customer.customer_id`), or null when every required field is there
 */
export function missingRequiredField(input: Record<string, unknown>, type: GraphQLInputObjectType, prefix = ""): string | null {
  for (const field of Object.values(type.getFields())) {
    const value = input[field.name];
    const path = `${prefix}${toSnake(field.name)}`;
    if (value === undefined || value === null) {
      if (isNonNullType(field.type) && field.defaultValue === undefined) return path;
      continue;
    }
    const fieldType = getNullableType(field.type) as GraphQLInputType;
    if (isInputObjectType(fieldType)) {
      const missing = missingRequiredField(value as Record<string, unknown>, fieldType, `${path}.`);
      if (missing) return missing;
    }
  }
  return null;
}
