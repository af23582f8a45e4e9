/**
 * The generation subgraph (docs/architecture.md §1, §7): its SDL (schema.graphql, beside this file) served on GENERATION_PORT.
 */
import fs from "node:fs";
import { parse, type GraphQLFormattedError } from "graphql";
import type { Logger } from "pino";
import { nowIso, type Db } from "../../src/db/index.ts";
import type { RateLimiter } from "../../src/auth/rate-limit.ts";
import type { PubSub } from "../../src/events/pubsub.ts";
import type { GenerationService } from "../../src/generation/tasks/index.ts";
import { flushRequestLog, recordRequest } from "../../src/generation/usage.ts";
import { statusOfErrors } from "../shared/errors.ts";
import type { NonceStore } from "../shared/hop-nonces.ts";
import { startSubgraph, type SubgraphHandle, type SubgraphObservability } from "../shared/server.ts";
import { createContext, type GenerationAdmin, type GenerationContext } from "./context.ts";
import { resolvers, TYPE_SCOPES } from "./resolvers.ts";
import { scopeTypes } from "../shared/scopes.ts";
import { withRequestBudget } from "../shared/budget.ts";
import { guardAdminFields } from "../shared/admin-access.ts";
import { enforceRequestBudgets, type BudgetLimits } from "../../src/db/budget.ts";

/** The SDL of this subgraph. */
export const generationTypeDefs = parse(fs.readFileSync(new URL("./schema.graphql", import.meta.url), "utf8"));

/**
 * Records each request the router reports (header `x-switchyard-route`) in the request log of
 * the calling key, with the HTTP status its first error stands for. The row is batched
 * (src/generation/usage.ts): the answer does not wait for it.
 */
function recordRoute(logger: Logger) {
  return async (context: GenerationContext, errors: readonly GraphQLFormattedError[] | undefined): Promise<void> => {
    if (!context.route) return;
    const caller = await context.callerOrNull();
    if (!caller) return;
    const entry = {
      keyId: caller.keyId,
      method: context.route.method,
      path: context.route.path,
      status: context.route.status ?? statusOfErrors(errors),
      at: nowIso(),
      requestId: context.requestId,
    };
    recordRequest(context.db, entry).catch((error) => logger.error({ err: error, request_id: entry.requestId }, "request log row not written"));
  };
}

/**
 * Starts the generation subgraph.
 * @param options database, service, rate limiter, logger, host and port (0 = any), body limit in bytes
 * @returns its `/graphql` URL and a close function
 */
export async function startGenerationSubgraph(options: {
  db: Db;
  service: GenerationService;
  rateLimiter: RateLimiter;
  pubsub: PubSub;
  logger: Logger;
  host: string;
  port: number;
  bodyLimit: number;
  drainTimeoutMs?: number;
  /** SUBGRAPH_SECRET: only requests signed with it by the router are served (subgraphs/shared/internal-context.ts). */
  secret: string;
  /** Where the nonces of signed requests are claimed, once each (subgraphs/shared/hop-nonces.ts). */
  nonces: NonceStore;
  /** Tracing hooks and `/metrics` (bin/stack.ts). */
  observability?: SubgraphObservability;
  /** The database budget of each request (src/db/budget.ts; default its defaults). */
  budget?: BudgetLimits;
  /** The operator authentication and the channels, for the admin fields. */
  admin: GenerationAdmin;
}): Promise<SubgraphHandle> {
  enforceRequestBudgets(options.db);
  const handle = await startSubgraph<GenerationContext>({
    name: "generation",
    typeDefs: generationTypeDefs,
    // Every field of a scoped type checks its scope, wherever it was reached from (ADR 0007); every
    // resolver runs inside its request's database budget.
    resolvers: scopeTypes(generationTypeDefs, withRequestBudget(guardAdminFields(resolvers)), TYPE_SCOPES),
    context: async (req) => createContext(options.db, options.service, options.rateLimiter, options.pubsub, req, options.admin, options.budget),
    secret: options.secret,
    nonces: options.nonces,
    onResponse: recordRoute(options.logger),
    logger: options.logger,
    host: options.host,
    port: options.port,
    bodyLimit: options.bodyLimit,
    drainTimeoutMs: options.drainTimeoutMs,
    observability: options.observability,
  });
  // Rows of requests answered while draining are written before the database closes.
  return { ...handle, close: () => handle.close().then(() => flushRequestLog(options.db)) };
}
