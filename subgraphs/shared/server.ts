/**
 * One way to run a subgraph (docs/architecture.md §1, §7): Apollo Server + @apollo/subgraph on node:http,
 * serving `/graphql` (and, unauthenticated, `/health`, `/livez`, `/readyz`, and `/metrics` behind its
 * own check). Each subgraph brings its SDL, resolvers, context and plugins.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ApolloServer, type ApolloServerPlugin, type BaseContext } from "@apollo/server";
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginInlineTraceDisabled } from "@apollo/server/plugin/disabled";
import { buildSubgraphSchema } from "@apollo/subgraph";
import type { GraphQLResolverMap } from "@apollo/subgraph/dist/schema-helper/resolverMap.js";
import { WebSocketServer } from "ws";
import { useServer } from "graphql-ws/use/ws";
import {
  GraphQLError,
  isUnionType,
  subscribe,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
} from "graphql";
import type { Logger } from "pino";
import { apolloHandler } from "./apollo-http.ts";
import { formatError } from "./errors.ts";
import type { RequestLike } from "./auth.ts";
import { closeWebSockets, drainHttpServer } from "../../src/net/drain.ts";
import type { Tracing } from "../../src/observability/tracing.ts";
import { AppError, type ErrorCode } from "../../src/errors.ts";
import { createInternalVerifier, InternalContextError, type InternalContext, type SignedParams } from "./internal-context.ts";
import type { NonceStore } from "./hop-nonces.ts";
import { callerReportPlugin, reportingContext, withCallerReport } from "./caller-report.ts";
import { mapStream, type LocalOperation, type LocalSubgraph } from "./contract.ts";
import { compiledExecutor } from "./compiled.ts";
import { LRUCache } from "lru-cache";
import { createReadiness, serveLiveness, serveReadiness, type Readiness } from "../../src/observability/readiness.ts";

/** A running subgraph. */
export interface SubgraphHandle {
  /** Its `/graphql` URL. */
  url: string;
  /** The same subgraph for a router in this process. */
  local: LocalSubgraph;
  close(): Promise<void>;
}

/** How many validated operation texts a subgraph remembers (plans are few; a bound all the same). */
const VALIDATED_TEXTS = 500;

/** The registry codes (src/errors.ts) of GraphQL errors raised before any resolver ran. */
type RequestErrorCode = Extract<ErrorCode, "graphql_validation_failed" | "bad_user_input">;

/**
 * Gives a GraphQL error raised before any resolver ran its registry code (so the shared
 * formatError answers 400, not `internal`): validation failures and variable coercion.
 */
function asRequestError(error: GraphQLError, code: RequestErrorCode): GraphQLError {
  if (error.path || error.extensions?.code) return error;
  return Object.defineProperty(error, "extensions", { value: { ...error.extensions, code } });
}

/**
 * Builds the in-process entry of a started subgraph.
 * @param format formats one error as over HTTP (shared/errors.ts)
 * @param onResponse the subgraph's response hook (see {@link SubgraphOptions.onResponse})
 * @param viaApollo when set, queries and mutations run through Apollo Server (tracing is on)
 */
function localSubgraph<TContext extends BaseContext>(
  schema: GraphQLSchema,
  context: (req: RequestLike) => Promise<TContext>,
  format: (error: GraphQLError) => GraphQLFormattedError,
  onResponse: SubgraphOptions<TContext>["onResponse"],
  viaApollo: ApolloServer<TContext> | null,
): LocalSubgraph {
  const formatResult = (result: ExecutionResult, code: RequestErrorCode = "bad_user_input"): FormattedExecutionResult =>
    (result.errors?.length ? { ...result, errors: result.errors.map((e) => format(asRequestError(e, code))) } : result) as FormattedExecutionResult;
  // Validation depends only on the document: once per DocumentNode the gateway hands us (the
  // Rust planner's, one per planned fetch), else once per text (the default planner's, new each request).
  const validated = new WeakMap<DocumentNode, readonly GraphQLError[]>();
  const validatedText = new LRUCache<string, readonly GraphQLError[]>({ max: VALIDATED_TEXTS });
  const execute = compiledExecutor(schema);
  const validationErrors = (operation: LocalOperation) => {
    let errors = validated.get(operation.document);
    if (!errors) {
      errors = validatedText.get(operation.query) ?? validate(schema, operation.document);
      validatedText.set(operation.query, errors);
      validated.set(operation.document, errors);
    }
    return errors;
  };
  return {
    async execute(operation) {
      if (viaApollo) {
        const response = await viaApollo.executeOperation(
          { query: operation.query, variables: operation.variables, operationName: operation.operationName },
          { contextValue: await context({ headers: operation.headers, requestScope: operation.requestScope, operationType: operation.operationType }) },
        );
        if (response.body.kind !== "single") throw new Error("incremental delivery is not supported in-process");
        return response.body.singleResult as FormattedExecutionResult;
      }
      const invalid = validationErrors(operation);
      if (invalid.length) return formatResult({ errors: invalid }, "graphql_validation_failed");
      const contextValue = await context({ headers: operation.headers, requestScope: operation.requestScope, operationType: operation.operationType });
      const result = formatResult(
        await execute(
          { schema, document: operation.document, variableValues: operation.variables, operationName: operation.operationName, contextValue },
          operation.query,
        ),
      );
      await onResponse?.(contextValue, result.errors);
      return withCallerReport(result, contextValue);
    },
    async subscribe(operation) {
      // What graphql-ws does before subscribing; authentication is the resolvers' (ctx.caller()).
      const invalid = validationErrors(operation);
      if (invalid.length) return formatResult({ errors: invalid }, "graphql_validation_failed");
      const contextValue = await context({ headers: operation.headers, requestScope: operation.requestScope, operationType: operation.operationType });
      const result = await subscribe({
        schema,
        document: operation.document,
        variableValues: operation.variables,
        operationName: operation.operationName,
        contextValue,
      });
      return Symbol.asyncIterator in result ? mapStream(result, (r) => formatResult(r)) : formatResult(result);
    },
  };
}

