/**
 * The composition root: wires config, database, domain services, subgraphs and router into
 * running processes (DESIGN §2). `npm start` runs every role in one process; `switchyard start
 * <role>` runs one.
 */
import pino, { type Logger } from "pino";
import type { Config } from "../src/config.ts";
import { migrate, openDb, type Db } from "../src/db/index.ts";
import { createUrlGuard } from "../src/net/url-guard.ts";
import { createGenerationService, type GenerationService } from "../src/generation/tasks.ts";
import { startPoller, type Poller } from "../src/generation/poller.ts";
import { createHttpUpstream } from "../src/generation/upstream/http.ts";
import { createSimulatorUpstream } from "../src/generation/upstream/simulator.ts";
import type { GenerationUpstream } from "../src/generation/upstream/types.ts";
import { startGenerationSubgraph } from "../subgraphs/generation/server.ts";
import { startRouter } from "../router/server.ts";

/** A process role. */
export type Role = "router" | "generation";

/** A running stack. */
export interface Stack {
  /** Router base URL (when the router runs here). */
  url?: string;
  /** Generation subgraph `/graphql` URL (when it runs here). */
  generationUrl?: string;
  db?: Db;
  service?: GenerationService;
  poller?: Poller;
  logger: Logger;
  close(): Promise<void>;
}

/** Builds the pino logger of the process: JSON lines on stdout. */
export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, base: { service: "switchyard" }, redact: ["req.headers.authorization", "*.authorization", "*.key"] });
}

/** Picks the upstream adapter: the HTTP adapter when GENERATION_UPSTREAM_URL is set, else the simulator. */
export function createUpstream(config: Config, mediaBaseUrl: () => string): GenerationUpstream {
  if (config.upstreamUrl) {
    return createHttpUpstream({ baseUrl: config.upstreamUrl, apiKey: config.upstreamKey, timeoutMs: config.upstreamTimeoutMs });
  }
  return createSimulatorUpstream({ stepMs: config.simulatorStepMs, mediaBaseUrl });
}

/**
 * Starts the given roles.
 * @param config validated settings
 * @param roles which parts run in this process (default: all)
 * @returns the running stack; `close()` stops everything it started, in reverse order
 * @throws Error when a port is taken or the database cannot be opened
 */
export async function startStack(config: Config, roles: readonly Role[] = ["generation", "router"], logger = createLogger(config)): Promise<Stack> {
  const closers: (() => Promise<void>)[] = [];
  const stack: Stack = {
    logger,
    async close() {
      for (const close of closers.reverse()) await close().catch((err) => logger.error({ err }, "close failed"));
    },
  };
  try {
    let routerUrl: string | undefined;
    const mediaBaseUrl = () => config.publicUrl ?? routerUrl ?? `http://${config.host}:${config.port}`;
    if (roles.includes("generation")) {
      const db = openDb(config);
      closers.push(() => db.destroy());
      await migrate(db);
      const upstream = createUpstream(config, mediaBaseUrl);
      const guard = createUrlGuard({ dnsServers: config.dnsServers });
      const service = createGenerationService({ db, upstream, checkUrl: (url) => guard.isPublicHttpsUrl(url), pollIntervalMs: config.taskPollIntervalMs });
      const subgraph = await startGenerationSubgraph({ db, service, logger, host: config.host, port: config.generationPort, bodyLimit: config.bodyLimitBytes });
      closers.push(() => subgraph.close());
      const poller = startPoller({
        db,
        service,
        upstream,
        logger,
        intervalMs: config.taskPollIntervalMs,
        batchSize: config.taskPollBatch,
        concurrency: config.taskPollConcurrency,
      });
      closers.push(() => poller.stop());
      Object.assign(stack, { db, service, poller, generationUrl: subgraph.url });
    }
    if (roles.includes("router")) {
      const generationUrl = config.generationUrl ?? stack.generationUrl;
      if (!generationUrl) throw new Error("GENERATION_URL is required when the generation subgraph runs elsewhere");
      const router = await startRouter({
        host: config.host,
        port: config.port,
        subgraphUrls: { generation: generationUrl },
        production: config.nodeEnv === "production",
        bodyLimit: config.bodyLimitBytes,
        logger,
      });
      closers.push(() => router.close());
      routerUrl = router.url;
      stack.url = router.url;
    }
  } catch (error) {
    await stack.close();
    throw error;
  }
  return stack;
}
