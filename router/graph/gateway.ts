/**
 * The federation gateway (docs/architecture.md §1): the Hive Gateway runtime over schema/supergraph.graphql,
 * with each subgraph's routing URL taken from config at start-up.
 */
import fs from "node:fs";
import { unifiedGraphHandler } from "@graphql-hive/router-runtime";
import { Logger } from "@graphql-hive/logger";
import { createGatewayRuntime, type GatewayPlugin, type GatewayRuntime } from "@graphql-hive/gateway-runtime";
import { blockFieldSuggestionsPlugin } from "@escape.tech/graphql-armor-block-field-suggestions";
import type { Logger as PinoLogger } from "pino";

import { SUPERGRAPH_FILE } from "../compose.ts";
import { graphiqlHeaders, graphiqlOptions, renderGraphiQL } from "../devtools/graphiql.ts";
import httpTransport from "@graphql-mesh/transport-http";
import wsTransport from "@graphql-mesh/transport-ws";
import { IN_PROCESS_KIND, inProcessTransport, type SubgraphRequest } from "../transport/in-process.ts";
import type { LocalSubgraph } from "../../subgraphs/shared/contract.ts";
import { INTERNAL_EXTENSION, internalSigningPlugin, type InternalContext } from "../../subgraphs/shared/internal-context.ts";
import type { RequestReports } from "../request-report.ts";
import { usePersistedQueries, type PersistedQueriesOptions } from "../plugins/usePersistedQueries.ts";
import { usePreparsedParams } from "../plugins/usePreparsedParams.ts";
import { useKeepHttpStatus } from "../plugins/useKeepHttpStatus.ts";
import { useStatusFollowsData } from "../plugins/useStatusFollowsData.ts";
import { useVariableErrorsAsResult } from "../plugins/useVariableErrorsAsResult.ts";
import { useParamsJsonErrors } from "../plugins/useParamsJsonErrors.ts";
import { useTokenLimit } from "../plugins/useTokenLimit.ts";
import { useDeepDocumentIs400 } from "../plugins/useDeepDocumentIs400.ts";
import { useValidationLimits } from "../plugins/useValidationLimits.ts";
import { useOperationLimits } from "../plugins/useOperationLimits.ts";
import { useRequestDeadline } from "../plugins/useRequestDeadline.ts";
import { SUGGESTION_MASK, useHiddenSuggestions } from "../plugins/useHiddenSuggestions.ts";
import { useRegistryCodes } from "../plugins/useRegistryCodes.ts";
import { useEventStreamStatus } from "../plugins/useEventStreamStatus.ts";
import { useDeferAnswers } from "../plugins/useDeferAnswers.ts";
import { useRequestReport } from "../plugins/useRequestReport.ts";
import { useInternalContext } from "../plugins/useInternalContext.ts";
import { directFirst, type DirectGraphql } from "./direct-graphql.ts";

/** The gateway runtime: a fetch handler and a node:http request listener. */
export type Gateway = GatewayRuntime<Record<string, unknown>>;

