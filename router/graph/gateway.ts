/**
 * The federation gateway (docs/architecture.md §1): the Hive Gateway runtime over schema/supergraph.graphql,
 * with each subgraph's routing URL taken from config at start-up.
 */
import fs from "node:fs";
import { GraphQLError, type ExecutionResult } from "graphql";
import { unifiedGraphHandler } from "@graphql-hive/router-runtime";
import { Logger } from "@graphql-hive/logger";
import { createGatewayRuntime, type GatewayPlugin, type GatewayRuntime } from "@graphql-hive/gateway-runtime";

import { SUPERGRAPH_FILE } from "../compose.ts";
import { gatewayLimitOptions } from "../limits.ts";
import { statusFollowsData } from "../graphql-status.ts";
import { graphiqlHeaders, graphiqlOptions, renderGraphiQL } from "../devtools/graphiql.ts";
import httpTransport from "@graphql-mesh/transport-http";
import wsTransport from "@graphql-mesh/transport-ws";
import { IN_PROCESS_KIND, inProcessTransport, type SubgraphRequest } from "../transport/in-process.ts";
import type { LocalSubgraph } from "../../subgraphs/shared/contract.ts";
import { usePersistedQueries, type PersistedQueriesOptions } from "../plugins/usePersistedQueries.ts";
import {
  INTERNAL_EXTENSION,
  internalSigningPlugin,
  newInternalContext,
  pickInternalHeaders,
  type InternalContext,
  type InternalHeaders,
} from "../../subgraphs/shared/internal-context.ts";

/** The gateway runtime: a fetch handler and a node:http request listener. */
export type Gateway = GatewayRuntime<Record<string, unknown>>;

/**
 * Puts the internal context of a subgraph request (subgraphs/shared/internal-context.ts) in its
 * `switchyard` extension, from facts the router alone has set: for HTTP requests the request's
 * headers, rewritten at the router's edge (router/server.ts strips every `x-switchyard-*` a client
 * sends and sets its own); for graphql-ws operations the `internalHeaders` the router built when
 * the operation started (router/websocket.ts). Nothing else a client sends reaches a subgraph.
 * Each subgraph fetch (one client request may make several, to one subgraph or both) gets a
 * context of its own: a new nonce, and the name of the subgraph it is for.
 */
const internalContextPlugin: GatewayPlugin = {
  onSubgraphExecute({ subgraphName, executionRequest }) {
    const context = (executionRequest.context ?? {}) as { internalHeaders?: InternalHeaders; request?: Request };
    const headers = context.internalHeaders ?? (context.request ? pickInternalHeaders((name) => context.request!.headers.get(name)) : {});
    executionRequest.extensions = { ...executionRequest.extensions, [INTERNAL_EXTENSION]: newInternalContext(subgraphName, headers) };
  },
};

/** The internal headers of one in-process subgraph request (no signature needed: same process). */
function inProcessHeaders(request: SubgraphRequest): Record<string, string> {
  return (request.extensions?.[INTERNAL_EXTENSION] as InternalContext | undefined)?.headers ?? {};
}

/** The HTTP status a GraphQL error carries in `extensions.http.status`, if any. */
function httpStatusOf(error: unknown): number | undefined {
  const status = (error as { extensions?: { http?: { status?: unknown } } } | null)?.extensions?.http?.status;
  return typeof status === "number" ? status : undefined;
}

/** A result as GraphQL Yoga serializes it (its `ExecutionResultWithSerializer`, not exported). */
type SerializableResult = ExecutionResult & { stringify?: (result: ExecutionResult) => string };

/** Puts `extensions.http.status` back on the serialized errors of one result, matched by position. */
function withHttpStatuses<T extends SerializableResult | AsyncIterable<SerializableResult>>(result: T): T {
  if (!result || typeof result !== "object" || Symbol.asyncIterator in result) return result;
  const statuses: (number | undefined)[] = (result.errors ?? []).map(httpStatusOf);
  if (!statuses.some((status) => status !== undefined)) return result;
  const stringify = result.stringify ?? JSON.stringify;
  return {
    ...result,
    stringify: (sanitized: ExecutionResult) =>
      stringify({
        ...sanitized,
        errors: sanitized.errors?.map((error, i) => {
          const json = typeof error?.toJSON === "function" ? error.toJSON() : error;
          const status = statuses[i];
          return status === undefined ? json : { ...json, extensions: { ...json.extensions, http: { status } } };
        }),
      }),
  };
}

