/**
 * The join scenario's Hive Gateway peer (bench/README.md "Scenarios"): the configuration file the
 * standalone `hive-gateway` CLI (@graphql-hive/gateway, a dev dependency used only here) loads,
 * started by bench/server.ts as `hive-gateway supergraph <file> --hive-router-runtime` (the Rust
 * query planner) in a process of its own, in front of our subgraph ports.
 *
 * Our subgraphs serve only requests the router signed (subgraphs/shared/internal-context.ts): the
 * gateway signs each subgraph request with the same Hive Gateway HMAC plugin our router uses,
 * over the caller's `Authorization` in the `switchyard` extension, as bench/apollo-gateway.ts does.
 * In-flight deduplication of subgraph requests is off, as in the other rows.
 *
 * Env: SUBGRAPH_SECRET.
 */
import { randomUUID } from "node:crypto";
import { defineConfig, type GatewayPlugin } from "@graphql-hive/gateway";
import { INTERNAL_EXTENSION, internalSigningPlugin, newInternalContext } from "../subgraphs/shared/internal-context.ts";

const secret = process.env.SUBGRAPH_SECRET;
if (!secret) throw new Error("SUBGRAPH_SECRET is required: the subgraphs serve only signed requests");

/** The facts a subgraph reads, here only the caller's key (what Apollo Gateway's peer forwards too). */
const forwardAuthorization: GatewayPlugin = {
  onSubgraphExecute({ subgraphName, executionRequest }) {
    const request = (executionRequest.context as { request?: Request } | undefined)?.request;
    const headers: Record<string, string> = { "x-switchyard-client-ip": "127.0.0.1", "x-switchyard-count-id": randomUUID() };
    const authorization = request?.headers.get("authorization");
    if (authorization) headers.authorization = authorization;
    executionRequest.extensions = { ...executionRequest.extensions, [INTERNAL_EXTENSION]: newInternalContext(subgraphName, headers) };
  },
};

export const gatewayConfig = defineConfig({
  plugins: () => [forwardAuthorization, internalSigningPlugin(secret, () => true) as GatewayPlugin],
  transportEntries: { "*.http": { options: { deduplicateInflightRequests: false } } },
  landingPage: false,
  graphiql: false,
  disableIntrospection: {},
});
