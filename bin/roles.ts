/** The roles a process can run (`switchyard start [ROLES]`; docs/architecture.md §2). */
import { ConfigError, subgraphSecretFor, type Config } from "../src/config.ts";

/** A process role. */
export type Role = "router" | "generation" | "cloud";

/** Every role, in start order. */
export const ALL_ROLES: readonly Role[] = ["generation", "cloud", "router"];

/**
 * The settings the given roles need, checked before anything starts (`switchyard start` and
 * `switchyard config check` alike): the SUBGRAPH_SECRET rule ({@link subgraphSecretFor}) and the
 * subgraph URLs a router needs when a subgraph runs elsewhere.
 * @param roles the roles of the process
 * @returns the SUBGRAPH_SECRET in force (made for this start in one all-role process)
 * @throws ConfigError with the one-line message the start prints
 */
export function checkRoleSettings(config: Pick<Config, "subgraphSecret" | "generationUrl" | "cloudUrl">, roles: readonly Role[]): string {
  // One process with every role reaching its own subgraphs (`npm start`) may make its secret;
  // separate processes must share one (README "Security model").
  const sharedProcess = ALL_ROLES.every((role) => roles.includes(role)) && !config.generationUrl && !config.cloudUrl;
  const secret = subgraphSecretFor(config, sharedProcess);
  if (roles.includes("router")) {
    if (!roles.includes("generation") && !config.generationUrl) throw new ConfigError("GENERATION_URL is required when the generation subgraph runs elsewhere");
    if (!roles.includes("cloud") && !config.cloudUrl) throw new ConfigError("CLOUD_URL is required when the cloud subgraph runs elsewhere");
  }
  return secret;
}
