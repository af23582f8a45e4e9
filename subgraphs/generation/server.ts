/**
 * The generation subgraph (DESIGN §1, §7): schema/generation.graphql served on GENERATION_PORT.
 */
import fs from "node:fs";
import { parse } from "graphql";
import type { ApolloServerPlugin } from "@apollo/server";
import type { Logger } from "pino";
import { nowIso, type Db } from "../../src/db/index.ts";
import type { RateLimiter } from "../../src/auth/policy.ts";
import type { PubSub } from "../../src/events/pubsub.ts";
import type { GenerationService } from "../../src/generation/tasks.ts";
import { recordRequest } from "../../src/generation/usage.ts";
import { statusOfErrors } from "../shared/errors.ts";
import { startSubgraph, type SubgraphHandle, type SubgraphObservability } from "../shared/server.ts";
import { createContext, type GenerationContext } from "./context.ts";
import { resolvers } from "./resolvers.ts";

/** The SDL of this subgraph. */
export const generationTypeDefs = parse(fs.readFileSync(new URL("../../schema/generation.graphql", import.meta.url), "utf8"));

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
 * @param options database, service, rate limiter, logger, host and port (0 = any), body limit in bytes
 * @returns its `/graphql` URL and a close function
 */
export function startGenerationSubgraph(options: {
  db: Db;
  service: GenerationService;
  rateLimiter: RateLimiter;
  pubsub: PubSub;
  logger: Logger;
  host: string;
  port: number;
  bodyLimit: number;
  drainTimeoutMs?: number;
  /** Tracing hooks and `/metrics` (bin/stack.ts). */
  observability?: SubgraphObservability;
}): Promise<SubgraphHandle> {
  return startSubgraph<GenerationContext>({
    name: "generation",
    typeDefs: generationTypeDefs,
    resolvers: resolvers as any,
    context: async (req) => createContext(options.db, options.service, options.rateLimiter, options.pubsub, req),
    onConnect: async (req) => Boolean(await createContext(options.db, options.service, options.rateLimiter, options.pubsub, req).callerOrNull()),
    plugins: [requestLogPlugin],
    logger: options.logger,
    host: options.host,
    port: options.port,
    bodyLimit: options.bodyLimit,
    drainTimeoutMs: options.drainTimeoutMs,
    observability: options.observability,
  });
}
