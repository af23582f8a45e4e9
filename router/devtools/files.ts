/**
 * The static files of the developer tools — GraphiQL (router/devtools/graphiql.ts), the API
 * reference at `/docs` and the landing page at `/` (router/devtools/pages.ts) — served by the
 * router's one asset server (router/http/assets.ts) beside the pages' own. Nothing is loaded from
 * another origin.
 *
 * - GraphiQL's bundle, stylesheet and Monaco editor workers come from @graphql-yoga/render-graphiql
 *   (the GraphQL Yoga package that inlines them into one page; here each is a file of its own so
 *   the page needs no inline script). The API reference is swagger-ui-dist's bundle.
 * - These files are large (GraphiQL's script alone is 5 MB), so nothing is read at start-up: each
 *   is read on its first request.
 * - The version is a hash of the two packages' versions and of our own small files, so it is
 *   known at start-up without reading the large ones, and changes with any of them.
 */
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { assetSet, assetVersion, type AssetSet } from "../http/assets.ts";

const require = createRequire(import.meta.url);
const OURS = new URL("../pages/", import.meta.url);
const SWAGGER_UI = path.dirname(require.resolve("swagger-ui-dist/package.json"));
const RENDER_GRAPHIQL_VERSION: string = require("@graphql-yoga/render-graphiql/package.json").version;
const SWAGGER_UI_VERSION: string = require("swagger-ui-dist/package.json").version;

type GraphiqlBundle = typeof import("@graphql-yoga/render-graphiql/graphiql");
let graphiqlBundle: Promise<GraphiqlBundle> | undefined;
/** The render-graphiql module (9 MB of strings), imported once, on GraphiQL's first asset. */
const fromGraphiql = (part: "js" | "css" | "editorWorkerService" | "jsonWorker" | "graphqlWorker") => async () => {
  graphiqlBundle ??= import("@graphql-yoga/render-graphiql/graphiql");
  return Buffer.from((await graphiqlBundle)[part]);
};
const fromSwaggerUi = (name: string) => () => fs.promises.readFile(path.join(SWAGGER_UI, name));

/** Our own small files, read at start-up (their contents make the version). */
const OWN_FILES = ["graphiql-start.js", "docs.js", "devtools.css"] as const;
const own = new Map(OWN_FILES.map((name) => [name, fs.readFileSync(new URL(name, OURS))] as const));

/** GraphiQL's files: not served in production, where there is no GraphiQL. */
const GRAPHIQL_FILES = {
  "graphiql.js": fromGraphiql("js"),
  "graphiql.css": fromGraphiql("css"),
  "graphiql-editor.worker.js": fromGraphiql("editorWorkerService"),
  "graphiql-json.worker.js": fromGraphiql("jsonWorker"),
  "graphiql-graphql.worker.js": fromGraphiql("graphqlWorker"),
  "graphiql-start.js": () => own.get("graphiql-start.js")!,
};

/** The files of every mode: the API reference's. */
const REFERENCE_FILES = {
  "swagger-ui-bundle.js": fromSwaggerUi("swagger-ui-bundle.js"),
  "swagger-ui.css": fromSwaggerUi("swagger-ui.css"),
  "docs.js": () => own.get("docs.js")!,
  "devtools.css": () => own.get("devtools.css")!,
};

const version = assetVersion([RENDER_GRAPHIQL_VERSION, SWAGGER_UI_VERSION, ...OWN_FILES.flatMap((name) => [name, own.get(name)!])]);

/** Module-wide, so every router of a process shares the loaded (and compressed) large files. */
const all = assetSet(version, { ...GRAPHIQL_FILES, ...REFERENCE_FILES });
const withoutGraphiql: AssetSet = { ...all, file: (name) => (Object.hasOwn(GRAPHIQL_FILES, name) ? undefined : all.file(name)) };

/** Base path of the current developer-tool assets, `/assets/<version>`. */
export const DEVTOOLS_ASSET_BASE = all.base;

/**
 * The developer tools' asset set.
 * @param options `production`: GraphiQL is off there, so its files are not served
 */
export function devtoolsAssets(options: { production: boolean }): AssetSet {
  return options.production ? withoutGraphiql : all;
}
