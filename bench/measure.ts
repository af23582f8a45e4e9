/**
 * The sizes of an operation as the router's limits count them (router/limits.ts, router/cost.ts):
 * for choosing and documenting the limits, and for the tests that pin them
 * (test/integration/router-limits.test.ts). Not used while serving.
 */
import fs from "node:fs";
import { buildSchema, validate, type GraphQLSchema, type ValidationRule } from "graphql";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDirectivesRule } from "@escape.tech/graphql-armor-max-directives";
import { MaxTokensParserWLexer } from "@escape.tech/graphql-armor-max-tokens";
import { operationCost } from "../router/cost.ts";
import { SUPERGRAPH_FILE } from "../router/compose.ts";

/** Sizes of one operation as the limits count them. */
export interface OperationSize {
  tokens: number;
  depth: number;
  aliases: number;
  directives: number;
  /** router/cost.ts's cost with the given variables (null: they do not coerce). */
  cost: number | null;
}

/**
 * Measures an operation with the limits' own counters (for choosing and documenting the limits):
 * Armor's for tokens, depth, aliases and directives (they need no schema but the document's
 * fragments), router/cost.ts's for the cost, over the checked-in supergraph.
 * @param variables the variables to cost it with (a page size given in a variable counts its value)
 */
export function measureOperation(source: string, variables: Record<string, unknown> = {}): OperationSize {
  const parser = new MaxTokensParserWLexer(source, { n: Number.MAX_SAFE_INTEGER });
  const document = parser.parseDocument();
  const size: OperationSize = { tokens: parser.tokenCount, depth: 0, aliases: 0, directives: 0, cost: 0 };
  const record = (key: "depth" | "aliases" | "directives") => ({
    n: Number.MAX_SAFE_INTEGER,
    onAccept: [(_: unknown, details: { n: number }) => (size[key] = Math.max(size[key], details.n))],
  });
  validate(measuringSchema, document, [
    maxDepthRule(record("depth")),
    maxAliasesRule(record("aliases")),
    maxDirectivesRule(record("directives")),
  ] as ValidationRule[]);
  size.cost = operationCost(supergraphSchema(), document, undefined, variables);
  return size;
}

/** The counting rules look at the document only; graphql's validate wants some schema. */
const measuringSchema: GraphQLSchema = buildSchema("type Query { ok: Boolean }");

let supergraph: GraphQLSchema | undefined;

/** The checked-in supergraph as a schema (built on first use). */
export function supergraphSchema(): GraphQLSchema {
  supergraph ??= buildSchema(fs.readFileSync(SUPERGRAPH_FILE, "utf8"), { assumeValidSDL: true });
  return supergraph;
}
