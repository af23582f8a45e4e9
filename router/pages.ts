/**
 * The two web pages of docs/api/generation.md §4 (issue 5): `GET /client` (balance lookup) and
 * `GET /test` (test bench), plain HTML, CSS and ES modules from router/pages/, no build step.
 *
 * - Assets are read once at start-up and served from `/assets/<version>/<file>`, where the
 *   version is a hash of all of them: the pages' relative module imports stay inside one version,
 *   so a matching version is cached for a year (`immutable`) and a deploy changes every URL. An
 *   old version still gets today's file, but with `no-cache`.
 * - The pages themselves are `no-cache` with an ETag (a reload costs a 304), `<html lang>` comes
 *   from Accept-Language (`Vary: Accept-Language`) with the service's one negotiation rule.
 * - Bodies are compressed (br, gzip) once, on first use, and chosen by Accept-Encoding.
 * - A strict Content-Security-Policy: scripts, styles and connections from this origin only
 *   (connect-src also names ws:/wss: of the request's host for graphql-ws); images and media also
 *   from https: so results of a real provider can be shown; no inline code, no frames.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { createHash } from "node:crypto";
import zlib from "node:zlib";
import type { IncomingMessage, ServerResponse } from "node:http";
import { negotiateLocale } from "../subgraphs/shared/locale.ts";

const DIR = new URL("./pages/", import.meta.url);

/** Files served under `/assets/<version>/`. */
const ASSET_FILES = ["app.css", "common.js", "i18n.js", "client.js", "test.js", "icon.svg", "usage-chart.js"] as const;

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

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml; charset=utf-8",
};

/** One file: its raw body and, made on first use, its gzip and brotli bodies, with their ETags. */
export interface Representation {
  type: string;
  body(encoding: Encoding): Buffer;
  etags: Record<Encoding, string>;
}

export type Encoding = "identity" | "gzip" | "br";

/**
 * Compression happens on the first request of each file and encoding, not at start-up: brotli at
 * its best quality costs tens of milliseconds per file, which every router start (and every test
 * stack) would otherwise pay whether or not anyone opens a page.
 */
export function represent(raw: Buffer, type: string): Representation {
  const hash = createHash("sha256").update(raw).digest("base64url").slice(0, 22);
  const made: Partial<Record<Encoding, Buffer>> = { identity: raw };
  const compress: Record<Exclude<Encoding, "identity">, () => Buffer> = {
    gzip: () => zlib.gzipSync(raw, { level: 9 }),
    br: () => zlib.brotliCompressSync(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
  };
  return {
    type,
    body: (encoding) => (made[encoding] ??= compress[encoding as Exclude<Encoding, "identity">]()),
    etags: { identity: `"${hash}"`, gzip: `"${hash}-gz"`, br: `"${hash}-br"` },
  };
}

/** The best encoding the client accepts (q > 0) among br, gzip and identity. */
export function pickEncoding(acceptEncoding: string | undefined): Encoding {
  const accepted = new Map<string, number>();
  for (const part of (acceptEncoding ?? "").split(",")) {
    const [name, ...params] = part.trim().toLowerCase().split(";");
    if (!name) continue;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    accepted.set(name, q === undefined ? 1 : Number(q));
  }
  const ok = (name: string) => (accepted.get(name) ?? accepted.get("*") ?? 0) > 0;
  if (ok("br")) return "br";
  if (ok("gzip")) return "gzip";
  return "identity";
}

/** Host header values safe to put in a CSP source expression. */
const SAFE_HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/** The Content-Security-Policy of the pages. */
export function contentSecurityPolicy(host: string | undefined): string {
  const sockets = host && SAFE_HOST.test(host) ? ` ws://${host} wss://${host}` : "";
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' https:",
    "media-src 'self' https:",
    `connect-src 'self'${sockets}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

const COMMON_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-resource-policy": "same-origin",
};

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === "*") return true;
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

/** Answers one file with the common headers, its ETag (304 on a match) and the best encoding. */
export function send(req: IncomingMessage, res: ServerResponse, file: Representation, headers: Record<string, string>): void {
  const encoding = pickEncoding(req.headers["accept-encoding"] as string | undefined);
  const etag = file.etags[encoding];
  const all: Record<string, string | number> = { ...COMMON_HEADERS, ...headers, etag };
  all.vary = headers.vary ? `Accept-Encoding, ${headers.vary}` : "Accept-Encoding";
  if (etagMatches(req.headers["if-none-match"] as string | undefined, etag)) {
    res.writeHead(304, all);
    res.end();
    return;
  }
  const body = file.body(encoding);
  all["content-type"] = file.type;
  all["content-length"] = body.length;
  if (encoding !== "identity") all["content-encoding"] = encoding;
  res.writeHead(200, all);
  res.end(req.method === "HEAD" ? undefined : body);
}

/** Handlers of the pages' routes (each takes the router's call: req, res, params). */
export interface PageRoutes {
  /** Base path of the current assets, `/assets/<version>`. */
  assetBase: string;
  client(call: { req: IncomingMessage; res: ServerResponse }): void;
  test(call: { req: IncomingMessage; res: ServerResponse }): void;
  /** `/assets/:version/:file`; returns false when there is no such file (the caller answers 404). */
  asset(call: { req: IncomingMessage; res: ServerResponse; params: Record<string, string | undefined> }): boolean;
}

/**
 * Reads router/pages/ and builds the handlers.
 * @param dir folder of the page files (tests may pass another)
 */
export function createPages(dir: URL = DIR): PageRoutes {
  const read = (name: string) => fs.readFileSync(new URL(name, dir));
  const raw = new Map<string, Buffer>([...readLibraries(), ...ASSET_FILES.map((name) => [name, read(name)] as const)]);
  const version = createHash("sha256")
    .update([...raw].map(([name, body]) => `${name}\0${body.toString("base64")}`).join("\0"))
    .digest("hex")
    .slice(0, 12);
  const assetBase = `/assets/${version}`;
  const assets = new Map([...raw].map(([name, body]) => [name, represent(body, TYPES[path.extname(name)]!)] as const));

  const page = (name: "client" | "test") => {
    const template = read(`${name}.html`).toString("utf8").replaceAll("%ASSETS%", assetBase);
    const byLocale = {
      en: represent(Buffer.from(template), TYPES[".html"]!),
      zh: represent(Buffer.from(template.replace('<html lang="en">', '<html lang="zh-CN">')), TYPES[".html"]!),
    };
    return (call: { req: IncomingMessage; res: ServerResponse }) => {
      const locale = negotiateLocale(call.req.headers["accept-language"] as string | undefined);
      send(call.req, call.res, byLocale[locale], {
        "cache-control": "no-cache",
        vary: "Accept-Language",
        "content-security-policy": contentSecurityPolicy(call.req.headers.host),
        "x-frame-options": "DENY",
        "cross-origin-opener-policy": "same-origin",
        "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
      });
    };
  };

  return {
    assetBase,
    client: page("client"),
    test: page("test"),
    asset(call) {
      const file = assets.get(call.params.file ?? "");
      if (!file) return false;
      const current = call.params.version === version;
      send(call.req, call.res, file, { "cache-control": current ? "public, max-age=31536000, immutable" : "no-cache" });
      return true;
    },
  };
}
