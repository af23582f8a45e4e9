/**
 * The federation gateway (DESIGN §1): the Hive Gateway runtime over schema/supergraph.graphql,
 * with each subgraph's routing URL taken from config at start-up.
 */
import fs from "node:fs";
import { createGatewayRuntime } from "@graphql-hive/gateway-runtime";
import { SUPERGRAPH_FILE } from "./compose.ts";

/** Headers the router forwards to subgraphs: auth, locale, request id and the route being served. */
export const FORWARDED_HEADERS = [
  "authorization",
  "accept-language",
  "x-request-id",
  "x-service-signature",
  "x-switchyard-route",
  "x-switchyard-route-status",
  "x-switchyard-client-ip",
  "x-switchyard-method",
  "x-switchyard-path",
  "x-switchyard-body-sha256",
] as const;

/** The HTTP status a GraphQL error carries in `extensions.http.status`, if any. */
function httpStatusOf(error: unknown): number | undefined {
  const status = (error as { extensions?: { http?: { status?: unknown } } } | null)?.extensions?.http?.status;
  return typeof status === "number" ? status : undefined;
}

/** Puts `extensions.http.status` back on the serialized errors of one result, matched by position. */
function withHttpStatuses(result: any): any {
  if (!result || typeof result !== "object" || typeof result[Symbol.asyncIterator] === "function") return result;
  const statuses: (number | undefined)[] = (result.errors ?? []).map(httpStatusOf);
  if (!statuses.some((status) => status !== undefined)) return result;
  const stringify = result.stringify ?? JSON.stringify;
  return {
    ...result,
    stringify: (sanitized: any) =>
      stringify({
        ...sanitized,
        errors: sanitized.errors?.map((error: any, i: number) => {
          const json = typeof error?.toJSON === "function" ? error.toJSON() : error;
          const status = statuses[i];
          return status === undefined ? json : { ...json, extensions: { ...json.extensions, http: { status } } };
        }),
      }),
  };
}

/**
 * DESIGN §4: GraphQL errors carry `extensions.http.status`. GraphQL Yoga (under the gateway)
 * turns that extension into the response status and strips it from the body when it
 * serializes; this plugin hands Yoga a serializer that writes it back.
 */
export const keepHttpStatusInErrors = {
  onResultProcess({ result, setResult }: { result: any; setResult(result: any): void }) {
    setResult(Array.isArray(result) ? result.map(withHttpStatuses) : withHttpStatuses(result));
  },
};

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
    plugins: () => [keepHttpStatusInErrors],
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
