/**
 * The composition root: wires config, database, domain services, subgraphs and router into
 * running processes (docs/architecture.md §2). `npm start` runs every role in one process; `switchyard start
 * <role>` runs one.
 */
import { createRequire } from "node:module";
import pino, { type DestinationStream, type Logger } from "pino";
import type { Config } from "../src/config.ts";
import { migrate, openDb, type Db } from "../src/db/index.ts";
import { createUrlGuard } from "../src/net/url-guard.ts";
import { createGenerationService, type GenerationService } from "../src/generation/tasks/index.ts";
import { startPoller, type Poller } from "../src/generation/poller.ts";
import { startRecovery } from "../src/generation/recovery.ts";
import { MODELS } from "../src/generation/catalog.ts";
import { createHttpUpstream } from "../src/generation/upstream/http.ts";
import { createSimulatorUpstream } from "../src/generation/upstream/simulator.ts";
import type { GenerationUpstream } from "../src/generation/upstream/types.ts";
import { startGenerationSubgraph } from "../subgraphs/generation/server.ts";
import { startRouter } from "../router/server.ts";
import type { DirectGraphql } from "../router/graph/direct-graphql.ts";
import type { LocalSubgraph } from "../subgraphs/shared/contract.ts";
import { createRateLimiter } from "../src/auth/rate-limit.ts";
import { createAdminGuard } from "../src/auth/admin.ts";
import { createOperatorAuth } from "../src/auth/operators/access.ts";
import { createNonceStore } from "../subgraphs/shared/hop-nonces.ts";
import type { PubSub } from "../src/events/pubsub.ts";
import { createPubSub } from "../src/events/redis-pubsub.ts";
import { watchDisabledKeys } from "../src/events/key-topics.ts";
import { startDispatcher } from "../src/events/dispatcher/index.ts";
import { outboxSignal } from "../src/events/outbox.ts";
import { createOrderService } from "../src/cloud/orders/index.ts";
import { seedDemoCatalog } from "../src/cloud/demo-seed.ts";
import { processStatementExports } from "../src/cloud/billing.ts";
import { checkUsageThresholds } from "../src/cloud/usage.ts";
import { startCloudSubgraph } from "../subgraphs/cloud/server.ts";
import { startLoop } from "../src/loop.ts";
import { openMediaStore } from "../src/generation/media/index.ts";
import type { Registry } from "prom-client";
import { startObservability } from "../src/observability/index.ts";
import { countUpstreamErrors } from "../src/generation/upstream/metrics.ts";
import { startChannels, type Channels } from "../src/generation/channels/index.ts";
import { watchChannels } from "../src/generation/channels/metrics.ts";
import { countTasks } from "../src/generation/metrics.ts";
import { listChannels } from "../src/generation/channels/store.ts";
import { watchOutbox } from "../src/events/metrics.ts";
import { watchLedger } from "../src/ledger/metrics.ts";
import { createReadiness, dispatcherCheck, redisCheck, type ReadinessCheck } from "../src/observability/readiness.ts";
import { databaseCheck, migrationsCheck } from "../src/db/readiness.ts";
import { assertPortsFree } from "./ports.ts";
import { ALL_ROLES, checkRoleSettings, type Role } from "./roles.ts";

/** A running stack. */
export interface Stack {
  /** Router base URL (when the router runs here). */
  url?: string;
  /** Generation subgraph `/graphql` URL (when it runs here). */
  generationUrl?: string;
  /** Cloud subgraph `/graphql` URL (when it runs here). */
  cloudUrl?: string;
  pubsub?: PubSub;
  db?: Db;
  service?: GenerationService;
  poller?: Poller;
  /** The upstream channels (generation role). */
  channels?: Channels;
  /** SUBGRAPH_SECRET in force (made for this start when unset in a single process). */
  subgraphSecret?: string;
  /** The metrics registry served at `/metrics` (router and subgraph ports). */
  metrics?: Registry;
  /** The switch of the router's direct `/graphql` path (router/graph/direct-graphql.ts), when the router runs here. */
  graphqlDirect?: DirectGraphql;
  logger: Logger;
  close(): Promise<void>;
}

/**
 * The log format in force: LOG_FORMAT when it is `json` or `pretty`; for `auto`, pretty when
 * stdout is a terminal and NODE_ENV is not `production` (a person reading), else JSON (a
 * collector reading).
 */
