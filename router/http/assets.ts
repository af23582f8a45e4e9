/**
 * The static files of the developer tools — GraphiQL (router/devtools/graphiql.ts), the API
 * reference at `/docs` and the landing page at `/` (router/devtools/pages.ts) — served beside the
 * pages' own under `/assets/<version>/<file>` (router/pages.ts), with the same rules: a matching
 * version is cached for a year (`immutable`), an old one gets today's file with `no-cache`;
 * ETags; br/gzip by Accept-Encoding. Nothing is loaded from another origin.
 *
 * - GraphiQL's bundle, stylesheet and Monaco editor workers come from @graphql-yoga/render-graphiql
 *   (the GraphQL Yoga package that inlines them into one page; here each is a file of its own so
 *   the page needs no inline script). The API reference is swagger-ui-dist's bundle.
 * - These files are large (GraphiQL's script alone is 5 MB), so nothing is read at start-up: each
 *   is read and compressed on its first request, in the thread pool, never blocking the event loop.
 * - The version is a hash of the two packages' versions and of our own small files, so it is
 *   known at start-up without reading the large ones, and changes with any of them.
 */
import fs from "node:fs";
import path from "node:path";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import zlib from "node:zlib";
import type { IncomingMessage, ServerResponse } from "node:http";
import { pickEncoding, send, type Encoding, type Representation } from "../pages.ts";

const require = createRequire(import.meta.url);
const OURS = new URL("../pages/", import.meta.url);
const SWAGGER_UI = path.dirname(require.resolve("swagger-ui-dist/package.json"));
const RENDER_GRAPHIQL_VERSION: string = require("@graphql-yoga/render-graphiql/package.json").version;
const SWAGGER_UI_VERSION: string = require("swagger-ui-dist/package.json").version;

const TYPES: Record<string, string> = {
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
};

type GraphiqlBundle = typeof import("@graphql-yoga/render-graphiql/graphiql");
let graphiqlBundle: Promise<GraphiqlBundle> | undefined;
/** The render-graphiql module (9 MB of strings), imported once, on GraphiQL's first asset. */
const fromGraphiql = (part: "js" | "css" | "editorWorkerService" | "jsonWorker" | "graphqlWorker") => async () =>
  Buffer.from((await (graphiqlBundle ??= import("@graphql-yoga/render-graphiql/graphiql")))[part]);
const fromSwaggerUi = (name: string) => () => fs.promises.readFile(path.join(SWAGGER_UI, name));

/** Our own small files, read at start-up (their contents make the version). */
const OWN_FILES = ["graphiql-start.js", "docs.js", "devtools.css"] as const;
const own = new Map(OWN_FILES.map((name) => [name, fs.readFileSync(new URL(name, OURS))] as const));

/** Every file: where it comes from, and whether it is GraphiQL's (not served in production). */
const FILES: Record<string, { load: () => Buffer | Promise<Buffer>; graphiql?: true }> = {
  "graphiql.js": { load: fromGraphiql("js"), graphiql: true },
  "graphiql.css": { load: fromGraphiql("css"), graphiql: true },
  "graphiql-editor.worker.js": { load: fromGraphiql("editorWorkerService"), graphiql: true },
  "graphiql-json.worker.js": { load: fromGraphiql("jsonWorker"), graphiql: true },
  "graphiql-graphql.worker.js": { load: fromGraphiql("graphqlWorker"), graphiql: true },
  "graphiql-start.js": { load: () => own.get("graphiql-start.js")!, graphiql: true },
  "swagger-ui-bundle.js": { load: fromSwaggerUi("swagger-ui-bundle.js") },
  "swagger-ui.css": { load: fromSwaggerUi("swagger-ui.css") },
  "docs.js": { load: () => own.get("docs.js")! },
  "devtools.css": { load: () => own.get("devtools.css")! },
};

const version = createHash("sha256")
  .update(JSON.stringify([RENDER_GRAPHIQL_VERSION, SWAGGER_UI_VERSION, ...OWN_FILES.map((name) => [name, own.get(name)!.toString("base64")])]))
  .digest("hex")
  .slice(0, 12);

/** Base path of the current developer-tool assets, `/assets/<version>`. */
export const DEVTOOLS_ASSET_BASE = `/assets/${version}`;

/** Above this size brotli's best quality costs seconds; quality 6 takes a tenth of a second per MB, a few % larger. */
const LARGE = 256 * 1024;
const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/** One loaded file, its encodings made on demand (once each) in the thread pool. */
interface LoadedFile {
  ready(encoding: Encoding): Promise<Representation>;
}

function loaded(raw: Buffer, type: string): LoadedFile {
  const hash = createHash("sha256").update(raw).digest("base64url").slice(0, 22);
  const made = new Map<Encoding, Promise<Buffer>>([["identity", Promise.resolve(raw)]]);
  const done = new Map<Encoding, Buffer>([["identity", raw]]);
  const representation: Representation = {
    type,
    body: (encoding) => done.get(encoding)!,
    etags: { identity: `"${hash}"`, gzip: `"${hash}-gz"`, br: `"${hash}-br"` },
  };
  const compress = (encoding: Encoding) =>
    encoding === "br"
      ? brotli(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: raw.length > LARGE ? 6 : 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } })
      : gzip(raw, { level: 9 });
  return {
    async ready(encoding) {
      let body = made.get(encoding);
      if (!body) made.set(encoding, (body = compress(encoding)));
      done.set(encoding, await body);
      return representation;
    },
  };
}

const files = new Map<string, Promise<LoadedFile>>();

/**
 * Answers `/assets/:version/:file` for a developer-tool file.
 * @param options `production`: GraphiQL is off there, so its files are not served
 * @returns false when there is no such file (the caller answers 404)
 */
export async function serveDevtoolsAsset(
  call: { req: IncomingMessage; res: ServerResponse; params: Record<string, string | undefined> },
  options: { production: boolean },
): Promise<boolean> {
  const name = call.params.file ?? "";
  const spec = Object.hasOwn(FILES, name) ? FILES[name]! : undefined;
  if (!spec || (spec.graphiql && options.production)) return false;
  let file = files.get(name);
  if (!file) {
    file = Promise.resolve(spec.load()).then((raw) => loaded(raw, TYPES[path.extname(name)]!));
    files.set(name, file);
    file.catch(() => files.delete(name));
  }
  const representation = await (await file).ready(pickEncoding(call.req.headers["accept-encoding"] as string | undefined));
  const current = call.params.version === version;
  send(call.req, call.res, representation, { "cache-control": current ? "public, max-age=31536000, immutable" : "no-cache" });
  return true;
}
