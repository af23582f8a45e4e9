/**
 * The two web pages of docs/api/generation.md §4 (issue 5): `GET /client` (balance lookup) and
 * `GET /test` (test bench), plain HTML, CSS and ES modules from router/pages/, no build step.
 *
 * - Assets are read once at start-up and served by the router's asset server
 *   (router/http/assets.ts: versioned URLs, ETags, br/gzip, caching) from
 *   `/assets/<version>/<file>`, where the version is a hash of all of them: the pages' relative
 *   module imports stay inside one version.
 * - The pages themselves have the headers and strict CSP of router/http/assets.ts `pageHeaders`;
 *   `<html lang>` comes from Accept-Language with the service's one negotiation rule.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import type { IncomingMessage, ServerResponse } from "node:http";
import { negotiateLocale } from "../subgraphs/shared/locale.ts";
import { assetSet, assetVersion, contentTypeOf, pageHeaders, represent, send, type AssetSet } from "./http/assets.ts";

const DIR = new URL("./pages/", import.meta.url);

/** Files served under `/assets/<version>/`. */
const ASSET_FILES = [
  "app.css",
  "common.js",
  "live.js",
  "i18n.js",
  "i18n-en.js",
  "i18n-zh.js",
  "client.js",
  "test.js",
  "test-tasks.js",
  "test-price.js",
  "admin.js",
  "admin-forms.js",
  "admin-keys.js",
  "admin-wallets.js",
  "admin-channels.js",
  "admin-audit.js",
  "admin-operators.js",
  "icon.svg",
  "usage-chart.js",
] as const;

/**
 * Dependency-free modules of src/shared/ that the server imports and the pages load by the same
 * name (ADR 0026): money's text forms and the page sizes, written once.
 */
const SHARED_FILES = ["money.js", "page-size.js"] as const;
const SHARED_DIR = new URL("../src/shared/", import.meta.url);

/**
 * Files of npm packages served under `/assets/<version>/` byte for byte (no CDN, no build step),
 * by the name the pages import them with: graphql-ws's browser ES module (the pages' live
 * connection) and uPlot's ES module and stylesheet (the /client chart). Files an ES module
 * imports by a relative path (graphql-ws's shared chunk) are served beside it under their own name.
 */
const LIBRARY_FILES: Record<string, string> = {
  "graphql-ws.js": "graphql-ws/dist/client.js", // the package's "browser" export of graphql-ws/client
  "uPlot.esm.js": "uplot/dist/uPlot.esm.js",
  "uPlot.min.css": "uplot/dist/uPlot.min.css",
};

/** The file of an installed package, `<package>/<path in it>` (found through its package.json). */
function packageFile(specifier: string): URL {
  const [, name, file] = /^((?:@[^/]+\/)?[^/]+)\/(.+)$/.exec(specifier)!;
  return new URL(file!, pathToFileURL(createRequire(import.meta.url).resolve(`${name}/package.json`)));
}

/** Reads {@link LIBRARY_FILES} and the files their ES modules import relatively, by served name. */
function readLibraries(): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const add = (name: string, url: URL) => {
    if (files.has(name)) return;
    const body = fs.readFileSync(url);
    files.set(name, body);
    if (!name.endsWith(".js")) return;
    for (const [, specifier] of body.toString("utf8").matchAll(/(?:\bfrom|\bimport)\s*['"](\.\/[\w.-]+\.js)['"]/g)) {
      add(specifier!.slice(2), new URL(specifier!, url));
    }
  };
  for (const [name, specifier] of Object.entries(LIBRARY_FILES)) add(name, packageFile(specifier));
  return files;
}

/** Handlers of the pages' routes (each takes the router's call: req, res). */
export interface PageRoutes {
  /** The pages' assets (router/http/assets.ts `serveAsset`); `assets.base` is `/assets/<version>`. */
  assets: AssetSet;
  client(call: { req: IncomingMessage; res: ServerResponse }): Promise<void>;
  test(call: { req: IncomingMessage; res: ServerResponse }): Promise<void>;
  /** The operator console (README "Console"). */
  admin(call: { req: IncomingMessage; res: ServerResponse }): Promise<void>;
}

/**
 * Reads router/pages/ and builds the handlers.
 * @param dir folder of the page files (tests may pass another)
 */
export function createPages(dir: URL = DIR): PageRoutes {
  const read = (name: string) => fs.readFileSync(new URL(name, dir));
  const raw = new Map<string, Buffer>([
    ...readLibraries(),
    ...SHARED_FILES.map((name) => [name, fs.readFileSync(new URL(name, SHARED_DIR))] as const),
    ...ASSET_FILES.map((name) => [name, read(name)] as const),
  ]);
  const assets = assetSet(assetVersion([...raw].flat()), Object.fromEntries([...raw].map(([name, body]) => [name, () => body])));

  const page = (name: "client" | "test" | "admin") => {
    const template = read(`${name}.html`).toString("utf8").replaceAll("%ASSETS%", assets.base);
    const byLocale = {
      en: represent(Buffer.from(template), contentTypeOf(`${name}.html`)),
      zh: represent(Buffer.from(template.replace('<html lang="en">', '<html lang="zh-CN">')), contentTypeOf(`${name}.html`)),
    };
    return (call: { req: IncomingMessage; res: ServerResponse }) => {
      const locale = negotiateLocale(call.req.headers["accept-language"] as string | undefined);
      return send(call.req, call.res, byLocale[locale], pageHeaders(call.req));
    };
  };

  return { assets, client: page("client"), test: page("test"), admin: page("admin") };
}
