/**
 * The composed schemas and the committed contract files (issue 21 §2): schema/supergraph.graphql
 * (what the gateway runs), schema/api.graphql (what clients see, served at
 * `GET /graphql/schema.graphql`) and docs/api/openapi/*.json are what `npm run compose` produces,
 * and the API schema is a client's schema: both subgraphs, no federation machinery, every
 * description, deprecation, `@specifiedBy` and default kept.
 */
import fs from "node:fs";
import { buildSchema, parse, validate, type GraphQLObjectType, type GraphQLSchema } from "graphql";
import { describe, expect, it } from "vitest";
import { API_SCHEMA_FILE, composeSchemas, SUPERGRAPH_FILE } from "../../router/compose.ts";
import { producedFiles, REPOSITORY } from "../../router/contract/files.ts";

/** Federation's own names, which must not reach a client. */
const FEDERATION = /\b(join__\w+|link__\w+|_Service|_Entity|_Any|_service|_entities)\b/;

/** The README's dashboard query (README "GraphQL: one graph, live"): generation and cloud fields in one operation. */
const DASHBOARD = /```graphql\n(query Dashboard \{[\s\S]*?)```/.exec(fs.readFileSync(new URL("README.md", REPOSITORY), "utf8"))![1]!;

describe("schema/supergraph.graphql", () => {
  it("is what `npm run compose` produces from the subgraph schemas (run it after changing schema/)", () => {
    expect(fs.readFileSync(SUPERGRAPH_FILE, "utf8")).toBe(composeSchemas().supergraph);
  });
});

describe("the committed contract files", () => {
  it.each(producedFiles().map((file) => [file.path, file.text]))(
    "%s is what `npm run compose` produces (run it after changing schema/, router/openapi/ or an operation under router/)",
    (path, text) => {
      expect(fs.readFileSync(new URL(path, REPOSITORY), "utf8")).toBe(text);
    },
  );
});

describe("schema/api.graphql, the API schema", () => {
  const text = fs.readFileSync(API_SCHEMA_FILE, "utf8");
  const schema: GraphQLSchema = buildSchema(text);

  it("has no federation machinery: no join__/link__ types or directives, no _Service, _Entity, _Any, _service, _entities", () => {
    expect(text).not.toMatch(FEDERATION);
    expect(schema.getDirectives().map((d) => d.name)).not.toContain("join__field");
    expect(Object.keys(schema.getQueryType()!.getFields())).not.toContain("_entities");
  });

  it("holds both subgraphs, so an operation across them validates (the README's dashboard)", () => {
    expect(DASHBOARD).toMatch(/tasks\(first: 20\)[\s\S]*orders\(first: 20\)[\s\S]*customerBalance/);
    expect(validate(schema, parse(DASHBOARD))).toEqual([]);
  });

  it("keeps descriptions, @specifiedBy and SDL defaults", () => {
    expect(schema.getType("DateTime")?.description).toMatch(/RFC 3339/);
    expect((schema.getType("DateTime") as { specifiedByURL?: string }).specifiedByURL).toBe("https://www.rfc-editor.org/rfc/rfc3339");
    expect(text).toMatch(/scalar DateTime @specifiedBy\(url: "https:\/\/www\.rfc-editor\.org\/rfc\/rfc3339"\)/);
    expect(text).toMatch(/\n {2}count: Int = 1\n/);
    expect(schema.getQueryType()?.getFields().task?.description).toBeTruthy();
  });

  it("keeps @deprecated and its reason from a subgraph", () => {
    const generation = fs
      .readFileSync(new URL("subgraphs/generation/schema.graphql", REPOSITORY), "utf8")
      .replace(/(\n\s+statusName: String!)/, '$1 @deprecated(reason: "Use `status`.")');
    const api = composeSchemas(undefined, { generation }).api;
    expect(api).toContain('statusName: String! @deprecated(reason: "Use `status`.")');
    expect((buildSchema(api).getType("Task") as GraphQLObjectType).getFields().statusName?.deprecationReason).toBe("Use `status`.");
  });
});
