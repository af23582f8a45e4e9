/**
 * A thin node:http adapter for Apollo Server (Apollo Server 5 ships none): reads the body,
 * hands the request to `executeHTTPGraphQLRequest`, writes the answer back.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { HeaderMap, type ApolloServer, type BaseContext } from "@apollo/server";

/**
 * Creates a request handler for `/graphql`.
 * @param server a started Apollo Server
 * @param context builds the per-request context from the request
 * @param bodyLimit maximum body size in bytes (413 beyond)
 */
export function apolloHandler<TContext extends BaseContext>(
  server: ApolloServer<TContext>,
  context: (req: IncomingMessage) => Promise<TContext>,
  bodyLimit: number,
) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const headers = new HeaderMap();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    }
    let body: unknown = undefined;
    if (req.method === "POST") {
      const tooLarge = () => res.writeHead(413, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ message: "Request body is too large" }] }));
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
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ message: "Request body must be valid JSON" }] }));
        return;
      }
    }
    const url = new URL(req.url ?? "/", "http://subgraph");
    const response = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method ?? "GET", headers, search: url.search, body },
      context: () => context(req),
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
