/**
 * The generation subgraph server (DESIGN §1, §7): Apollo Server + @apollo/subgraph on node:http,
 * serving `/graphql` on GENERATION_PORT.
 */
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ApolloServer, type ApolloServerPlugin } from "@apollo/server";
import { ApolloServerPluginInlineTraceDisabled } from "@apollo/server/plugin/disabled";
import { buildSubgraphSchema } from "@apollo/subgraph";
import { parse } from "graphql";
import type { Logger } from "pino";
import type { Db } from "../../src/db/index.ts";
import { nowIso } from "../../src/db/index.ts";
import type { GenerationService } from "../../src/generation/tasks.ts";
import { recordRequest } from "../../src/generation/usage.ts";
import { apolloHandler } from "../shared/apollo-http.ts";
import { formatError, statusOfErrors } from "../shared/errors.ts";
import { createContext, type GenerationContext } from "./context.ts";
import { resolvers } from "./resolvers.ts";

/** The SDL of this subgraph. */
export const generationTypeDefs = parse(fs.readFileSync(new URL("../../schema/generation.graphql", import.meta.url), "utf8"));

/** A running generation subgraph. */
export interface GenerationSubgraph {
  url: string;
  close(): Promise<void>;
}

/**
 * Records each request the router reports (header `x-switchyard-route`) in the request log of
 * the calling key, with the HTTP status its first error stands for.
 */
const requestLogPlugin: ApolloServerPlugin<GenerationContext> = {
  async requestDidStart() {
    return {
      async willSendResponse({ contextValue, response }) {
        if (!contextValue.route) return;
        const caller = await contextValue.callerOrNull();
        if (!caller) return;
        const errors = response.body.kind === "single" ? response.body.singleResult.errors : undefined;
        await recordRequest(contextValue.db, {
          keyId: caller.keyId,
          method: contextValue.route.method,
          path: contextValue.route.path,
          status: contextValue.route.status ?? statusOfErrors(errors),
          at: nowIso(),
          requestId: contextValue.requestId,
        });
      },
    };
  },
};

/**
 * Starts the generation subgraph.
 * @param options database, service, logger, host and port (0 = any free port), body limit in bytes
 * @returns its `/graphql` URL and a close function
 */
export async function startGenerationSubgraph(options: {
  db: Db;
  service: GenerationService;
  logger: Logger;
  host: string;
  port: number;
  bodyLimit: number;
}): Promise<GenerationSubgraph> {
  const server = new ApolloServer<GenerationContext>({
    schema: buildSubgraphSchema([{ typeDefs: generationTypeDefs, resolvers: resolvers as any }]),
    formatError: formatError(options.logger),
    includeStacktraceInErrorResponses: false,
    // Inline tracing only feeds Apollo Studio; it costs every request.
    plugins: [requestLogPlugin, ApolloServerPluginInlineTraceDisabled()],
    // The router is the public face; CSRF prevention there. Subgraphs are internal.
    csrfPrevention: false,
  });
  await server.start();
  const handle = apolloHandler(server, async (req) => createContext(options.db, options.service, req), options.bodyLimit);
  const httpServer = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/graphql") {
      handle(req, res).catch((error) => {
        options.logger.error({ err: error }, "generation subgraph request failed");
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ errors: [{ message: "Internal server error" }] }));
      });
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ message: "Not found" }] }));
  });
  httpServer.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => httpServer.listen(options.port, options.host, resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}/graphql`,
    async close() {
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        httpServer.closeAllConnections();
      });
      await server.stop();
    },
  };
}
