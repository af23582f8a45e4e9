/**
 * The cloud subgraph (docs/architecture.md §1, §7): its SDL (schema.graphql, beside this file) served on CLOUD_PORT.
 */
import fs from "node:fs";
import { parse } from "graphql";
import type { Logger } from "pino";
import type { Db } from "../../src/db/index.ts";
import type { RateLimiter } from "../../src/auth/rate-limit.ts";
import type { OperatorAuth } from "../../src/auth/operators/access.ts";
import { guardAdminFields } from "../shared/admin-access.ts";
import type { NonceStore } from "../shared/hop-nonces.ts";
import { startSubgraph, type SubgraphHandle, type SubgraphObservability } from "../shared/server.ts";
import { createCloudContext, type CloudContext } from "./context.ts";
import { resolvers, TYPE_SCOPES } from "./resolvers.ts";
import { scopeTypes } from "../shared/scopes.ts";
import { withRequestBudget } from "../shared/budget.ts";
import { enforceRequestBudgets, type BudgetLimits } from "../../src/db/budget.ts";
import type { CloudServices } from "./services.ts";

/** The SDL of this subgraph. */
export const cloudTypeDefs = parse(fs.readFileSync(new URL("./schema.graphql", import.meta.url), "utf8"));

/**
 * Starts the cloud subgraph.
 * @returns its `/graphql` URL and a close function
 */
export function startCloudSubgraph(options: {
  db: Db;
  services: CloudServices;
  rateLimiter: RateLimiter;
  logger: Logger;
  host: string;
  port: number;
  bodyLimit: number;
  /** The operator authentication of the admin fields (src/auth/operators/access.ts). */
  admin: OperatorAuth;
  /** Graceful shutdown: how long requests in flight may finish (default 10 s). */
  drainTimeoutMs?: number;
  /** SUBGRAPH_SECRET: only requests signed with it by the router are served (subgraphs/shared/internal-context.ts). */
  secret: string;
  /** Where the nonces of signed requests are claimed, once each (subgraphs/shared/hop-nonces.ts). */
  nonces: NonceStore;
  /** Tracing hooks and `/metrics` (bin/stack.ts). */
  observability?: SubgraphObservability;
  /** The database budget of each request (src/db/budget.ts; default its defaults). */
  budget?: BudgetLimits;
}): Promise<SubgraphHandle> {
  enforceRequestBudgets(options.db);
  return startSubgraph<CloudContext>({
    name: "cloud",
    typeDefs: cloudTypeDefs,
    // Every field of a scoped type checks its scope, wherever it was reached from (ADR 0007); every
    // resolver runs inside its request's database budget.
    resolvers: scopeTypes(cloudTypeDefs, withRequestBudget(guardAdminFields(resolvers)), TYPE_SCOPES, { bypass: (ctx: CloudContext) => ctx.isAdmin() }),
    context: async (req) => createCloudContext(options.db, options.services, options.rateLimiter, req, options.admin, options.budget),
    secret: options.secret,
    nonces: options.nonces,
    logger: options.logger,
    host: options.host,
    port: options.port,
    bodyLimit: options.bodyLimit,
    drainTimeoutMs: options.drainTimeoutMs,
    observability: options.observability,
  });
}
