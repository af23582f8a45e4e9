/**
 * How the router serves its own files and HTML pages (docs/api/generation.md §4 "Pages";
 * docs/architecture.md §2.2 `/assets/<version>/<file>`): one asset server, one
 * Content-Security-Policy builder, one HTML escape, for the pages (router/pages.ts), the landing
 * page and API reference (router/devtools/pages.ts) and GraphiQL (router/devtools/graphiql.ts).
 *
 * - Files live under `/assets/<version>/<file>`, where the version is a hash of what makes them
 *   (their contents, or the versions of the packages they come from): a matching version is
 *   cached for a year (`immutable`) and a deploy changes every URL; an old version still gets
 *   today's file, with `no-cache`.
 * - Every answer has an ETag (304 on a match) and the best encoding the client accepts (br, gzip).
 * - Nothing is compressed at start-up: each file and encoding is made on its first request, in
 *   the thread pool (brotli at its best quality costs tens of milliseconds per small file and
 *   seconds on GraphiQL's 5 MB script), once.
 */
import { createHash } from "node:crypto";
import path from "node:path";
import { promisify } from "node:util";
import zlib from "node:zlib";
import type { IncomingMessage, ServerResponse } from "node:http";

export type Encoding = "identity" | "gzip" | "br";

/** Content types by file extension. */
const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml; charset=utf-8",
};

/** The content type of a file served by name (html, css, js, svg). */
export function contentTypeOf(name: string): string {
  const type = TYPES[path.extname(name)];
  if (!type) throw new Error(`no content type for ${name}`);
  return type;
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

/** One file: its type, ETags and bodies per encoding (compressed on first use, once each). */
export interface Representation {
  type: string;
  etags: Record<Encoding, string>;
  body(encoding: Encoding): Promise<Buffer>;
}

/** Above this size brotli's best quality costs seconds; quality 6 takes a tenth of a second per MB, a few % larger. */
const LARGE = 256 * 1024;
const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/** A file as served: ETags from its content, its compressed bodies made on demand in the thread pool. */
export function represent(raw: Buffer, type: string): Representation {
  const hash = createHash("sha256").update(raw).digest("base64url").slice(0, 22);
  const made = new Map<Encoding, Promise<Buffer>>([["identity", Promise.resolve(raw)]]);
  const compress = (encoding: Encoding) =>
    encoding === "br"
      ? brotli(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: raw.length > LARGE ? 6 : 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } })
      : gzip(raw, { level: 9 });
  return {
    type,
    etags: { identity: `"${hash}"`, gzip: `"${hash}-gz"`, br: `"${hash}-br"` },
    body(encoding) {
      let body = made.get(encoding);
      if (!body) {
        body = compress(encoding);
        made.set(encoding, body);
      }
      return body;
    },
  };
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
export async function send(req: IncomingMessage, res: ServerResponse, file: Representation, headers: Record<string, string>): Promise<void> {
  const encoding = pickEncoding(req.headers["accept-encoding"] as string | undefined);
  const etag = file.etags[encoding];
  const all: Record<string, string | number> = { ...COMMON_HEADERS, ...headers, etag };
  all.vary = headers.vary ? `Accept-Encoding, ${headers.vary}` : "Accept-Encoding";
  if (etagMatches(req.headers["if-none-match"] as string | undefined, etag)) {
    res.writeHead(304, all);
    res.end();
    return;
  }
  const body = await file.body(encoding);
  all["content-type"] = file.type;
  all["content-length"] = body.length;
  if (encoding !== "identity") all["content-encoding"] = encoding;
  res.writeHead(200, all);
  res.end(req.method === "HEAD" ? undefined : body);
}

/**
 * The version of a set of files: a hash of what makes them.
 * @param parts names and contents (or package versions), in a fixed order
 * @returns 12 hex digits
 */
