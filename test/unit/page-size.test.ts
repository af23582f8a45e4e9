/**
 * One page size (issue 22 §6, ADR 0026): src/shared/page-size.js holds the default and the
 * maximum; the client schema, which must keep its literals (`first: Int = 20`, "default 20" and
 * "1-100" in descriptions) is held to it here; the server and the pages import it.
 */
import fs from "node:fs";
import { buildSchema, isObjectType, isInterfaceType, Kind, type GraphQLArgument } from "graphql";
import { describe, expect, it } from "vitest";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../../src/shared/page-size.js";

const REPOSITORY = new URL("../../", import.meta.url);

/** Every `first`/`last` argument of the composed client schema, by coordinate. */
function pageArguments(): [string, GraphQLArgument][] {
  const schema = buildSchema(fs.readFileSync(new URL("schema/api.graphql", REPOSITORY), "utf8"));
  const found: [string, GraphQLArgument][] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) && !isInterfaceType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      for (const arg of field.args) {
        if (arg.name === "first" || arg.name === "last") found.push([`${type.name}.${field.name}(${arg.name}:)`, arg]);
      }
    }
  }
  return found;
}

describe("the page size", () => {
  it("is the shared default wherever the schema writes a default page size", () => {
    const args = pageArguments();
    const literals = args.filter(([, arg]) => arg.astNode?.defaultValue);
    const described = args.filter(([, arg]) => /default \d+/.test(arg.description ?? ""));
    expect(literals.length).toBeGreaterThan(0);
    expect(described.length).toBeGreaterThan(0);
    for (const [coordinate, arg] of literals) {
      const node = arg.astNode!.defaultValue!;
      expect({ coordinate, default: node.kind === Kind.INT ? Number(node.value) : node.kind }).toEqual({ coordinate, default: DEFAULT_PAGE_SIZE });
    }
    for (const [coordinate, arg] of described) {
      expect({ coordinate, default: Number(/default (\d+)/.exec(arg.description!)![1]) }).toEqual({ coordinate, default: DEFAULT_PAGE_SIZE });
    }
  });

  it("is the shared maximum wherever the schema writes a page-size range", () => {
    const ranged = pageArguments().filter(([, arg]) => /\b1-\d+\b/.test(arg.description ?? ""));
    expect(ranged.length).toBeGreaterThan(0);
    for (const [coordinate, arg] of ranged) {
      expect({ coordinate, max: Number(/\b1-(\d+)\b/.exec(arg.description!)![1]) }).toEqual({ coordinate, max: MAX_PAGE_SIZE });
    }
  });
});
