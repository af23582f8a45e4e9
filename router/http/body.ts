/**
 * Request bodies for the REST shims and `/graphql`: read with a size limit (413 before the body is
 * read whole; router/limits.ts, the table's `body size` row), declared as JSON (415 otherwise) and
 * parsed as JSON.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../../src/errors.ts";
import { sendGraphqlError } from "./graphql-error.ts";

/**
 * Reads a request body as text (UTF-8).
 * @param limit maximum size in bytes
 * @returns the raw text
 * @throws AppError `payload_too_large` (413) as soon as the declared or received size passes the limit
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return (await readBodyBytes(req, limit)).toString("utf8");
}

/**
 * Reads a request body's bytes, for the REST shims and `/graphql` alike: the rest of an oversized
 * body is discarded (not kept), so the client reads the answer.
 * @param limit maximum size in bytes
 * @returns the raw bytes
 * @throws AppError `payload_too_large` (413) as soon as the declared or received size passes the limit
 */
export function readBodyBytes(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) {
    discardRest(req);
    return Promise.reject(new AppError("payload_too_large"));
  }
  // Listeners, not `for await`: leaving that loop early leaves the socket paused, so a client that
  // then hangs up is never noticed and its connection stays open (and holds up shutdown).
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      stop();
      discardRest(req);
      reject(new AppError("payload_too_large"));
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      stop();
      reject(error);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

/** How long a client still sending a refused body is read before its connection is cut (ms). */
export const LINGER_MS = 5_000;

/**
 * Lingering close, as nginx's `lingering_close`: a request answered before its body was read
 * (413, 415) has the rest of its body read and discarded, so a client still sending reads the
 * answer instead of a connection reset (EPIPE) — which closing the socket at once would give it.
 * The connection stays usable when the body ends; a client still sending after {@link LINGER_MS}
 * has its connection destroyed, so a body that never ends holds nothing for long.
 * @param req the request whose body is not wanted
 */
export function discardRest(req: IncomingMessage): void {
  req.resume();
  if (req.readableEnded) return;
  const timer = setTimeout(() => req.socket.destroy(), LINGER_MS);
  timer.unref();
  const done = () => clearTimeout(timer);
  req.once("end", done);
  req.once("close", done);
}

/**
 * The error to answer for a body that could not be read. Authentication comes first (docs/api/generation.md §7,
 * docs/api/cloud.md §7): a request without an `Authorization` header gets 401, not the
 * size limit — the header is checked before a byte of the body is read.
 * @param error what {@link readBody} threw
 * @returns AppError `unauthorized` (401) for an oversized body without credentials, else `error`
 */
export function bodyReadError(req: IncomingMessage, error: unknown): AppError {
  if (error instanceof AppError && error.code === "payload_too_large" && !req.headers.authorization) return new AppError("unauthorized");
  if (error instanceof AppError) return error;
  throw error;
}

/**
 * Deepest nesting of objects and arrays a REST body may have: far above any documented body, far
 * below the depth at which JSON.stringify (the shims pass bodies on as JSON) overflows the stack.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests objects and arrays deeper than `limit`, counted without parsing
 * (brackets outside strings), so a hostile body costs one linear scan.
 */
export function jsonTooDeep(text: string, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** The 400 of a body nested deeper than {@link MAX_JSON_DEPTH}. */
export function tooDeepError(): AppError {
  return new AppError("invalid_request", `Request body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of objects and arrays`);
}

/**
 * Parses a JSON object body.
 * @returns the object, or null when the text is not JSON or not an object
 */
export function parseJsonObject(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * Whether a `Content-Type` declares a JSON body: `application/json`, with or without parameters
 * (`; charset=utf-8`), in any case. The one rule for every body the router takes (the specs'
 * `Content-Type: application/json`, GraphQL over HTTP's media type): a form, `text/plain` or no
 * type at all is refused with 415 `unsupported_media_type`, so no page elsewhere can make a
 * browser send a body the router acts on without a CORS preflight.
 * @param header the request's `Content-Type` header, if any
 */
export function isJsonContentType(header: string | undefined): boolean {
  return /^\s*application\/json\s*(;|$)/i.test(header ?? "");
}

/**
 * The body size limit of `POST /graphql`: 413 `payload_too_large` with a JSON GraphQL error as soon
 * as the declared `content-length` or the bytes received pass `limit`, before the body is read
 * whole. Within the limit the body is handed to the gateway already read (as `req.body`, which its
 * Node adapter takes as the request body).
 * Authentication comes first ({@link bodyReadError}): without an `Authorization` header an
 * oversized body is refused 401 `unauthorized`.
 * @param limit BODY_LIMIT_BYTES, in bytes
 * @returns true when the request may go on to the gateway; false when the 413 (or 401) was sent
 */
export function limitGraphqlBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<boolean> {
  if (req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS") return Promise.resolve(true);
  const tooLarge = (refusal: AppError) => {
    const message = refusal.code === "payload_too_large" ? `Request body is too large: the limit is ${limit} bytes` : refusal.message;
    // The rest of the body is discarded (discardRest, called by readBodyBytes) and the connection kept:
    // `connection: close` would close the socket while the client still sends, which reads as a reset.
    sendGraphqlError(res, refusal.code, message);
  };
  return readBodyBytes(req, limit).then(
    (body) => {
      (req as IncomingMessage & { body?: Buffer }).body = body;
      return true;
    },
    (error: unknown) => {
      if (!(error instanceof AppError && error.code === "payload_too_large")) throw error;
      tooLarge(bodyReadError(req, error));
      return false;
    },
  );
}