/**
 * Makes `_entities` refuse a representation whose `__typename` is not an entity of this subgraph
 * with 400 `invalid_request` (@apollo/subgraph throws a plain Error, which would be a 500).
 * @returns the same schema, its `_entities` resolver wrapped
 */
function refusingUnknownEntityTypes(schema: GraphQLSchema): GraphQLSchema {
  const field = schema.getQueryType()?.getFields()._entities;
  if (!field?.resolve) return schema;
  const resolve = field.resolve;
  // @apollo/subgraph lists this subgraph's entities in the union `_Entity`.
  const union = schema.getType("_Entity");
  const entities = new Set(isUnionType(union) ? union.getTypes().map((type) => type.name) : []);
  field.resolve = (source, args, context, info) => {
    for (const representation of (args.representations ?? []) as { __typename?: unknown }[]) {
      if (typeof representation?.__typename !== "string" || !entities.has(representation.__typename)) {
        throw new AppError("invalid_request", `Unknown entity type: ${String(representation?.__typename).slice(0, 100)}`);
      }
    }
    return resolve(source, args, context, info);
  };
  return schema;
}

/** The response hook as an Apollo Server plugin (requests over HTTP, and in-process with tracing on). */
function responseHookPlugin<TContext extends BaseContext>(onResponse: NonNullable<SubgraphOptions<TContext>["onResponse"]>): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ contextValue, response }) {
          await onResponse(contextValue, response.body.kind === "single" ? response.body.singleResult.errors : undefined);
        },
      };
    },
  };
}

/** What a subgraph is made of. */
export interface SubgraphOptions<TContext extends BaseContext> {
  name: string;
  typeDefs: DocumentNode;
  /** Resolver map (typed loosely: resolvers are checked against the SDL at start-up). */
  resolvers: Record<string, unknown>;
  /** Builds the context of an HTTP request or of a graphql-ws operation (connection params as lower-cased headers). */
  context: (req: RequestLike) => Promise<TContext>;
  /** SUBGRAPH_SECRET: the key of the router's signature, required on every request (internal-context.ts). */
  secret: string;
  /** Where the nonces of signed requests are claimed, once each (hop-nonces.ts; one store per process). */
  nonces: NonceStore;
  /**
   * Runs after each query or mutation, before its answer leaves (over HTTP and in-process
   * alike): for example the generation subgraph's request log.
   * @param errors the formatted errors of the result, if any
   */
  onResponse?: (context: TContext, errors: readonly GraphQLFormattedError[] | undefined) => Promise<void>;
  logger: Logger;
  host: string;
  /** 0 = any free port. */
  port: number;
  /** Largest request body in bytes. */
  bodyLimit: number;
  /** Graceful shutdown: how long requests in flight may finish before their connections are cut (default 10 s). */
  drainTimeoutMs?: number;
  /** Tracing hooks and the `GET /metrics` handler of this process (bin/stack.ts). */
  observability?: SubgraphObservability;
}

/** What a subgraph serves for observability (src/observability/). */
export interface SubgraphObservability {
  tracing?: Tracing;
  /** Answers `GET /metrics` on the subgraph's port. */
  metrics?: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>;
  /** The process's readiness (database, migrations, Redis, outbox dispatcher), served at `GET /readyz`; unset: no checks. */
  readiness?: Readiness;
}

/**
 * Starts a subgraph.
 * @returns its URL and a close function
 * @throws Error when the port is taken
 */
