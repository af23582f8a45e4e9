/**
 * A thin node:http adapter for Apollo Server (Apollo Server 5 ships none): reads the body,
 * hands the request to `executeHTTPGraphQLRequest`, writes the answer back.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { HeaderMap, type ApolloServer, type BaseContext } from "@apollo/server";
import { ERROR_CODES, graphqlExtensions, type ErrorCode } from "../../src/errors.ts";
import type { RequestLike } from "./auth.ts";
import { InternalContextError, type InternalContext, type SignedParams, type createInternalVerifier } from "./internal-context.ts";

/** A JSON GraphQL error answer with our error contract: a registry code with its status (src/errors.ts). */
function sendError(res: ServerResponse, code: ErrorCode, message: string = ERROR_CODES[code].message): void {
  res
    .writeHead(ERROR_CODES[code].status, { "content-type": "application/json" })
    .end(JSON.stringify({ errors: [{ message, extensions: graphqlExtensions(code) }] }));
}

/** GraphQL parameters of a GET request's query string; null when `variables` or `extensions` is not JSON. */
function paramsOfSearch(search: URLSearchParams): SignedParams | null {
  try {
    const json = (name: string) => (search.has(name) ? JSON.parse(search.get(name)!) : undefined);
    return {
      query: search.get("query") ?? undefined,
      operationName: search.get("operationName"),
      variables: json("variables"),
      extensions: json("extensions"),
    };
  } catch {
    return null;
  }
}

/**
 * Creates a request handler for `/graphql`. Only requests signed by the router for this subgraph,
 * each once, are served (subgraphs/shared/internal-context.ts); anything else is 403 `forbidden`
 * before Apollo Server sees it, so `_service`, `_entities` and every field answer the router alone.
 * @param server a started Apollo Server
 * @param context builds the per-request context from the verified internal headers (never the HTTP headers)
 * @param bodyLimit maximum body size in bytes (413 beyond)
 * @param verifier checks the router's signature, audience and nonce, and returns the internal context
 */
export function apolloHandler<TContext extends BaseContext>(
  server: ApolloServer<TContext>,
  context: (req: RequestLike) => Promise<TContext>,
  bodyLimit: number,
  verifier: ReturnType<typeof createInternalVerifier>,
) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const headers = new HeaderMap();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    }
    let body: unknown;
    if (req.method === "POST") {
      const tooLarge = () => sendError(res, "payload_too_large");
      // A declared length over the limit is refused at once, not after waiting for bytes that may never come.
      if (Number(req.headers["content-length"]) > bodyLimit) {
        req.resume();
        return void tooLarge();
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        size += (chunk as Buffer).length;
        if (size > bodyLimit) return void tooLarge();
        chunks.push(chunk as Buffer);
      }
      const text = Buffer.concat(chunks).toString("utf8");
      try {
        body = text.length ? JSON.parse(text) : undefined;
      } catch {
        return sendError(res, "invalid_json");
      }
    }
    const url = new URL(req.url ?? "/", "http://subgraph");
    const params = req.method === "POST" ? (body && typeof body === "object" ? (body as SignedParams) : {}) : paramsOfSearch(url.searchParams);
    if (!params) return sendError(res, "invalid_request", "variables and extensions must be JSON");
    let internal: InternalContext;
    try {
      internal = await verifier.verify(params);
    } catch (error) {
      if (!(error instanceof InternalContextError)) throw error;
      return sendError(res, error.code, error.message);
    }
    const response = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method ?? "GET", headers, search: url.search, body },
      context: () => context({ headers: internal.headers }),
    });
    for (const [name, value] of response.headers) res.setHeader(name, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === "complete") {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  };
}
