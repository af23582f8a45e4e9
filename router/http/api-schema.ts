/**
 * `GET /graphql/schema.graphql`: the API schema clients generate code from (schema/api.graphql,
 * `npm run compose`; README "Schema and contract"), in production too. The SDL is public by
 * decision (docs/adr/0018-published-contract.md): it is in the repository and the docs already,
 * names nothing internal (no federation machinery, no subgraph URL) and grants nothing: every
 * field checks its key and scope. Production turns introspection off to keep its cost and field
 * suggestions away from strangers, not to hide the schema.
 *
 * `application/graphql; charset=utf-8`, `Cache-Control: public, no-cache` with an ETag (a client
 * revalidates and gets 304 until a deploy changes the schema), br or gzip as the client accepts.
 */
import fs from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { API_SCHEMA_FILE } from "../compose.ts";
import { represent, send, type Representation } from "./assets.ts";

/** The media type of GraphQL SDL as served here. */
export const GRAPHQL_SDL_TYPE = "application/graphql; charset=utf-8";

/**
 * The handler of `GET /graphql/schema.graphql`; reads schema/api.graphql once, on the first request.
 * @param file the SDL file (default schema/api.graphql)
 */
export function serveApiSchema(file: URL = API_SCHEMA_FILE): (call: { req: IncomingMessage; res: ServerResponse }) => Promise<void> {
  let schema: Representation | undefined;
  return async ({ req, res }) => {
    schema ??= represent(fs.readFileSync(file), GRAPHQL_SDL_TYPE);
    await send(req, res, schema, { "cache-control": "public, no-cache" });
  };
}
