/**
 * The files of the published contract (README "Schema and contract"; docs/architecture.md §7.8):
 *
 * - produced by code and committed, rewritten by `npm run compose`: schema/supergraph.graphql and
 *   schema/api.graphql (router/compose.ts), docs/api/openapi/generation.json and cloud.json (the
 *   documents the router serves, router/openapi/), schema/trusted-documents.json (the router's own
 *   operations, ./trusted-documents.ts); a test and `npm run check:contract` fail when a
 *   committed one differs from what the code produces;
 * - the release baseline under schema/released/: the same API schema and OpenAPI documents as the
 *   last release shipped them, and its version. Only a release moves it
 *   (`npm run contract:release -- VERSION`, router/contract/release.ts).
 */
import fs from "node:fs";
import { composeSchemas } from "../compose.ts";
import { cloudOpenApi, generationOpenApi } from "../openapi/index.ts";
import type { OpenApiDocument } from "../openapi/types.ts";
import { trustedDocumentsText } from "./trusted-documents.ts";
import { TRUSTED_DOCUMENTS } from "./operations.ts";

/** The repository's root folder. */
export const REPOSITORY = new URL("../../", import.meta.url);

/** The REST surfaces with an OpenAPI document: the generation API (`/api/v1`) and the cloud API (`/openapi/v1`). */
export type RestSurface = "generation" | "cloud";

/** The OpenAPI document of each REST surface, as the router serves it. */
export const OPENAPI_DOCUMENTS: Readonly<Record<RestSurface, OpenApiDocument>> = { generation: generationOpenApi, cloud: cloudOpenApi };

/** Paths under the repository of the files `npm run compose` writes. */
export const PRODUCED = {
  supergraph: "schema/supergraph.graphql",
  api: "schema/api.graphql",
  openapi: { generation: "docs/api/openapi/generation.json", cloud: "docs/api/openapi/cloud.json" },
  /** The router's own operations, by SHA-256 (./trusted-documents.ts). */
  trustedDocuments: TRUSTED_DOCUMENTS,
} as const;

/** Paths under the repository of the release baseline. */
export const RELEASED = {
  api: "schema/released/api.graphql",
  openapi: { generation: "schema/released/generation.openapi.json", cloud: "schema/released/cloud.openapi.json" },
  /** One line: the version the baseline was released as (CHANGELOG.md's heading of that release). */
  version: "schema/released/VERSION",
} as const;

/** An OpenAPI document as a committed file holds it: two-space JSON and a final newline. */
export const openApiText = (document: object): string => `${JSON.stringify(document, null, 2)}\n`;

/**
 * What `npm run compose` writes: each file's path under `root` and its text.
 * @param root the repository (tests pass a copy whose subgraph SDL they changed)
 * @throws Error when composition fails
 */
export function producedFiles(root: URL = REPOSITORY): { path: string; text: string }[] {
  const composed = composeSchemas(root);
  return [
    { path: PRODUCED.supergraph, text: composed.supergraph },
    { path: PRODUCED.api, text: composed.api },
    { path: PRODUCED.openapi.generation, text: openApiText(OPENAPI_DOCUMENTS.generation) },
    { path: PRODUCED.openapi.cloud, text: openApiText(OPENAPI_DOCUMENTS.cloud) },
    // The documents are read from this checkout's router/ (the code), checked against `root`'s API schema.
    { path: PRODUCED.trustedDocuments, text: trustedDocumentsText(composed.api) },
  ];
}

/** Writes the produced files under `root`. @returns the paths written, relative to root */
export function writeProducedFiles(root: URL = REPOSITORY): string[] {
  return producedFiles(root).map(({ path, text }) => {
    const file = new URL(path, root);
    fs.mkdirSync(new URL(".", file), { recursive: true });
    fs.writeFileSync(file, text);
    return path;
  });
}

/** The produced files whose committed copy under `root` is missing or differs from what the code produces. */
export function staleFiles(root: URL = REPOSITORY): string[] {
  return producedFiles(root)
    .filter(({ path, text }) => readText(new URL(path, root)) !== text)
    .map(({ path }) => path);
}

/** A file's text, or undefined when there is none. */
export function readText(file: URL): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}
