/**
 * Supergraph composition (`npm run compose`): composes each subgraphs/<name>/schema.graphql with
 * @theguild/federation-composition into schema/supergraph.graphql (what the gateway runs) and
 * schema/api.graphql (what clients see: the API schema, without federation machinery).
 */
import fs from "node:fs";
import { buildASTSchema, lexicographicSortSchema, parse, printSchema } from "graphql";
import { composeServices } from "@theguild/federation-composition";
import { SUBGRAPHS } from "./subgraphs.ts";

/** The folder of the composed schemas (the subgraph SDL files are beside their subgraphs). */
export const SCHEMA_DIR = new URL("../schema/", import.meta.url);

/** The repository root: each subgraph's `schemaFile` (router/subgraphs.ts) is relative to it. */
export const REPOSITORY_ROOT = new URL("../", import.meta.url);

/** Path of the checked-in supergraph. */
export const SUPERGRAPH_FILE = new URL("supergraph.graphql", SCHEMA_DIR);

/** Path of the checked-in API schema (served at `GET /graphql/schema.graphql`). */
export const API_SCHEMA_FILE = new URL("api.graphql", SCHEMA_DIR);

/** What composition produces, as the files hold it. */
export interface ComposedSchemas {
  /** The supergraph SDL (`join__*` and `link__*` included): what the gateway plans with. */
  supergraph: string;
  /**
   * The API schema SDL: the composition's public schema (no `join__*`, `link__*`, `_Service`,
   * `_Entity`, `_Any`, `_service`, `_entities`; descriptions, `@deprecated`, `@specifiedBy` and
   * defaults kept), sorted by name (graphql-js `lexicographicSortSchema`) and printed by
   * `printSchema`, so a diff of the file shows what changed and nothing else.
   */
  api: string;
}

/**
 * Composes the subgraph SDL files.
 * @param root the repository holding each subgraph's `schemaFile` (router/subgraphs.ts); default this one
 * @param sdl subgraph name → SDL text to use instead of its file (tests change a schema in memory)
 * @returns the supergraph and the API schema, each ending with one newline
 * @throws Error listing every composition error
 */
export function composeSchemas(root: URL = REPOSITORY_ROOT, sdl: Record<string, string> = {}): ComposedSchemas {
  const result = composeServices(
    SUBGRAPHS.map((s) => ({
      name: s.name,
      url: s.defaultUrl,
      typeDefs: parse(sdl[s.name] ?? fs.readFileSync(new URL(s.schemaFile, root), "utf8")),
    })),
  );
  if (result.errors) throw new Error(`Composition failed:\n${result.errors.map((e) => `- ${e.message}`).join("\n")}`);
  return {
    supergraph: `${result.supergraphSdl.trim()}\n`,
    api: `${printSchema(lexicographicSortSchema(buildASTSchema(result.publicDocumentNode)))}\n`,
  };
}

/**
 * Composes the supergraph SDL from the subgraph SDL files.
 * @returns the supergraph SDL
 * @throws Error listing every composition error
 */
export function composeSupergraph(): string {
  return composeSchemas().supergraph;
}
