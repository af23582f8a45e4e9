/**
 * Request bodies for the REST shims: read with a size limit (413 before the body is read whole)
 * and parsed as JSON.
 */
import type { IncomingMessage } from "node:http";
import { AppError } from "../../src/errors.ts";

/**
 * Reads a request body.
 * @param limit maximum size in bytes
 * @returns the raw text
 * @throws AppError `payload_too_large` (413) as soon as the declared or received size passes the limit
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) {
    req.resume();
    throw new AppError("payload_too_large");
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      req.resume();
      throw new AppError("payload_too_large");
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
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
