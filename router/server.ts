/**
 * The router (docs/architecture.md §1-2): one node:http server on PORT for everything users reach —
 * `/graphql` (the gateway), the REST shims, `/health`, `/livez`, `/readyz`, placeholder media — with an
 * `X-Request-Id` on every response and one JSON log line per request (keys never logged).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import FindMyWay from "find-my-way";
import type { Logger } from "pino";
import type { GraphQLSchema } from "graphql";
import { createGateway, type Gateway } from "./graph/gateway.ts";
import { answerThroughFetch } from "./graph/http.ts";
import { DEFAULT_BATCH_MAX } from "./graph/batch.ts";
import { createSingleConnectionStreams } from "./graph/sse-single.ts";
import { completeEventStream } from "./http/event-stream.ts";
import { applyCors } from "./http/cors.ts";
import { discardRest, isJsonContentType, limitGraphqlBody } from "./http/body.ts";
import { createEdge } from "./http/edge.ts";
import { sendGraphqlError } from "./http/graphql-error.ts";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { useSubscriptionKeyCheck } from "./graph/useSubscriptionKeyCheck.ts";
import { attachWebSockets } from "./websocket.ts";
import { createRevocations, endEventStream, onRequestKey, type DisabledKeyFeed } from "./revocation.ts";
import { createGenerationShim, sendGenerationError, type RestCall } from "./rest/generation.ts";
import { createCloudShim, sendCloudError } from "./rest/cloud.ts";
import { policyHeaders, sha256Hex } from "./graph/client.ts";
import { mediaSigningKey, type MediaSource } from "../src/generation/media/signed-url.ts";
import { serveProviderMedia, serveSimulatorMedia } from "./media.ts";
import { createHealth, subgraphChecks } from "./health.ts";
import { createReadiness, serveLiveness, serveReadiness, type ReadinessCheck } from "../src/observability/readiness.ts";
import { serveCloudOpenApi, serveGenerationOpenApi } from "./openapi/index.ts";
import { drainHttpServer } from "../src/net/drain.ts";
import { createPages } from "./pages.ts";
import { createDevtoolsPages } from "./devtools/pages.ts";
import { serveAsset } from "./http/assets.ts";
import { serveApiSchema } from "./http/api-schema.ts";
import { devtoolsAssets } from "./devtools/files.ts";
import type { Registry } from "prom-client";
import { createRegistry, serveMetrics } from "../src/observability/metrics.ts";
import type { Tracing } from "../src/observability/tracing.ts";
import { createRouterMetrics } from "./metrics.ts";
import { createRequestReports, type RequestReport } from "./request-report.ts";
import { ownedOperations } from "./graph/direct.ts";
import type { DirectGraphql } from "./graph/direct-graphql.ts";
import type { LocalSubgraph } from "../subgraphs/shared/contract.ts";
import { createSessionRoutes, sessionCookieOf } from "./admin-session.ts";
import type { Redis } from "ioredis";
import { loadTrustedDocuments } from "./plugins/usePersistedQueries.manifest.ts";
import { createPersistedQueryStore } from "./plugins/usePersistedQueries.store.ts";

/** Settings of the router. */
export interface RouterOptions {
  host: string;
  port: number;
  /** Subgraph name → `/graphql` URL. */
  subgraphUrls: Record<string, string>;
  /** Subgraphs running in this process, by name: reached in-process (router/transport/in-process.ts). */
  localSubgraphs?: Record<string, LocalSubgraph>;
  production: boolean;
  bodyLimit: number;
  /** Time limit of one `/graphql` HTTP request (ms); unset or 0: none (router/limits.ts). */
  requestTimeoutMs?: number;
  /** GRAPHQL_BATCH_MAX: most operations in one batched `POST /graphql` (router/graph/batch.ts); default 10. */
  batchMax?: number;
  /** GRAPHQL_DEFER: `@defer` delivered incrementally, on the gateway's default planner (ADR 0021); default off. */
  defer?: boolean;
  /** graphql-sse single connection mode: how long a reserved stream waits to be opened, in ms (default 30 s; router/graph/sse-single.ts). */
  streamReservationTtlMs?: number;
  /** Graceful shutdown: how long requests in flight may finish before their connections are cut (default 10 s). */
  drainTimeoutMs?: number;
  /** Proxies trusted to name the client in `X-Forwarded-For` (proxy-addr names or CIDRs); default none. */
  trustProxy?: string[];
  /** CORS_ORIGINS: the exact origins whose pages may call the router from a browser (router/http/cors.ts); default none. */
  corsOrigins?: string[];
  logger: Logger;
  /** The stack's metrics registry, served at `/metrics` (default: a registry of its own). */
  metrics?: Registry;
  /** METRICS_TOKEN: bearer token required on `/metrics`; unset: loopback clients only. */
  metricsToken?: string;
  /** Tracing hooks when OTEL_EXPORTER_OTLP_ENDPOINT is set (src/observability/tracing.ts). */
  tracing?: Tracing;
  /** SUBGRAPH_SECRET: signs the internal context of every request to a subgraph (README "Security model"). */
  subgraphSecret: string;
  /** Where provider results are read from, served at `/media/p/` (router/media.ts); unset: not served. */
  mediaSource?: MediaSource;
  /**
   * The feed of disabled keys (the `keys` topic of the process's pub/sub: src/events/key-topics.ts
   * `watchDisabledKeys`): the router ends a disabled key's graphql-ws connections and SSE streams
   * (router/revocation.ts). Unset: it never hears of one.
   */
  disabledKeys?: DisabledKeyFeed;
  /**
   * This process's own readiness checks (database, migrations, Redis, outbox dispatcher: bin/stack.ts),
   * run by `/readyz` besides the router's check of each subgraph. A router alone has only Redis, if any.
   */
  readinessChecks?: ReadinessCheck[];
  /**
   * Persisted queries and trusted documents (router/plugins/usePersistedQueries.ts): `documents`,
   * PERSISTED_DOCUMENTS (a manifest loaded besides the project's); `only`, PERSISTED_ONLY; `redis`
   * and `keyPrefix`, where registered documents are shared (unset: this process's memory).
   */
  persisted?: { documents?: string; only?: boolean; redis?: Redis; keyPrefix?: string };
}

