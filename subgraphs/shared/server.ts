/**
 * One way to run a subgraph (DESIGN §1, §7): Apollo Server + @apollo/subgraph on node:http,
 * serving `/graphql`. Each subgraph brings its SDL, resolvers, context and plugins.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ApolloServer, type ApolloServerPlugin, type BaseContext } from "@apollo/server";
import { ApolloServerPluginInlineTraceDisabled } from "@apollo/server/plugin/disabled";
import { buildSubgraphSchema } from "@apollo/subgraph";
import { WebSocketServer } from "ws";
import { useServer } from "graphql-ws/use/ws";
import type { DocumentNode } from "graphql";
import type { Logger } from "pino";
import { apolloHandler } from "./apollo-http.ts";
import { formatError } from "./errors.ts";
import type { RequestLike } from "./auth.ts";
import { closeWebSockets, drainHttpServer } from "../../src/net/drain.ts";

/** graphql-ws connection params as a header map: lower-cased names, string values. */
export function paramsAsHeaders(params: Record<string, unknown> | undefined | null): RequestLike {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(params ?? {})) if (typeof value === "string") headers[name.toLowerCase()] = value;
  return { headers };
}

/** A running subgraph. */
export interface SubgraphHandle {
  /** Its `/graphql` URL. */
  url: string;
  close(): Promise<void>;
}

/** What a subgraph is made of. */
export interface SubgraphOptions<TContext extends BaseContext> {
  name: string;
  typeDefs: DocumentNode;
  /** Resolver map (typed loosely: resolvers are checked against the SDL at start-up). */
  resolvers: Record<string, unknown>;
  /** Builds the context of an HTTP request or of a graphql-ws operation (connection params as lower-cased headers). */
  context: (req: RequestLike) => Promise<TContext>;
  /**
   * Accepts or refuses a graphql-ws connection from its params (lower-cased); refusing closes
   * it with 4403 Forbidden.
   */
  onConnect?: (req: RequestLike) => Promise<boolean>;
  plugins?: ApolloServerPlugin<TContext>[];
  logger: Logger;
  host: string;
  /** 0 = any free port. */
  port: number;
  /** Largest request body in bytes. */
  bodyLimit: number;
  /** Graceful shutdown: how long requests in flight may finish before their connections are cut (default 10 s). */
  drainTimeoutMs?: number;
}

/**
 * Starts a subgraph.
 * @returns its URL and a close function
 * @throws Error when the port is taken
 */
export async function startSubgraph<TContext extends BaseContext>(options: SubgraphOptions<TContext>): Promise<SubgraphHandle> {
  const schema = buildSubgraphSchema([{ typeDefs: options.typeDefs, resolvers: options.resolvers as any }]);
  const server = new ApolloServer<TContext>({
    schema,
    formatError: formatError(options.logger),
    includeStacktraceInErrorResponses: false,
    // Inline tracing only feeds Apollo Studio; it costs every request.
    plugins: [...(options.plugins ?? []), ApolloServerPluginInlineTraceDisabled()],
    // The router is the public face and applies CSRF prevention; subgraphs are internal.
    csrfPrevention: false,
    // The process's own shutdown drains and stops the server (bin/cli.ts); Apollo stopping itself
    // on SIGTERM would cut requests in flight and re-raise the signal.
    stopOnTerminationSignals: false,
  });
  await server.start();
  const handle = apolloHandler(server, options.context, options.bodyLimit);
  const httpServer = http.createServer((req, res) => {
    if ((req.url ?? "/").split("?")[0] === "/graphql") {
      handle(req, res).catch((error) => {
        options.logger.error({ err: error, subgraph: options.name }, "subgraph request failed");
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ errors: [{ message: "Internal server error" }] }));
      });
      return;
    }
    res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ errors: [{ message: "Not found" }] }));
  });
  httpServer.keepAliveTimeout = 65_000;
  // Subscriptions (DESIGN §6): graphql-ws on the same path, authorized at connection time.
  const wsServer = new WebSocketServer({ server: httpServer, path: "/graphql" });
  const wsCleanup = useServer<Record<string, unknown>>(
    {
      schema,
      onConnect: async (ctx) => (options.onConnect ? options.onConnect(paramsAsHeaders(ctx.connectionParams)) : true),
      context: (ctx) => options.context(paramsAsHeaders(ctx.connectionParams)),
      // The same error contract as over HTTP: extensions.code and extensions.http.status.
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors?.length ? { ...result, errors: result.errors.map((e) => formatError(options.logger)(e.toJSON(), e) as any) } : result,
      onError: (_ctx, _id, _payload, errors) => errors.map((e) => formatError(options.logger)(e.toJSON(), e) as any),
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
    /** Stops accepting, closes subscriptions with 1001 and drains the requests in flight. */
    async close() {
      await Promise.all([drainHttpServer(httpServer, options.drainTimeoutMs), closeWebSockets(wsServer, () => wsCleanup.dispose(), options.drainTimeoutMs)]);
      await server.stop();
    },
  };
}