export async function startSubgraph<TContext extends BaseContext>(options: SubgraphOptions<TContext>): Promise<SubgraphHandle> {
  const { tracing, metrics } = options.observability ?? {};
  const readiness = options.observability?.readiness ?? createReadiness([]);
  // Every context remembers its request, whose caller report goes back to the router (caller-report.ts).
  const context = reportingContext(options.context);
  const schema = refusingUnknownEntityTypes(
    buildSubgraphSchema([{ typeDefs: options.typeDefs, resolvers: options.resolvers as GraphQLResolverMap<TContext> }]),
  );
  const verifier = createInternalVerifier({ secret: options.secret, audience: options.name, nonces: options.nonces, logger: options.logger });
  const server = new ApolloServer<TContext>({
    schema,
    formatError: formatError(options.logger),
    includeStacktraceInErrorResponses: false,
    // Inline tracing only feeds Apollo Studio; it costs every request.
    // Cache hints feed HTTP caches we do not use; computing them wraps every resolver.
    plugins: [
      ...(options.onResponse ? [responseHookPlugin(options.onResponse)] : []),
      ...(tracing ? [tracing.apolloPlugin] : []),
      callerReportPlugin as ApolloServerPlugin<TContext>,
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginCacheControlDisabled(),
    ],
    // The router is the public face and applies CSRF prevention; subgraphs are internal.
    csrfPrevention: false,
    // The process's own shutdown drains and stops the server (bin/cli.ts); Apollo stopping itself
    // on SIGTERM would cut requests in flight and re-raise the signal.
    stopOnTerminationSignals: false,
  });
  await server.start();
  const handle = apolloHandler(server, context, options.bodyLimit, verifier);
  const httpServer = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/graphql") {
      (tracing
        ? tracing.traceHttp(
            req,
            res,
            () => "/graphql",
            () => handle(req, res),
          )
        : handle(req, res)
      ).catch((error) => {
        options.logger.error({ err: error, subgraph: options.name }, "subgraph request failed");
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ errors: [{ message: "Internal server error" }] }));
      });
      return;
    }
    if (path === "/health" && req.method === "GET") {
      // Readiness for the router's /health and load balancers: says nothing but that it answers.
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
      return;
    }
    if (path === "/livez" && req.method === "GET") return serveLiveness(res);
    if (path === "/readyz" && req.method === "GET") {
      serveReadiness(res, readiness).catch((error) => {
        options.logger.error({ err: error, subgraph: options.name }, "readiness failed");
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end('{"status":"unavailable"}');
      });
      return;
    }
    if (path === "/metrics" && req.method === "GET" && metrics) {
      metrics(req, res).catch((error) => {
        options.logger.error({ err: error, subgraph: options.name }, "metrics failed");
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end("Internal server error\n");
      });
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ message: "Not found" }] }));
  });
  httpServer.keepAliveTimeout = 65_000;
  // Subscriptions (docs/architecture.md §6): graphql-ws on the same path. Each operation is authorized on its
  // own, by the router's signature (its nonce claimed once, like an HTTP request's) and the key in
  // its internal context: a connection by itself can do nothing, so `connection_init` carries nothing
  // to sign (the gateway's graphql-ws transport shares one connection per subgraph among its callers).
  const wsServer = new WebSocketServer({ server: httpServer, path: "/graphql" });
  const verified = new WeakMap<object, Map<string, InternalContext>>();
  const wsCleanup = useServer<Record<string, unknown>>(
    {
      schema,
      onSubscribe: async (ctx, id, payload) => {
        try {
          const internal = await verifier.verify(payload as SignedParams);
          let byId = verified.get(ctx);
          if (!byId) {
            byId = new Map();
            verified.set(ctx, byId);
          }
          byId.set(id, internal);
        } catch (error) {
          if (!(error instanceof InternalContextError)) throw error;
          return [new GraphQLError(error.message, { originalError: new AppError(error.code, error.message) })];
        }
      },
      onComplete: (ctx, id) => void verified.get(ctx)?.delete(id),
      context: (ctx, id) => context({ headers: verified.get(ctx)?.get(id)?.headers ?? {} }),
      // The same error contract as over HTTP: extensions.code and extensions.http.status.
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors?.length ? { ...result, errors: result.errors.map((e) => formatError(options.logger)(e.toJSON(), e)) } : result,
      // (An error of our own, such as a refused signature, keeps its registry code and status.)
      onError: (_ctx, _id, _payload, errors) =>
        errors.map((e) => formatError(options.logger)(e.toJSON(), e.originalError instanceof AppError ? e.originalError : e)),
    },
    wsServer,
  );
  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(options.port, options.host, resolve);
  });
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}/graphql`,
    local: localSubgraph(schema, context, (e) => formatError(options.logger)(e.toJSON(), e), options.onResponse, tracing ? server : null),
    /** Stops accepting, closes subscriptions with 1001 and drains the requests in flight. */
    async close() {
      await Promise.all([drainHttpServer(httpServer, options.drainTimeoutMs), closeWebSockets(wsServer, () => wsCleanup.dispose(), options.drainTimeoutMs)]);
      await server.stop();
    },
  };
}