/** A running router. */
export interface RouterHandle {
  url: string;
  server: http.Server;
  /** The switch of `/graphql`'s direct path (router/graph/direct-graphql.ts): on unless turned off here. */
  graphqlDirect: DirectGraphql;
  close(): Promise<void>;
}

/** What one request was served as: its route pattern (a bounded metrics label) and whether it is an event stream. */
interface Served {
  route: string;
  eventStream?: boolean;
}

/**
 * Starts the router.
 * @returns its base URL (`http://host:port`) and a close function
 */
export async function startRouter(options: RouterOptions): Promise<RouterHandle> {
  // Request id, client address, count id; client x-switchyard-* dropped (router/http/edge.ts).
  const edge = createEdge(options.trustProxy);
  const corsOrigins: ReadonlySet<string> = new Set(options.corsOrigins ?? []);
  const metrics = createRouterMetrics(options.metrics ?? createRegistry());
  // Operation, key id and RateLimit headers of each request, as the gateway learns them (request-report.ts).
  const reports = createRequestReports();
  const persisted = options.persisted ?? {};
  const mediaKey = mediaSigningKey(options.subgraphSecret);
  const graphqlDirect: DirectGraphql = { enabled: true };
  const gateway: Gateway = createGateway({
    persisted: {
      trusted: loadTrustedDocuments(persisted.documents),
      store: createPersistedQueryStore({ redis: persisted.redis, keyPrefix: persisted.keyPrefix }),
      persistedOnly: persisted.only ?? false,
      logger: options.logger,
    },
    keyCheck: useSubscriptionKeyCheck(() => gateway) as GatewayPlugin,
    subgraphUrls: options.subgraphUrls,
    localSubgraphs: options.localSubgraphs,
    production: options.production,
    requestTimeoutMs: options.requestTimeoutMs,
    subgraphSecret: options.subgraphSecret,
    defer: options.defer,
    // The order of every plugin is router/graph/gateway.ts `pipeline`.
    logger: options.logger,
    reports,
    metrics: metrics.gatewayPlugin,
    tracing: options.tracing?.gatewayPlugin,
    direct: { graphql: graphqlDirect, onDirect: metrics.observeDirect },
  });
  let schema: Promise<GraphQLSchema> | undefined;
  const shimDeps = { gateway, schema: () => (schema ??= Promise.resolve(gateway.getSchema())), bodyLimit: options.bodyLimit };
  // The generation shim's operations are the generation subgraph's alone: run there directly
  // when it is in this process (router/graph/direct.ts); with tracing, through the gateway's spans.
  const owned = ownedOperations({ ...shimDeps, localSubgraphs: options.tracing ? {} : options.localSubgraphs, reports, metrics });
  const shim = createGenerationShim({ ...shimDeps, owned });
  const cloud = createCloudShim(shimDeps);

  type Handler = (call: RestCall) => Promise<void> | void;
  /** What the router hands a route handler in find-my-way's `store` argument (see below). */
  type RouteContext = { requestId: string; query: URLSearchParams };
  const routes = FindMyWay({
    ignoreTrailingSlash: true,
    defaultRoute: (_req, res) => sendGenerationError(res, { code: "not_found" }),
  });
  const on = (method: "GET" | "POST" | "DELETE", path: string, handler: Handler) =>
    routes.on(method, path, (req, res, params, store: RouteContext) => handler({ req, res, params, requestId: store.requestId, query: store.query }), {
      route: path,
    });
  // find-my-way passes a store per route; we pass ours through lookup's context instead.
  on("POST", "/api/v1/video/generations", shim.submitVideo);
  on("POST", "/api/v1/images/generations", shim.submitImage);
  on("GET", "/api/v1/tasks/:task_id", shim.getTask);
  on("GET", "/api/v1/usage", shim.usage);
  on("GET", "/api/v1/openapi.json", serveGenerationOpenApi);
  // Liveness and readiness (src/observability/readiness.ts); /health reads the subgraph checks.
  const subgraphs = subgraphChecks(options.subgraphUrls, Object.keys(options.localSubgraphs ?? {}), options.logger);
  const readiness = createReadiness([...(options.readinessChecks ?? []), ...subgraphs]);
  const health = createHealth(gateway, readiness, Object.keys(options.subgraphUrls));
  on("GET", "/health", (call) => health(call.res, call.requestId));
  on("GET", "/livez", (call) => serveLiveness(call.res));
  on("GET", "/readyz", (call) => serveReadiness(call.res, readiness));
  const api = "/openapi/v1";
  on("GET", `${api}/vendors`, cloud.vendors);
  on("GET", `${api}/products`, cloud.products);
  on("GET", `${api}/products/:product_id`, cloud.product);
  on("POST", `${api}/orders`, cloud.createOrder);
  on("GET", `${api}/orders`, cloud.orders);
  on("GET", `${api}/orders/:order_id`, cloud.order);
  on("POST", `${api}/orders/:order_id/renew`, cloud.renewOrder);
  on("POST", `${api}/domains`, cloud.createDomain);
  on("GET", `${api}/domains/:domain/status`, cloud.domainStatus);
  on("POST", `${api}/domains/:domain/purge`, cloud.purge);
  on("GET", `${api}/usage/bandwidth`, cloud.bandwidth);
  on("GET", `${api}/usage/traffic`, cloud.traffic);
  on("GET", `${api}/resources`, cloud.resources);
  on("GET", `${api}/billing/balance`, cloud.balance);
  on("GET", `${api}/billing/transactions`, cloud.transactions);
  on("GET", `${api}/billing/statements/:statement_id`, cloud.statement);
  on("GET", `${api}/billing/statements/:statement_id/export`, cloud.statementExport);
  on("GET", `${api}/openapi.json`, serveCloudOpenApi);
  // The API schema clients generate code from, in every mode (router/http/api-schema.ts).
  on("GET", "/graphql/schema.graphql", serveApiSchema());
  // The web pages (docs/api/generation.md §4 "Pages"; router/pages.ts).
  const pages = createPages();
  on("GET", "/client", pages.client);
  on("GET", "/test", pages.test);
  on("GET", "/admin", pages.admin);
  // Console sign-in, the current session and sign-out (router/admin-session.ts).
  const sessions = createSessionRoutes({ gateway, clientIp: edge.clientIp, trustedProto: edge.trustedProto });
  on("POST", "/admin/session", sessions.signIn);
  on("GET", "/admin/session", sessions.current);
  on("DELETE", "/admin/session", sessions.signOut);
  // The landing page and the API reference (router/devtools/); GraphiQL is the gateway's.
  const devtools = createDevtoolsPages({ production: options.production, assetBase: pages.assets.base });
  const assets = [pages.assets, devtoolsAssets({ production: options.production })];
  on("GET", "/", devtools.home);
  on("GET", "/docs", devtools.docs);
  on("GET", "/assets/:version/:file", async (call) => {
    if (!(await serveAsset(call, assets))) {
      sendGenerationError(call.res, { code: "not_found" });
    }
  });
  on("GET", "/metrics", (call) =>
    serveMetrics(call.req, call.res, metrics.registry, {
      token: options.metricsToken,
      clientAddress: String(call.req.headers["x-switchyard-client-ip"] ?? ""),
    }),
  );

  // Subscriptions over SSE never finish on their own: a graceful shutdown ends them at once with
  // `complete` (as WebSockets get 1001) instead of waiting the whole drain deadline for them.
  const eventStreams = new Set<http.ServerResponse>();
  // A disabled key's connections end at once, on every router (router/revocation.ts).
  const revocations = createRevocations(options.disabledKeys, options.logger);
  const singleStreams = createSingleConnectionStreams(gateway, revocations, { reservationTtlMs: options.streamReservationTtlMs });
  const server = http.createServer((req, res) => {
    const started = process.hrtime.bigint();
    const { requestId, countId } = edge.stamp(req, res);
    // The console's session cookie and CSRF header, as credentials the subgraphs check
    // (docs/adr/0022-operators-and-audit.md); set after the edge dropped every client x-switchyard-*.
    const session = req.headers.cookie ? sessionCookieOf(req.headers.cookie) : null;
    if (session) req.headers["x-switchyard-session"] = session;
    const csrf = req.headers["x-csrf-token"];
    if (typeof csrf === "string" && csrf.length <= 64) req.headers["x-switchyard-csrf"] = csrf;
    const report = reports.open(countId, res);
    res.once("close", () => reports.close(countId));
    // The route pattern served (a bounded label: never the raw path), set by handle().
    const served: Served = { route: "other" };
    res.once("close", () =>
      metrics.observeHttp(served.route, req.method, res.headersSent ? res.statusCode : 499, Number(process.hrtime.bigint() - started) / 1e9),
    );
    res.on("finish", () => {
      const ms = Math.round(Number(process.hrtime.bigint() - started) / 1e6);
      const { operationName, keyId } = report;
      options.logger.info(
        {
          request_id: requestId,
          method: req.method,
          path: (req.url ?? "").split("?")[0],
          route: served.route,
          operation_name: operationName,
          key_id: keyId,
          status: res.statusCode,
          duration_ms: ms,
        },
        "request",
      );
    });
    // One CORS policy for every path; a preflight is answered here.
    if (applyCors(req, res, corsOrigins)) return;
    // An absolute-form target such as `http://[::1` is no URL: answer it, do not crash the process.
    const url = URL.parse(req.url ?? "/", "http://router");
    if (!url) {
      req.resume();
      if ((req.url ?? "").startsWith("/openapi/")) {
        return sendCloudError(res, requestId, { code: "invalid_request", message: "Malformed request URL" });
      }
      return sendGenerationError(res, { code: "invalid_request", message: "Malformed request URL" });
    }
    const run = () => handle(req, res, url, requestId, served, report);
    (options.tracing ? options.tracing.traceHttp(req, res, () => served.route, run) : run()).catch((error) => {
      options.logger.error({ request_id: requestId, err: error }, "request failed");
      if (res.headersSent) return void res.end();
      if (url.pathname.startsWith("/openapi/")) {
        sendCloudError(res, requestId, { code: "internal" });
      } else sendGenerationError(res, { code: "internal" });
    });
  });

  async function handle(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    url: URL,
    requestId: string,
    served: Served,
    report: RequestReport,
  ): Promise<void> {
    const path = url.pathname;
    if (path === "/graphql") {
      served.route = "/graphql";
      // GraphQL over HTTP: a POST body is JSON (415 otherwise, before it is read); GET runs
      // queries only (the gateway answers a mutation 405 with `Allow: POST`).
      if (req.method === "POST" && !isJsonContentType(req.headers["content-type"])) {
        discardRest(req);
        return sendGraphqlError(res, "unsupported_media_type");
      }
      // graphql-sse's single connection mode (a reservation PUT, or a request naming a stream token): router/graph/sse-single.ts.
      const single = singleStreams.claims(req, url);
      if (!single && String(req.headers.accept ?? "").includes("text/event-stream")) {
        served.eventStream = true;
        eventStreams.add(res);
        res.on("close", () => eventStreams.delete(res));
        onRequestKey(req, (keyId) => {
          const untrack = revocations.track(keyId, () => endEventStream(res));
          res.once("close", untrack);
        });
      }
      req.headers["x-switchyard-route"] = `${req.method} /graphql`;
      if (!(await limitGraphqlBody(req, res, options.bodyLimit))) return;
      // A signed request: the subgraphs check the signature over the method, path and body the
      // client sent, exactly as for the REST shims.
      const raw = (req as http.IncomingMessage & { body?: Buffer }).body;
      // (The digest only matters to a signed request: unsigned ones skip hashing the body.)
      Object.assign(req.headers, policyHeaders(req, req.headers["x-service-signature"] ? sha256Hex(raw ?? "") : ""));
      if (single) return singleStreams.handle(req, res, url);
      if (served.eventStream) return void (await gateway(req, res));
      await answerThroughFetch(gateway, req, res, url, raw, { reports, report, max: options.batchMax ?? DEFAULT_BATCH_MAX });
      return;
    }
    if (path.startsWith("/media/p/") && (req.method === "GET" || req.method === "HEAD") && options.mediaSource) {
      served.route = "/media/p/:file";
      return serveProviderMedia(req, res, path.slice("/media/p/".length), url.searchParams, options.mediaSource, mediaKey);
    }
    if (path.startsWith("/media/sim/") && req.method === "GET") {
      served.route = "/media/sim/:file";
      if (serveSimulatorMedia(path.slice("/media/sim/".length), res)) return;
    }
    const found = routes.find(req.method as "GET", path);
    if (!found) {
      const anyMethod = ["GET", "POST"].some((m) => routes.find(m as "GET", path));
      if (path.startsWith("/openapi/")) {
        return sendCloudError(
          res,
          requestId,
          anyMethod ? { code: "method_not_allowed", details: { method: req.method } } : { code: "not_found", message: "Path not found", details: { path } },
        );
      }
      return sendGenerationError(res, { code: anyMethod ? "method_not_allowed" : "not_found" });
    }
    served.route = (found.store as { route?: string } | null)?.route ?? "other";
    const context: RouteContext = { requestId, query: url.searchParams };
    await found.handler(req, res, found.params, context, found.searchParams);
  }

  server.keepAliveTimeout = 65_000;
  const websockets = attachWebSockets(server, gateway, options.logger, revocations, edge.clientIp, metrics.observeShared);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}`,
    server,
    graphqlDirect,
    /** Stops accepting, ends SSE streams with `complete`, closes WebSockets with 1001 and drains the requests in flight (docs/architecture.md §2 shutdown). */
    async close() {
      revocations.close();
      for (const stream of eventStreams) completeEventStream(stream);
      singleStreams.close();
      await Promise.all([drainHttpServer(server, options.drainTimeoutMs), websockets.close(options.drainTimeoutMs)]);
      await gateway[Symbol.asyncDispose]?.();
    },
  };
}
