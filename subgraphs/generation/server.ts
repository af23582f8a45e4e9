/**
 * The generation subgraph (DESIGN §1, §7): schema/generation.graphql served on GENERATION_PORT.
 */
import fs from "node:fs";
import { parse, type GraphQLFormattedError } from "graphql";
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
async function recordRoute(context: GenerationContext, errors: readonly GraphQLFormattedError[] | undefined): Promise<void> {
  if (!context.route) return;
  const caller = await context.callerOrNull();
  if (!caller) return;
  await recordRequest(context.db, {
    keyId: caller.keyId,
    method: context.route.method,
    path: context.route.path,
    status: context.route.status ?? statusOfErrors(errors),
    at: nowIso(),
    requestId: context.requestId,
  });
}

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
    onResponse: recordRoute,
    logger: options.logger,
    host: options.host,
    port: options.port,
    bodyLimit: options.bodyLimit,
    drainTimeoutMs: options.drainTimeoutMs,
    observability: options.observability,
  });
}