/**
 * docs/architecture.md §4: GraphQL errors carry `extensions.http.status`. GraphQL Yoga (under the gateway)
 * turns that extension into the response status and strips it from the body when it
 * serializes; this plugin hands Yoga a serializer that writes it back.
 */
export const keepHttpStatusInErrors: GatewayPlugin = {
  onResultProcess({ result, setResult }) {
    setResult(Array.isArray(result) ? result.map(withHttpStatuses) : withHttpStatuses(result));
  },
};

/**
 * The errors of a thrown variable-coercion failure (one GraphQLError, or an AggregateError of
 * them), marked 400 as graphql-tools' `execute` marks them; else null.
 */
function requestErrorsOf(error: unknown): GraphQLError[] | null {
  const errors = error instanceof AggregateError ? error.errors : [error];
  if (!errors.length || !errors.every((e) => e instanceof GraphQLError)) return null;
  return (errors as GraphQLError[]).map((e) => {
    const http = (e.extensions?.http ?? {}) as Record<string, unknown>;
    return Object.defineProperty(e, "extensions", { value: { ...e.extensions, http: { ...http, status: 400 } } });
  });
}

/**
 * The Rust planner's executor (@graphql-hive/router-runtime) throws variable coercion errors
 * where graphql-js returns them as a result. This plugin turns them back into an error result,
 * so they stay request errors (400 with `extensions.http.status`) and pass the later hooks
 * (suggestion masking in production, router/limits.ts) as before.
 */
export const variableErrorsAsResult: GatewayPlugin = {
  onExecute({ executeFn, setExecuteFn }) {
    setExecuteFn(returningRequestErrors(executeFn));
  },
  onSubscribe({ subscribeFn, setSubscribeFn }) {
    setSubscribeFn(returningRequestErrors(subscribeFn));
  },
};

/** Wraps an execute or subscribe function: thrown request errors become an error result. */
function returningRequestErrors<Args, Result>(run: (args: Args) => Result | Promise<Result>) {
  return async (args: Args): Promise<Result | { errors: GraphQLError[] }> => {
    try {
      return await run(args);
    } catch (error) {
      const errors = requestErrorsOf(error);
      if (!errors) throw error;
      return { errors };
    }
  };
}

/**
 * Replaces the routing URLs of the checked-in supergraph.
 * @param urls subgraph name → `/graphql` URL
 */
export function supergraphWithUrls(sdl: string, urls: Record<string, string>): string {
  return sdl.replace(/@join__graph\(name: "([^"]+)", url: "([^"]*)"\)/g, (whole, name: string) =>
    urls[name] ? `@join__graph(name: "${name}", url: "${urls[name]}")` : whole,
  );
}

/** The levels the gateway's logger (@graphql-hive/logger) accepts in LOG_LEVEL. */
const HIVE_LOG_LEVELS = new Set(["trace", "debug", "info", "warn", "error"]);

/**
 * The Hive logger reads LOG_LEVEL from the environment in every constructor and throws on pino
 * levels it lacks (`silent`, `fatal`): `LOG_LEVEL=silent switchyard start` would crash. Our logs
 * go through pino (config.logLevel, read before this runs) and the gateway's logger is off, so
 * such a value is dropped from the environment.
 */
function dropLogLevelHiveRejects(env: NodeJS.ProcessEnv = process.env): void {
  if (env.LOG_LEVEL && !HIVE_LOG_LEVELS.has(env.LOG_LEVEL)) delete env.LOG_LEVEL;
}

/**
 * The gateway's own logger, off (our logs are pino's). The gateway gives every request a child
 * logger carrying its request id; this logger is its own child, so none is built per request
 * (each construction reads the environment: about 2% of a task read's CPU).
 */
class QuietGatewayLogger extends Logger {
  constructor() {
    super({ level: false });
  }
  override child(): Logger {
    return this;
  }
}

/**
 * Creates the gateway runtime.
 * @param options subgraph URLs by name; `localSubgraphs`, those running in this process, reached
 *   in-process instead (router/transport/in-process.ts); `production` hides introspection-dependent
 *   extras (and introspection and field suggestions, router/limits.ts); `requestTimeoutMs` limits
 *   one HTTP request
 * @returns a fetch-compatible handler (also a node:http request listener)
 */