export function logFormatFor(config: Pick<Config, "logFormat" | "nodeEnv">, stdoutIsTty = Boolean(process.stdout.isTTY)): "json" | "pretty" {
  if (config.logFormat !== "auto") return config.logFormat;
  return stdoutIsTty && config.nodeEnv !== "production" ? "pretty" : "json";
}

/**
 * Builds the pino logger of the process: JSON lines, or human-readable lines through pino-pretty
 * ({@link logFormatFor}); keys, Authorization headers, cookies and console session and CSRF
 * headers are redacted either way.
 * @param destination where lines go (default stdout; the CLI writes its start banner through the
 *   same stream, so the two never interleave)
 */
export function createLogger(config: Config, destination?: DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    base: { service: "switchyard" },
    redact: [
      "req.headers.authorization",
      "*.authorization",
      "*.key",
      "*.cookie",
      '*["x-switchyard-session"]',
      '*["x-switchyard-new-session"]',
      '*["x-csrf-token"]',
      '*["x-switchyard-csrf"]',
    ],
  };
  if (logFormatFor(config) === "pretty") {
    // Loaded only when used: production (JSON) never loads the prettifier. In the same thread
    // (a stream, not a pino transport) so no line is lost when the process exits.
    const pretty = createRequire(import.meta.url)("pino-pretty") as typeof import("pino-pretty");
    return pino(
      options,
      pretty({ destination: destination ?? 1, sync: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname,service", singleLine: true }),
    );
  }
  return destination ? pino(options, destination) : pino(options);
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
 * @throws ConfigError when a port is taken (bin/ports.ts), the database does not answer or a setting
 *   cannot work; Error when a server fails to start
 */
export async function startStack(config: Config, roles: readonly Role[] = ALL_ROLES, logger = createLogger(config)): Promise<Stack> {
  const closers: (() => Promise<void>)[] = [];
  const stack: Stack = {
    logger,
    async close() {
      for (const close of closers.reverse()) await close().catch((err) => logger.error({ err }, "close failed"));
    },
  };
  try {
    // SUBGRAPH_SECRET and the subgraph URLs a router needs (bin/roles.ts).
    const subgraphSecret = checkRoleSettings(config, roles);
    stack.subgraphSecret = subgraphSecret;
    let routerUrl: string | undefined;
    const mediaBaseUrl = () => config.publicUrl ?? routerUrl ?? `http://${config.host}:${config.port}`;
    // Metrics and, with OTEL_EXPORTER_OTLP_ENDPOINT, tracing (src/observability/); closed last.
    const observability = await startObservability(config, roles);
    closers.push(() => observability.close());
    stack.metrics = observability.registry;
    // REDIS_URL: pub/sub and rate-limit counters in Redis, shared by every instance (connections open
    // on first use: a router-only process opens only the subscriber one, for key revocations);
    // closed after everything that uses them.
    const pubsub = createPubSub(config, logger);
    closers.push(() => pubsub.close());
    const rateLimiter = createRateLimiter({ redisUrl: config.redisUrl, redis: pubsub.redis, keyPrefix: config.redisKeyPrefix });
    // What `/readyz` checks in this process (src/observability/readiness.ts); a router adds its subgraphs.
    const readinessChecks: ReadinessCheck[] = [];
    // The nonces of signed subgraph requests, claimed once (in Redis, so a replay to another
    // process is refused too); one store for the subgraphs of this process.
    const nonces = createNonceStore({ redis: pubsub.redis, keyPrefix: config.redisKeyPrefix });
    // The admin token's check, wrong tokens throttled per client address (across processes with Redis).
    const adminGuard = createAdminGuard({
      adminToken: config.adminToken,
      failuresPerWindow: config.adminFailuresPerMinute,
      redis: pubsub.redis,
      keyPrefix: config.redisKeyPrefix,
      logger,
    });
    // Operators (console sessions, operator tokens) around the break-glass ADMIN_TOKEN; wrong
    // passwords and tokens throttled per account and address (docs/adr/0022-operators-and-audit.md).
    const operatorAuth = createOperatorAuth({
      guard: adminGuard,
      sessions: { idleSeconds: config.adminSessionIdleMinutes * 60, absoluteSeconds: config.adminSessionHours * 3600 },
      failuresPerWindow: config.adminFailuresPerMinute,
      redis: pubsub.redis,
      keyPrefix: config.redisKeyPrefix,
      logger,
    });
    let db: Db | undefined;
    if (roles.includes("generation") || roles.includes("cloud")) {
      const opened = openDb(config);
      db = opened;
      closers.push(() => opened.destroy());
      await migrate(opened);
      await pubsub.connect(); // a wrong REDIS_URL fails the start, not every later publish
      const dispatcher = startDispatcher({
        db: opened,
        logger,
        pubsub,
        retryBaseMs: config.webhookRetryBaseMs,
        maxAttempts: config.webhookMaxAttempts,
        requestTimeoutMs: config.webhookTimeoutMs,
        // At least twice a second: a row another process wrote (`keys disable` from the CLI: the
        // key's subscriptions must end within a second) is published without a wake-up signal.
        intervalMs: Math.min(config.taskPollIntervalMs, 500),
      });
      const wake = () => dispatcher.wake();
      outboxSignal.on("committed", wake);
      closers.push(async () => {
        outboxSignal.off("committed", wake);
        await dispatcher.stop();
      });
      Object.assign(stack, { db: opened, pubsub });
      readinessChecks.push(databaseCheck(opened), migrationsCheck(opened), dispatcherCheck(dispatcher));
      // The domain's figures, read from the database on scrape (docs/architecture.md §2 `/metrics`).
      watchOutbox(observability.registry, opened, logger);
      watchLedger(observability.registry, opened, logger);
    }
    if (pubsub.redis) readinessChecks.push(redisCheck(pubsub.redis));
    // The subgraph ports' /readyz: this process's checks, one cached report for both subgraphs.
    const subgraphObservability = { ...observability, readiness: createReadiness(readinessChecks) };
    // A port in use is one line naming its variable, not a server's error (bin/ports.ts).
    await assertPortsFree(config, roles);
    // A subgraph running here (and not pointed elsewhere) is reached in-process by the router;
    // its HTTP /graphql stays up for other routers and for /health.
    const localSubgraphs: Record<string, LocalSubgraph> = {};
    // The SSRF guard (DNS_SERVERS): reference URLs of generation requests, CDN origin hosts.
    const guard = createUrlGuard({ dnsServers: config.dnsServers });
    if (roles.includes("generation") && db) {
      // Channels (README "Channels"): the router stands where the single adapter was; the
      // implicit channel chn_default is GENERATION_UPSTREAM_URL or the simulator.
      const channelMetrics = watchChannels(observability.registry, db, logger);
      // Provider results customers could not fetch themselves, kept under DATA_DIR/media and
      // served by the router's signed /media/p/ URLs (ADR 0023).
      const media = await openMediaStore(config, mediaBaseUrl, subgraphSecret);
      const mediaSweep = startLoop("media retention", 3_600_000, () => media.sweep(config.mediaRetentionSeconds), logger);
      closers.push(() => mediaSweep.stop());
      const channels = await startChannels(
        db,
        logger,
        { ...config, results: (id) => media.forChannel(id) },
        createUpstream(config, mediaBaseUrl),
        channelMetrics,
      );
      closers.push(() => channels.stop());
      stack.channels = channels;
      const upstream = countUpstreamErrors(channels.upstream, observability.registry);
      // A live submission may try several channels, each within UPSTREAM_TIMEOUT_MS: the sweep
      // waits that long before it takes a pending task for interrupted.
      // (The channel rows alone: the admin view would also count every open task.)
      const attempts = Math.max(1, Math.min(config.channelMaxAttempts, (await listChannels(db)).length));
      const service = createGenerationService({
        db,
        upstream,
        checkUrl: (url) => guard.isPublicHttpsUrl(url),
        pollIntervalMs: config.taskPollIntervalMs,
        deadlineSeconds: config.taskDeadlineSeconds,
        counters: countTasks(observability.registry),
      });
      const subgraph = await startGenerationSubgraph({
        db,
        service,
        rateLimiter,
        pubsub: stack.pubsub!,
        logger,
        host: config.host,
        port: config.generationPort,
        bodyLimit: config.bodyLimitBytes,
        drainTimeoutMs: config.shutdownTimeoutMs,
        secret: subgraphSecret,
        nonces,
        observability: subgraphObservability,
        budget: config.requestBudget,
        admin: { auth: operatorAuth, channels },
      });
      closers.push(() => subgraph.close());
      const poller = startPoller({
        db,
        service,
        upstream,
        logger,
        intervalMs: config.taskPollIntervalMs,
        batchSize: config.taskPollBatch,
        concurrency: config.taskPollConcurrency,
        // A poller that died holding tasks frees them after about one upstream call: well
        // within any task's deadline, so no task is failed for a dead poller's silence.
        leaseMs: config.upstreamTimeoutMs + config.recoveryMarginMs,
      });
      closers.push(() => poller.stop());
      // Crash recovery and deadlines (src/generation/recovery.ts): a sweep now, then at least
      // every minute and twice per shortest task deadline.
      const shortestDeadlineMs = 1000 * (config.taskDeadlineSeconds ?? Math.min(...MODELS.map((m) => m.deadlineSeconds)));
      const recovery = startRecovery({
        db,
        service,
        upstream,
        logger,
        upstreamTimeoutMs: config.upstreamTimeoutMs * attempts,
        marginMs: config.recoveryMarginMs,
        pollIntervalMs: config.taskPollIntervalMs,
        intervalMs: Math.min(60_000, Math.max(100, shortestDeadlineMs / 2)),
        concurrency: config.taskPollConcurrency,
      });
      closers.push(() => recovery.stop());
      Object.assign(stack, { service, poller, generationUrl: subgraph.url });
      if (!config.generationUrl && config.subgraphTransport === "auto") localSubgraphs.generation = subgraph.local;
    }
    if (roles.includes("cloud") && db) {
      const cloudDb = db;
      // The demo catalog only where asked (config.seedDemo): a production database starts empty.
      if (config.seedDemo) await seedDemoCatalog(cloudDb);
      const orders = createOrderService({ db: cloudDb, provisionDelayMs: config.provisionDelayMs });
      const subgraph = await startCloudSubgraph({
        db: cloudDb,
        services: { orders, stepMs: config.provisionDelayMs, pubsub: stack.pubsub!, checkOriginHost: (host) => guard.checkHost(host) },
        rateLimiter,
        logger,
        host: config.host,
        port: config.cloudPort,
        bodyLimit: config.bodyLimitBytes,
        admin: operatorAuth,
        drainTimeoutMs: config.shutdownTimeoutMs,
        secret: subgraphSecret,
        nonces,
        observability: subgraphObservability,
        budget: config.requestBudget,
      });
      closers.push(() => subgraph.close());
      const tick = Math.max(20, Math.min(1000, Math.floor(config.provisionDelayMs / 4) || 20));
      for (const loop of [
        startLoop("provisioning", tick, () => orders.provisionDue(), logger),
        startLoop("usage-thresholds", 5_000, () => checkUsageThresholds(cloudDb), logger),
        startLoop("statement-exports", tick, () => processStatementExports(cloudDb, { delayMs: config.provisionDelayMs }), logger),
      ]) {
        closers.push(() => loop.stop());
      }
      stack.cloudUrl = subgraph.url;
      if (!config.cloudUrl && config.subgraphTransport === "auto") localSubgraphs.cloud = subgraph.local;
    }
    if (roles.includes("router")) {
      // Both set: a URL, or a subgraph started above (checkRoleSettings).
      const generationUrl = (config.generationUrl ?? stack.generationUrl)!;
      const cloudUrl = (config.cloudUrl ?? stack.cloudUrl)!;
      const router = await startRouter({
        host: config.host,
        port: config.port,
        subgraphUrls: { generation: generationUrl, cloud: cloudUrl },
        localSubgraphs,
        production: config.nodeEnv === "production",
        bodyLimit: config.bodyLimitBytes,
        batchMax: config.graphqlBatchMax,
        defer: config.graphqlDefer,
        requestTimeoutMs: config.requestTimeoutMs,
        drainTimeoutMs: config.shutdownTimeoutMs,
        trustProxy: config.trustProxy,
        corsOrigins: config.corsOrigins,
        logger,
        metrics: observability.registry,
        metricsToken: config.metricsToken,
        tracing: observability.tracing,
        subgraphSecret,
        mediaSource: (await openMediaStore(config, mediaBaseUrl, subgraphSecret)).source,
        disabledKeys: (listener) => watchDisabledKeys(pubsub, listener),
        readinessChecks,
        persisted: { documents: config.persistedDocuments, only: config.persistedOnly, redis: pubsub.redis, keyPrefix: config.redisKeyPrefix },
      });
      closers.push(() => router.close());
      routerUrl = router.url;
      stack.url = router.url;
      stack.graphqlDirect = router.graphqlDirect;
    }
  } catch (error) {
    await stack.close();
    throw error;
  }
  return stack;
}
