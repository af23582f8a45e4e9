/**
 * Supergraph composition (`npm run compose`): composes schema/*.graphql with
 * @theguild/federation-composition into schema/supergraph.graphql.
 */
import fs from "node:fs";
import { parse } from "graphql";
import { composeServices } from "@theguild/federation-composition";
import { SUBGRAPHS } from "./subgraphs.ts";

const schemaDir = new URL("../schema/", import.meta.url);

/** Path of the checked-in supergraph. */
export const SUPERGRAPH_FILE = new URL("supergraph.graphql", schemaDir);

/**
 * Composes the supergraph SDL from the subgraph SDL files.
 * @returns the supergraph SDL
 * @throws Error listing every composition error
 */
export function composeSupergraph(): string {
  const result = composeServices(
    SUBGRAPHS.map((s) => ({
      name: s.name,
      url: s.defaultUrl,
      typeDefs: parse(fs.readFileSync(new URL(s.schemaFile, schemaDir), "utf8")),
    })),
  );
  if (result.errors?.length) throw new Error(`Composition failed:\n${result.errors.map((e) => `- ${e.message}`).join("\n")}`);
  return `${result.supergraphSdl!.trim()}\n`;
}

/** Writes schema/supergraph.graphql. @returns the path written */
export function writeSupergraph(): string {
  fs.writeFileSync(SUPERGRAPH_FILE, composeSupergraph());
  return SUPERGRAPH_FILE.pathname;
}
