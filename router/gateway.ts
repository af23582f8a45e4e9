/**
 * The federation gateway (DESIGN §1): the Hive Gateway runtime over schema/supergraph.graphql,
 * with each subgraph's routing URL taken from config at start-up.
 */
import fs from "node:fs";
import { createGatewayRuntime } from "@graphql-hive/gateway-runtime";
import { SUPERGRAPH_FILE } from "./compose.ts";

/** Headers the router forwards to subgraphs: auth, locale, request id and the route being served. */
export const FORWARDED_HEADERS = ["authorization", "accept-language", "x-request-id", "x-switchyard-route", "x-switchyard-route-status"] as const;

/**
 * Replaces the routing URLs of the checked-in supergraph.
 * @param urls subgraph name → `/graphql` URL
 */
export function supergraphWithUrls(sdl: string, urls: Record<string, string>): string {
  return sdl.replace(/@join__graph\(name: "([^"]+)", url: "([^"]*)"\)/g, (whole, name: string) =>
    urls[name] ? `@join__graph(name: "${name}", url: "${urls[name]}")` : whole,
  );
}

/**
 * Creates the gateway runtime.
 * @param options subgraph URLs by name; `production` hides introspection-dependent extras
 * @returns a fetch-compatible handler (also a node:http request listener)
 */
export function createGateway(options: { subgraphUrls: Record<string, string>; production: boolean }) {
  const supergraph = supergraphWithUrls(fs.readFileSync(SUPERGRAPH_FILE, "utf8"), options.subgraphUrls);
  return createGatewayRuntime({
    supergraph: () => supergraph,
    graphqlEndpoint: "/graphql",
    landingPage: false,
    graphiql: !options.production,
    logging: false,
    maskedErrors: false,
    propagateHeaders: {
      fromClientToSubgraphs({ request }) {
        const headers: Record<string, string> = {};
        for (const name of FORWARDED_HEADERS) {
          const value = request.headers.get(name);
          if (value) headers[name] = value;
        }
        return headers;
      },
    },
  });
}

/** The gateway runtime type. */
export type Gateway = ReturnType<typeof createGateway>;
