/**
 * The federation gateway (DESIGN §1): the Hive Gateway runtime over schema/supergraph.graphql,
 * with each subgraph's routing URL taken from config at start-up.
 */
import fs from "node:fs";
import { createGatewayRuntime, type GatewayRuntime } from "@graphql-hive/gateway-runtime";

/** The gateway runtime: a fetch handler and a node:http request listener. */
export type Gateway = GatewayRuntime<Record<string, any>>;
import { SUPERGRAPH_FILE } from "./compose.ts";
import { gatewayLimitOptions } from "./limits.ts";
import { subscriptionKeyCheck } from "./key-check.ts";

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
 * @param options subgraph URLs by name; `production` hides introspection-dependent extras (and
 *   introspection and field suggestions, router/limits.ts); `requestTimeoutMs` limits one HTTP request
 * @returns a fetch-compatible handler (also a node:http request listener)
 */
export function createGateway(options: { subgraphUrls: Record<string, string>; production: boolean; requestTimeoutMs?: number }) {
  const limits = gatewayLimitOptions(options);
  const supergraph = supergraphWithUrls(fs.readFileSync(SUPERGRAPH_FILE, "utf8"), options.subgraphUrls);
  const gateway: Gateway = createGatewayRuntime({
    supergraph: () => supergraph,
    graphqlEndpoint: "/graphql",
    landingPage: false,
    graphiql: !options.production,
    logging: false,
    maskedErrors: false,
    disableIntrospection: limits.disableIntrospection,
    plugins: () => [keepHttpStatusInErrors, subscriptionKeyCheck(() => gateway), ...limits.plugins],
    // Subscriptions reach the subgraphs over graphql-ws, with the caller's key in the connection
    // params; `context.headers` holds the HTTP headers merged with graphql-ws connection params.
    transportEntries: {
      "*.http": {
        options: {
          subscriptions: {
            kind: "ws",
            location: "/graphql",
            options: { connectionParams: { authorization: "{context.headers.authorization}", "accept-language": "{context.headers.accept-language}" } },
          },
        },
      },
    },
    propagateHeaders: {
      fromClientToSubgraphs({ request, context }) {
        const fromContext = ((context as { headers?: Record<string, string> } | undefined)?.headers ?? {}) as Record<string, string>;
        const headers: Record<string, string> = {};
        for (const name of FORWARDED_HEADERS) {
          const value = request?.headers?.get(name) ?? fromContext[name];
          if (value) headers[name] = value;
        }
        return headers;
      },
    },
  });
  return gateway;
}