/** The internal headers of one in-process subgraph request (no signature needed: same process). */
function inProcessHeaders(request: SubgraphRequest): Record<string, string> {
  return (request.extensions?.[INTERNAL_EXTENSION] as InternalContext | undefined)?.headers ?? {};
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

/** The subgraph names a supergraph declares (`@join__graph(name: …)`). */
function graphNamesOf(sdl: string): string[] {
  return [...sdl.matchAll(/@join__graph\(name: "([^"]+)"/g)].map((match) => match[1]!);
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

/** Options of {@link createGateway} and {@link pipeline}. */
export interface GatewayOptions {
  /** Subgraph name → `/graphql` URL. */
  subgraphUrls: Record<string, string>;
  /** Subgraphs running in this process, reached in-process instead (router/transport/in-process.ts). */
  localSubgraphs?: Record<string, LocalSubgraph>;
  /** Production: no introspection, no field suggestions, no GraphiQL. */
  production: boolean;
  /** Time limit of one `/graphql` HTTP request, in milliseconds; 0 or unset: none. */
  requestTimeoutMs?: number;
  /** SUBGRAPH_SECRET: the key of the HMAC signature on every request to a subgraph reached over the network. */
  subgraphSecret: string;
  /** Refuses SSE subscriptions whose key is bad (router/graph/useSubscriptionKeyCheck.ts). */
  keyCheck?: GatewayPlugin;
  /** GRAPHQL_DEFER: `@defer` delivered incrementally (multipart/mixed, SSE), on the runtime's default planner (ADR 0021). */
  defer?: boolean;
  /** Trusted documents, the APQ store and PERSISTED_ONLY (router/plugins/usePersistedQueries.ts); unset: neither. */
  persisted?: PersistedQueriesOptions;
  /** Where a gateway failure answered as `service_unavailable` is logged (router/plugins/useRegistryCodes.ts). */
  logger: Pick<PinoLogger, "warn">;
  /** The router's open request reports (router/request-report.ts), filled by router/plugins/useRequestReport.ts. */
  reports: RequestReports;
  /** The router's Prometheus plugin (router/metrics.ts `gatewayPlugin`). */
  metrics?: GatewayPlugin;
  /** The OpenTelemetry plugin (src/observability/tracing.ts), when tracing is configured. */
  tracing?: GatewayPlugin;
  /**
   * Operations one in-process subgraph owns whole run on it without the plan's executor
   * (router/graph/direct-graphql.ts, ADR 0030): its switch and a count per subgraph. Unset, or
   * with tracing (the spans of each subgraph call) or GRAPHQL_DEFER: the gateway runs all.
   */
  direct?: { graphql: DirectGraphql; onDirect(subgraph: string): void };
}

/**
 * The gateway's plugins, in the order they run (docs/architecture.md §1.1: this array is the one
 * place the order is written). Each kind of hook (request parse, parse, validate, execute, result,
 * response) runs in this order on its own, and a plugin that wraps a function (the parser, the
 * executor) wraps the one the plugins before it set; the line above each entry names its hook and,
 * where its place matters, why it sits there.
 * @param graphNames every subgraph of the supergraph (default: those of `subgraphUrls`)
 * @returns the plugins for createGatewayRuntime's `plugins`
 */
export function pipeline(options: GatewayOptions, graphNames: readonly string[] = Object.keys(options.subgraphUrls)): GatewayPlugin[] {
  const local = options.localSubgraphs ?? {};
  return [
    // First: a document that may not run is refused before any other hook pays for it.
    ...(options.persisted ? [usePersistedQueries(options.persisted)] : []),
    // Request parse: hands Yoga the body the router already read; before useParamsJsonErrors, which wraps the parser chosen.
    usePreparsedParams,
    // Result process: gives Yoga a serializer that writes `extensions.http.status` back into the body.
    useKeepHttpStatus,
    // Response: an answer with data is 200 (ADR 0006); never a stream or @defer's 406, so the other status rewrites below are independent of it.
    useStatusFollowsData,
    // Wraps execute and subscribe: a thrown coercion error becomes a result, which the result hooks then see.
    useVariableErrorsAsResult,
    // Subscribe: the key check of SSE subscriptions, given by router/server.ts (it runs an operation through this gateway: a cycle if imported).
    ...(options.keyCheck ? [options.keyCheck] : []),
    // Response, development only: GraphiQL's own headers.
    ...(options.production ? [] : [graphiqlHeaders]),
    // Request parse: after Yoga's parsers and usePreparsedParams, so it wraps the one chosen (non-JSON parameters: 400).
    useParamsJsonErrors,
    // Parse: counts tokens before graphql-js parses anything (too_many_tokens).
    useTokenLimit(),
    // Parse: after useTokenLimit, wrapping its parser, so only the stack overflow left is query_too_deep.
    useDeepDocumentIs400,
    // Validate: depth, aliases, directives (cached per document).
    useValidationLimits(),
    // Execute and subscribe, before the operation is planned: page size and cost with the variables.
    useOperationLimits,
    // Request: a timer around the whole request handler (504).
    ...(options.requestTimeoutMs ? [useRequestDeadline(options.requestTimeoutMs)] : []),
    // Production: Armor masks field suggestions in validation errors, then useHiddenSuggestions masks what it misses.
    ...(options.production ? [blockFieldSuggestionsPlugin({ mask: SUGGESTION_MASK }) as GatewayPlugin, useHiddenSuggestions] : []),
    // Parse, validate, execute, subscribe and HTTP results: every error leaves with its registry code and details only.
    useRegistryCodes(options.logger),
    // Response: an event stream is always 200 (its errors travel in the stream).
    useEventStreamStatus,
    // Response: @defer for a JSON-only client is 400 invalid_request, not Yoga's 406.
    ...(options.defer ? [useDeferAnswers] : []),
    // Observes parse, validate, execute and subscribe: request metrics.
    ...(options.metrics ? [options.metrics] : []),
    // Execute, subgraph results, response: the request's operation, key, quota and Retry-After.
    useRequestReport(options.reports),
    // Spans around the operations, when tracing is configured.
    ...(options.tracing ? [options.tracing] : []),
    // Subgraph execute, last but one: the facts a subgraph gets, complete before they are signed.
    useInternalContext,
    // Last: signs the internal context; in-process subgraphs need no signature. With every
    // subgraph in this process it would sign nothing, yet still look up each call's subgraph
    // schema (its `subgraph` argument): left out then (bench/README.md Round 3 step F).
    ...(graphNames.every((name) => name in local) ? [] : [internalSigningPlugin(options.subgraphSecret, (name) => !(name in local))]),
  ];
}

/**
 * Creates the gateway runtime.
 * @param options subgraph URLs by name; `localSubgraphs`, those running in this process, reached
 *   in-process instead (router/transport/in-process.ts); `production` hides introspection-dependent
 *   extras (and introspection and field suggestions); `requestTimeoutMs` limits one HTTP request;
 *   the rest feeds {@link pipeline}
 * @returns a fetch-compatible handler (also a node:http request listener)
 */
export function createGateway(options: GatewayOptions) {
  const local = options.localSubgraphs ?? {};
  dropLogLevelHiveRejects();
  const supergraph = supergraphWithUrls(fs.readFileSync(SUPERGRAPH_FILE, "utf8"), options.subgraphUrls);
  const gateway: Gateway = createGatewayRuntime({
    supergraph: () => supergraph,
    graphqlEndpoint: "/graphql",
    // Hive Router's Rust query planner and its executor: measured 25-35% less CPU per request
    // than the default (stitching) runtime on task reads and the dashboard join. It does not
    // defer, so GRAPHQL_DEFER=1 takes the default one with incremental delivery (ADR 0021).
    // Owned operations skip the plan's executor, below every hook (router/graph/direct-graphql.ts).
    ...(options.defer
      ? { deferStream: true }
      : {
          unifiedGraphHandler:
            options.direct && !options.tracing
              ? directFirst(unifiedGraphHandler, {
                  localSubgraphs: local,
                  reports: options.reports,
                  direct: options.direct.graphql,
                  onDirect: options.direct.onDirect,
                })
              : unifiedGraphHandler,
        }),
    landingPage: false,
    // CORS is the router's (router/http/cors.ts, CORS_ORIGINS); Yoga's default echoed any origin with credentials.
    cors: false,
    // Development only; Switchyard's page, served offline from local assets (router/devtools/graphiql.ts).
    graphiql: options.production ? false : graphiqlOptions,
    renderGraphiQL,
    logging: new QuietGatewayLogger(),
    maskedErrors: false,
    // Introspection off in production (router/limits.ts, the table's `introspection` row).
    disableIntrospection: options.production ? {} : undefined,
    plugins: () => pipeline(options, graphNamesOf(supergraph)),
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