export function createGateway(options: {
  subgraphUrls: Record<string, string>;
  localSubgraphs?: Record<string, LocalSubgraph>;
  production: boolean;
  requestTimeoutMs?: number;
  /** SUBGRAPH_SECRET: the key of the HMAC signature on every request to a subgraph reached over the network. */
  subgraphSecret: string;
  /** Refuses SSE subscriptions whose key is bad (router/graph/key-check.ts `subscriptionKeyCheck`). */
  keyCheck?: GatewayPlugin;
  /** Further plugins: metrics and tracing (router/metrics.ts, src/observability/tracing.ts). */
  plugins?: GatewayPlugin[];
  /** Trusted documents, the APQ store and PERSISTED_ONLY (router/plugins/usePersistedQueries.ts); unset: neither. */
  persisted?: PersistedQueriesOptions;
}) {
  const local = options.localSubgraphs ?? {};
  dropLogLevelHiveRejects();
  const limits = gatewayLimitOptions(options);
  const supergraph = supergraphWithUrls(fs.readFileSync(SUPERGRAPH_FILE, "utf8"), options.subgraphUrls);
  const gateway: Gateway = createGatewayRuntime({
    supergraph: () => supergraph,
    graphqlEndpoint: "/graphql",
    // Hive Router's Rust query planner and its executor: measured 25-35% less CPU per request
    // than the default (stitching) runtime on task reads and the dashboard join.
    unifiedGraphHandler,
    landingPage: false,
    // CORS is the router's (router/http/cors.ts, CORS_ORIGINS); Yoga's default echoed any origin with credentials.
    cors: false,
    // Development only; Switchyard's page, served offline from local assets (router/devtools/graphiql.ts).
    graphiql: options.production ? false : graphiqlOptions,
    renderGraphiQL,
    logging: new QuietGatewayLogger(),
    maskedErrors: false,
    disableIntrospection: limits.disableIntrospection,
    plugins: () => [
      // First: a document that may not run is refused before any other hook pays for it.
      ...(options.persisted ? [usePersistedQueries(options.persisted)] : []),
      preparsedParams,
      keepHttpStatusInErrors,
      statusFollowsData,
      variableErrorsAsResult,
      // The key check of SSE subscriptions (router/graph/key-check.ts), given by the router: it runs an
      // operation through this gateway, so it cannot be imported here without a cycle.
      ...(options.keyCheck ? [options.keyCheck] : []),
      // (No `extensions.serviceName` leaves, in any mode: router/error-codes.ts keeps only the registry's keys.)
      ...(options.production ? [] : [graphiqlHeaders]),
      ...limits.plugins,
      ...(options.plugins ?? []),
      // Last, so the facts are complete when they are signed; in-process subgraphs need no signature.
      internalContextPlugin,
      internalSigningPlugin(options.subgraphSecret, (name) => !(name in local)),
    ],
    // Subscriptions reach remote subgraphs over graphql-ws; each operation carries its signed
    // internal context (the caller's key included) like a query does.
    transports: { http: httpTransport, ws: wsTransport, [IN_PROCESS_KIND]: inProcessTransport(local, inProcessHeaders) },
    transportEntries: {
      ...Object.fromEntries(Object.keys(local).map((name) => [name, { kind: IN_PROCESS_KIND }])),
      "*.http": {
        options: {
          subscriptions: {
            kind: "ws",
            location: "/graphql",
          },
        },
      },
    },
  });
  return gateway;
}

/**
 * Where router/graph/client.ts `postParsed` leaves the parsed body of a request for
 * {@link preparsedParams} (the server context of the gateway's fetch handler).
 */
export const PARSED_BODY = Symbol("switchyard.parsedBody");

/**
 * Lets the gateway take a JSON body the router has already read, limited and parsed: the request
 * reaches it without a body, so GraphQL Yoga neither re-streams it through its own size guard
 * (a TransformStream per request; ours ran first, router/limits.ts) nor parses it again. Yoga's
 * checks of the parameters themselves (onParams) still run.
 */
export const preparsedParams = {
  onRequestParse({ serverContext, setRequestParser }: { serverContext?: Record<PropertyKey, unknown>; setRequestParser(parser: () => unknown): void }) {
    const params = serverContext?.[PARSED_BODY];
    if (params) setRequestParser(() => params);
  },
};
