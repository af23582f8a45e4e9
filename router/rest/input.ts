/**
 * Turns a REST body (snake_case) into a GraphQL input (camelCase) of a given input type,
 * checking JSON types strictly — GraphQL would otherwise coerce `"x"` into `["x"]` and answer a
 * type error in its own words. Type errors become the generation spec's messages (part 7):
 * a whole field of the wrong type "{field} has an unsupported value" (`prompt` and `model_id`
 * keep their own messages), a bad item of a URL list "{field} must be a public HTTPS URL".
 */
import { getNamedType, getNullableType, isInputObjectType, isListType, type GraphQLInputObjectType, type GraphQLInputType } from "graphql";
import { AppError, invalidFieldError, validationMessages } from "../../src/errors.ts";

/** camelCase → snake_case (`referenceImages` → `reference_images`). */
export function toSnake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

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
    default:
      return true;
  }
}

/**
 * Maps a REST body onto an input type. Unknown fields are dropped, null fields kept as null.
 * @returns the GraphQL input value
 * @throws AppError `invalid_request` naming the first field (in the input type's order) whose JSON type is wrong
 */
export function restBodyToInput(body: Record<string, unknown>, type: GraphQLInputObjectType): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of Object.values(type.getFields())) {
    const restName = toSnake(field.name);
    if (!(restName in body)) continue;
    const value = body[restName];
    if (value === null) {
      input[field.name] = null;
      continue;
    }
    const fieldType = getNullableType(field.type) as GraphQLInputType;
    const scalar = getNamedType(fieldType).name;
    if (isListType(fieldType)) {
      if (!Array.isArray(value)) throw invalidFieldError(restName);
      if (!value.every((item) => matchesScalar(item, scalar))) {
        throw new AppError("invalid_request", validationMessages.publicUrl(restName), { field: restName });
      }
    } else if (isInputObjectType(fieldType) || !matchesScalar(value, scalar)) {
      throw invalidFieldError(restName);
    }
    input[field.name] = value;
  }
  return input;
}