export function assetVersion(parts: readonly (string | Buffer)[]): string {
  return createHash("sha256")
    .update(parts.map((part) => (typeof part === "string" ? part : part.toString("base64"))).join("\0"))
    .digest("hex")
    .slice(0, 12);
}

/** Files served under one `/assets/<version>/`. */
export interface AssetSet {
  version: string;
  /** `/assets/<version>`. */
  base: string;
  /** The file of that name, loaded and represented on its first request; undefined when there is none. */
  file(name: string): Promise<Representation> | undefined;
}

/**
 * A set of files, each loaded on its first request (a failed load is tried again next time).
 * @param loaders file name → its bytes (the name gives the content type)
 */
export function assetSet(version: string, loaders: Record<string, () => Buffer | Promise<Buffer>>): AssetSet {
  const files = new Map<string, Promise<Representation>>();
  return {
    version,
    base: `/assets/${version}`,
    file(name) {
      if (!Object.hasOwn(loaders, name)) return undefined;
      let file = files.get(name);
      if (!file) {
        file = Promise.resolve(loaders[name]!()).then((raw) => represent(raw, contentTypeOf(name)));
        files.set(name, file);
        file.catch(() => files.delete(name));
      }
      return file;
    },
  };
}

/**
 * Answers `/assets/:version/:file` from the first set holding the file: a year's `immutable`
 * caching when the version is that set's, `no-cache` for an old one.
 * @returns false when no set has the file (the caller answers 404)
 */
export async function serveAsset(
  call: { req: IncomingMessage; res: ServerResponse; params: Record<string, string | undefined> },
  sets: readonly AssetSet[],
): Promise<boolean> {
  const name = call.params.file ?? "";
  for (const set of sets) {
    const file = set.file(name);
    if (!file) continue;
    const current = call.params.version === set.version;
    await send(call.req, call.res, await file, { "cache-control": current ? "public, max-age=31536000, immutable" : "no-cache" });
    return true;
  }
  return false;
}

/** Host header values safe to put in a CSP source expression. */
const SAFE_HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The Content-Security-Policy of the router's pages: scripts, styles and connections from this
 * origin only (connect-src also names ws:/wss: of the request's host, for graphql-ws); images and
 * media also from https:, so results of a real provider can be shown; no inline code, no frames.
 * @param host the request's Host header (dropped when it is not a plain host)
 * @param changes directives a page needs otherwise: a value replaces the directive's sources,
 *   null removes it (the pages that differ say why)
 */
export function contentSecurityPolicy(host: string | undefined | null, changes: Record<string, string | null> = {}): string {
  const sockets = host && SAFE_HOST.test(host) ? ` ws://${host} wss://${host}` : "";
  const directives = new Map<string, string | null>([
    ["default-src", "'none'"],
    ["script-src", "'self'"],
    ["style-src", "'self'"],
    ["img-src", "'self' https:"],
    ["media-src", "'self' https:"],
    ["connect-src", `'self'${sockets}`],
    ["base-uri", "'none'"],
    ["form-action", "'none'"],
    ["frame-ancestors", "'none'"],
  ]);
  for (const [name, sources] of Object.entries(changes)) directives.set(name, sources);
  return [...directives].flatMap(([name, sources]) => (sources === null ? [] : [`${name} ${sources}`])).join("; ");
}

/**
 * The headers of an HTML page: `no-cache` (with the ETag of {@link send}, a reload costs a 304),
 * `Vary: Accept-Language` (the page's language follows it), the CSP, no framing, no opener, no
 * device APIs.
 * @param cspChanges see {@link contentSecurityPolicy}
 */
export function pageHeaders(req: IncomingMessage, cspChanges?: Record<string, string | null>): Record<string, string> {
  return {
    "cache-control": "no-cache",
    vary: "Accept-Language",
    "content-security-policy": contentSecurityPolicy(req.headers.host, cspChanges),
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
  };
}

/** Text made safe for HTML content and attribute values. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
