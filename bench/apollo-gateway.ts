/**
 * The join scenario's peer (bench/README.md): Apollo Gateway (a dev dependency used only here)
 * serving the checked-in schema/supergraph.graphql, with routing URLs rewritten to the running
 * subgraphs and the caller's Authorization forwarded to them, in a process of its own.
 *
 * Env: GENERATION_URL, CLOUD_URL (subgraph `/graphql` URLs), SUBGRAPH_SECRET, PORT (0 = any free port).
 * Prints `Apollo Gateway: <url>` once it listens.
 */
import fs from "node:fs";
import { randomUUID } from "node:crypto";
import { ApolloGateway, RemoteGraphQLDataSource } from "@apollo/gateway";
import { ApolloServer } from "@apollo/server";
import { startStandaloneServer } from "@apollo/server/standalone";
import { SUPERGRAPH_FILE } from "../router/compose.ts";
import { supergraphWithUrls } from "../router/graph/gateway.ts";
import { signSubgraphRequest } from "../subgraphs/shared/internal-context.ts";

const generationUrl = process.env.GENERATION_URL;
const cloudUrl = process.env.CLOUD_URL;
if (!generationUrl || !cloudUrl) throw new Error("GENERATION_URL and CLOUD_URL are required");

const secret = process.env.SUBGRAPH_SECRET;
if (!secret) throw new Error("SUBGRAPH_SECRET is required: the subgraphs serve only signed requests");

/** Forwards the caller's key, signed as our router signs it (subgraphs/shared/internal-context.ts). */
class AuthorizedDataSource extends RemoteGraphQLDataSource<{ authorization?: string }> {
  /** @param subgraph the subgraph's name: the audience its requests are signed for */
  constructor(
    private readonly subgraph: string,
    url: string,
  ) {
    super({ url });
  }

  override willSendRequest({ request, context }: Parameters<NonNullable<RemoteGraphQLDataSource<{ authorization?: string }>["willSendRequest"]>>[0]) {
    const headers: Record<string, string> = { "x-switchyard-client-ip": "127.0.0.1", "x-switchyard-count-id": randomUUID() };
    if (context.authorization) headers.authorization = context.authorization;
    const signed = signSubgraphRequest(secret!, {
      query: request.query!,
      variables: request.variables,
      operationName: request.operationName,
      audience: this.subgraph,
      headers,
    });
    request.query = signed.query;
    request.extensions = signed.extensions ?? undefined;
  }
}

const supergraphSdl = supergraphWithUrls(fs.readFileSync(SUPERGRAPH_FILE, "utf8"), { generation: generationUrl, cloud: cloudUrl });
const gateway = new ApolloGateway({ supergraphSdl, buildService: ({ name, url }) => new AuthorizedDataSource(name, url!) });
const server = new ApolloServer({ gateway, introspection: false });
const { url } = await startStandaloneServer(server, {
  listen: { host: "127.0.0.1", port: Number(process.env.PORT ?? 0) },
  context: async ({ req }) => ({ authorization: req.headers.authorization }),
});
console.log(`Apollo Gateway: ${url.replace(/\/$/, "")}/`);

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    void server.stop().finally(() => process.exit(0));
  });
}
