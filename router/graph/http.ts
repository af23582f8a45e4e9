/**
 * `/graphql` over HTTP (docs/architecture.md §9): the router hands a request it has already read
 * and limited to the gateway's fetch handler and writes the answer back. Part of the graph, not of
 * router/http/ (what every route shares), which imports nothing of graph/ (docs/architecture.md §1.2).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Gateway } from "./gateway.ts";
import { postParsed } from "./client.ts";
import { isJsonContentType } from "../http/body.ts";
import { answerBatch, type BatchContext } from "./batch.ts";

/** Request headers that describe the client's connection or body framing, not the request itself. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "expect", "upgrade", "te", "trailer"]);

/**
 * A JSON request body as GraphQL parameters: a JSON object, or an array (a batch, router/graph/batch.ts),
 * else null (the gateway answers anything else itself).
 */
function jsonParams(contentType: string | undefined, body: Buffer | undefined): Record<string, unknown> | unknown[] | null {
  // (router/server.ts refused any other content type already.)
  if (!body?.length || !isJsonContentType(contentType)) return null;
  try {
    const parsed: unknown = JSON.parse(body.toString("utf8"));
    return parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown> | unknown[]) : null;
  } catch {
    return null;
  }
}

/**
 * Answers one `/graphql` request through the gateway's fetch handler. The body was already read
 * and limited (router/http/body.ts `limitGraphqlBody`): a JSON object goes in parsed (router/plugins/usePreparsedParams.ts), any other
 * body as it came; the answer is written back whole. The gateway's node:http adapter would stream
 * the body a second time and tie an AbortSignal to the socket (measured in bench/README.md).
 * Event streams (SSE) keep the adapter. A JSON array is a batch, answered by router/graph/batch.ts.
 * @param url the request URL (path and query string are passed on)
 * @param body the raw body (POST), or undefined
 * @param batch what a batch needs (its limit, the report registry and this request's report)
 */
export async function answerThroughFetch(
  gateway: Gateway,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  body: Buffer | undefined,
  batch: Omit<BatchContext, "gateway">,
): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  const method = req.method ?? "GET";
  const target = `http://router.internal${url.pathname}${url.search}`;
  const params = method === "POST" ? jsonParams(headers["content-type"], body) : null;
  if (Array.isArray(params)) return answerBatch({ ...batch, gateway }, res, target, headers, params);
  const response = params
    ? await postParsed(gateway, target, headers, params)
    : await gateway.fetch(target, { method, headers, body: method === "GET" || method === "HEAD" ? undefined : (body ?? "") });
  res.statusCode = response.status;
  response.headers.forEach((value, name) => {
    if (name !== "content-length") res.setHeader(name, value);
  });
  res.end(Buffer.from(await response.arrayBuffer()));
}
