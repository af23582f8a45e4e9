/**
 * Every element of the client-facing schema says what it is (issue 21 §1): types, fields,
 * arguments, enum values and input fields of the composed supergraph's API schema (both
 * subgraphs, federation machinery and GraphQL's built-ins left out) carry a non-empty
 * description. Units, ranges and errors belong in it (docs/api/*.md §10).
 */
import {
  buildSchema,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedScalarType,
  type GraphQLSchema,
} from "graphql";
import { describe, expect, it } from "vitest";
import { composeSchemas } from "../../router/compose.ts";

/** Federation's own names, which no client queries (kept out in case a transform leaves them). */
const FEDERATION = /^(join__|link__|_Service$|_Entity$|_Any$|_service$|_entities$)/;

/**
 * The coordinates (`Type`, `Type.field`, `Type.field(arg:)`, `Enum.VALUE`, `Input.field`) of
 * every element of `schema` without a non-empty description.
 */
function undescribed(schema: GraphQLSchema): string[] {
  const missing: string[] = [];
  const check = (coordinate: string, description: string | null | undefined) => {
    if (!description?.trim()) missing.push(coordinate);
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || isSpecifiedScalarType(type) || FEDERATION.test(type.name)) continue;
    check(type.name, type.description);
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        if (FEDERATION.test(field.name)) continue;
        check(`${type.name}.${field.name}`, field.description);
        for (const arg of field.args) check(`${type.name}.${field.name}(${arg.name}:)`, arg.description);
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) check(`${type.name}.${field.name}`, field.description);
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) check(`${type.name}.${value.name}`, value.description);
    }
  }
  for (const directive of schema.getDirectives()) {
    if (["skip", "include", "deprecated", "specifiedBy", "oneOf", "defer", "stream"].includes(directive.name) || FEDERATION.test(directive.name)) continue;
    check(`@${directive.name}`, directive.description);
    for (const arg of directive.args) check(`@${directive.name}(${arg.name}:)`, arg.description);
  }
  return missing;
}

describe("the composed API schema", () => {
  const schema = buildSchema(composeSchemas().api);

  it("describes every type, field, argument, enum value and input field of both subgraphs", () => {
    expect(undescribed(schema)).toEqual([]);
  });

  it("leaves no federation machinery in what it checks", () => {
    const names = Object.keys(schema.getTypeMap());
    expect(names.filter((name) => FEDERATION.test(name))).toEqual([]);
    // Both subgraphs' types are there: the walk covers the whole graph.
    expect(names).toEqual(expect.arrayContaining(["Task", "Channel", "Order", "AdminOrder", "DateTime"]));
  });
});
