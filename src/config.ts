/**
 * Every setting, typed and validated once (docs/architecture.md §2). Read from an environment object so tests
 * and the CLI can pass their own.
 *
 * Longer than 400 lines on purpose: it is one table, the settings schema with the typed Config that
 * mirrors it field by field and the one conversion between them, and reads best whole.
 */
import path from "node:path";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { carriesCredentials } from "./net/url-guard.ts";
import { parseInteger } from "./integers.ts";
import { ConfigError } from "./errors.ts";

// ConfigError lives in the error registry's module, which the router may import (docs/architecture.md §1.2).
export { ConfigError };

/** Shortest SUBGRAPH_SECRET accepted (characters): 32 random hex digits are 128 bits. */
export const SUBGRAPH_SECRET_MIN_LENGTH = 32;

/**
 * The SUBGRAPH_SECRET this process signs or verifies subgraph requests with.
 * @param config the settings
 * @param sharedProcess whether the router and both subgraphs run in this process and reach each
 *   other only here (`npm start`): then an unset secret is made for this start
 * @returns the secret
 * @throws ConfigError when it is unset and another process must share it, or shorter than
 *   {@link SUBGRAPH_SECRET_MIN_LENGTH}
 */
export function subgraphSecretFor(config: Pick<Config, "subgraphSecret">, sharedProcess: boolean): string {
  const secret = config.subgraphSecret;
  if (secret !== undefined && secret.length < SUBGRAPH_SECRET_MIN_LENGTH) {
    throw new ConfigError(`SUBGRAPH_SECRET must be at least ${SUBGRAPH_SECRET_MIN_LENGTH} characters (for example: openssl rand -hex 32)`);
  }
  if (secret) return secret;
  if (sharedProcess) return randomBytes(32).toString("hex");
  throw new ConfigError(
    "SUBGRAPH_SECRET is required when the router and the subgraphs run as separate processes: set the same random value in every process (for example: openssl rand -hex 32)",
  );
}

/**
 * A whole number from `min` (to `max`), read from text with the one strict integer reader
 * (src/integers.ts: `1e3`, `0x10`, ` 5` are refused); unset or empty is the setting's default
 * (`.default(n)`) or undefined (`.optional()`). The message names no value: some settings are secret.
 */
const integer = (min: number, max?: number, message = `must be a whole number ${max === undefined ? `of at least ${min}` : `from ${min} to ${max}`}`) => {
  const read = (text: string | undefined, ctx: z.RefinementCtx) => {
    if (text === undefined || text === "") return undefined;
    const value = parseInteger(text, { min, max: max ?? Number.MAX_SAFE_INTEGER });
    if (value === null) ctx.addIssue({ code: z.ZodIssueCode.custom, message });
    return value ?? undefined;
  };
  return {
    default: (fallback: number) =>
      z
        .string()
        .optional()
        .transform((text, ctx) => read(text, ctx) ?? fallback),
    optional: () => z.string().optional().transform(read),
  };
};
const port = (fallback: number) => integer(0, 65535, "must be a TCP port: a whole number from 0 to 65535 (0: any free port)").default(fallback);
const millis = (fallback: number) => integer(0).default(fallback);
/** A yes/no setting: 1 or true, 0 or false; unset or empty reads as undefined. */
const flag = (message = "must be 1 or 0 (true or false), or unset") =>
  z
    .enum(["", "0", "1", "false", "true"], { errorMap: () => ({ message }) })
    .optional()
    .transform((v) => (v === "1" || v === "true" ? true : v === "0" || v === "false" ? false : undefined));

/** pino's levels, most severe first; `silent` logs nothing. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/**
 * DATABASE_URL: unset or empty for SQLite, else a PostgreSQL URL. Any other scheme is refused
 * rather than silently falling back to SQLite. The message repeats only the scheme: the URL may
 * hold a password.
 */
const databaseUrl = z
  .string()
  .optional()
  .superRefine((value, ctx) => {
    if (!value || /^postgres(ql)?:\/\//i.test(value)) return;
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value)?.[1];
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message: `must be a postgres:// or postgresql:// URL${scheme ? `, not ${scheme}://` : ""} (unset it to use SQLite in DATA_DIR)`,
    });
  });
const optionalUrl = z
  .string()
  .url()
  .optional()
  .or(z.literal("").transform(() => undefined));

/**
 * CORS_ORIGINS: comma-separated exact origins (`https://app.example.com`, `http://localhost:5173`),
 * each as a browser sends it in `Origin`: scheme, host and port, no path, no `*`. Read into a list.
 */
const corsOrigins = z
  .string()
  .default("")
  .transform((value, ctx) => {
    const origins = value
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    for (const origin of origins) {
      const url = URL.canParse(origin) ? new URL(origin) : null;
      if (!url || !/^https?:$/.test(url.protocol) || url.origin !== origin) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          message: `must be comma-separated origins such as https://app.example.com (scheme, host and optional port; no path, no trailing slash, no *): ${JSON.stringify(origin.slice(0, 100))} is not one`,
        });
      }
    }
    return origins;
  });

const schema = z.object({
  NODE_ENV: z.string().default("development"),
  HOST: z.string().default("127.0.0.1"),
  PORT: port(4000),
  GENERATION_PORT: port(4001),
  CLOUD_PORT: port(4002),
  GENERATION_URL: optionalUrl,
  CLOUD_URL: optionalUrl,
  SUBGRAPH_TRANSPORT: z.enum(["auto", "http"]).default("auto"),
  PUBLIC_URL: optionalUrl,
  DATABASE_URL: databaseUrl,
  DATA_DIR: z.string().default("./data"),
  REDIS_URL: z.string().optional(),
  REDIS_KEY_PREFIX: z.string().default("switchyard:"),
  // Shown in adminChannels and `channels list` as chn_default's baseUrl; the key has its own variable.
  GENERATION_UPSTREAM_URL: optionalUrl.refine((v) => v === undefined || !carriesCredentials(new URL(v)), {
    message: "must not contain credentials (user:password@): give the provider's key in GENERATION_UPSTREAM_KEY",
  }),
  GENERATION_UPSTREAM_KEY: z.string().default(""),
  UPSTREAM_TIMEOUT_MS: millis(30_000),
  CHANNEL_KEY_SECRET: z
    .string()
    .optional()
    .or(z.literal("").transform(() => undefined))
    .refine((v) => v === undefined || v.length >= 32, { message: "must be at least 32 characters (for example: openssl rand -hex 32)" }),
  CHANNEL_FAILURE_THRESHOLD: integer(1).default(3),
  CHANNEL_MAX_ATTEMPTS: integer(1, 20).default(5),
  CHANNEL_PROBE_BASE_MS: integer(100).default(30_000),
  CHANNEL_PROBE_MAX_MS: integer(100).default(1_800_000),
  MEDIA_URL_TTL_SECONDS: integer(60).default(7 * 86_400),
  MEDIA_RETENTION_SECONDS: integer(60).default(30 * 86_400),
  MEDIA_STORE: z.enum(["disk", "s3"]).default("disk"),
  MEDIA_S3_ENDPOINT: optionalUrl,
  MEDIA_S3_REGION: z.string().default("us-east-1"),
  MEDIA_S3_BUCKET: z.string().optional(),
  MEDIA_S3_PREFIX: z.string().default("media/"),
  MEDIA_S3_ACCESS_KEY_ID: z.string().optional(),
  MEDIA_S3_SECRET_ACCESS_KEY: z.string().optional(),
  REQUEST_TIMEOUT_MS: millis(30_000),
  TASK_POLL_INTERVAL_MS: millis(3_000),
  TASK_POLL_BATCH: integer(1).default(100),
  TASK_POLL_CONCURRENCY: integer(1).default(8),
  TASK_DEADLINE_SECONDS: integer(1).optional(),
  RECOVERY_MARGIN_MS: millis(10_000),
  SHUTDOWN_TIMEOUT_MS: millis(10_000),
  SIMULATOR_STEP_MS: millis(1_000),
  DNS_SERVERS: z.string().optional(),
  ADMIN_TOKEN: z.string().optional(),
  ADMIN_FAILURES_PER_MINUTE: integer(1).default(10),
  ADMIN_SESSION_IDLE_MINUTES: integer(1).default(30),
  ADMIN_SESSION_HOURS: integer(1).default(12),
  SUBGRAPH_SECRET: z.string().optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS, { errorMap: () => ({ message: `must be one of ${LOG_LEVELS.join(", ")}` }) }).default("info"),
  LOG_FORMAT: z.enum(["auto", "json", "pretty"]).default("auto"),
  PROVISION_DELAY_MS: millis(2_000),
  WEBHOOK_RETRY_BASE_MS: millis(30_000),
  WEBHOOK_MAX_ATTEMPTS: integer(1).default(15),
  WEBHOOK_TIMEOUT_MS: integer(100).default(10_000),
  TRUST_PROXY: z.string().default(""),
  CORS_ORIGINS: corsOrigins,
  BODY_LIMIT_BYTES: integer(1024).default(1_048_576),
  PERSISTED_DOCUMENTS: z.string().optional(),
  PERSISTED_ONLY: flag("must be true or false (1 or 0), or unset").transform(Boolean),
  GRAPHQL_BATCH_MAX: integer(1).default(10),
  GRAPHQL_DEFER: flag().transform(Boolean),
  DB_STATEMENTS_PER_REQUEST: integer(1).default(1_000),
  DB_CONNECTIONS_PER_REQUEST: integer(1).default(4),
  SEED_DEMO: flag(),
  METRICS_TOKEN: z.string().optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
  OTEL_SERVICE_NAME: z.string().optional(),
  OTEL_BSP_SCHEDULE_DELAY: millis(5_000),
  // A decimal fraction written plainly (`0.25`; not `.25`, `1e-1` or ` 0.5`), as the integers are.
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .optional()
    .refine((text) => !text || (/^\d{1,16}(?:\.\d{1,16})?$/.test(text) && Number(text) <= 1), { message: "must be a number from 0 to 1" })
    .transform((text) => (text ? Number(text) : 1)),
});

/** Every setting's variable name, in the order of the schema (`.env.example` lists exactly these). */
export const SETTING_NAMES: readonly string[] = Object.keys(schema.shape);

/** Settings whose values are secrets: `config check` shows only whether they are set. */
export const SECRET_SETTINGS: readonly string[] = [
  "SUBGRAPH_SECRET",
  "ADMIN_TOKEN",
  "METRICS_TOKEN",
  "CHANNEL_KEY_SECRET",
  "GENERATION_UPSTREAM_KEY",
  "MEDIA_S3_SECRET_ACCESS_KEY",
];

/** A value as `config check` may print it: a secret as `****`, a URL's password as `****`. */
function masked(name: string, value: string): string {
  if (value === "") return value;
  if (SECRET_SETTINGS.includes(name)) return "****";
  if (!URL.canParse(value)) return value;
  const url = new URL(value);
  if (!url.password) return value;
  url.password = "****";
  return url.toString();
}

/**
 * The effective value of every setting (`switchyard config check`), secrets masked: what the
 * environment says, else the default.
 * @param env the environment (defaults to `process.env`)
 * @returns one entry per {@link SETTING_NAMES} item: its name, the value as text ("" for unset)
 *   and whether it came from the environment or is the default
 */
export function effectiveSettings(env: Record<string, string | undefined> = process.env): { name: string; value: string; source: "env" | "default" }[] {
  return SETTING_NAMES.map((name) => {
    const given = env[name];
    if (given !== undefined && given !== "") return { name, value: masked(name, given), source: "env" as const };
    const fallback = (schema.shape as Record<string, z.ZodTypeAny>)[name]!.safeParse(undefined);
    const value = fallback.success && fallback.data !== undefined ? String(fallback.data) : "";
    return { name, value, source: "default" as const };
  });
}

/** The validated settings. Times are milliseconds; ports are TCP ports (0 = any free port). */
export interface Config {
  nodeEnv: string;
  host: string;
  port: number;
  generationPort: number;
  cloudPort: number;
  /** Router → generation subgraph; unset: the subgraph started in the same process. */
  generationUrl?: string;
  cloudUrl?: string;
  /**
   * How the router reaches a subgraph of its own process: `auto` in-process
   * (router/transport/in-process.ts), `http` over HTTP and graphql-ws as separate processes do.
   */
  subgraphTransport: "auto" | "http";
  /** Base URL users reach the router at (for media links); defaults to http://HOST:PORT. */
  publicUrl?: string;
  /** `postgres://…` or `postgresql://…`; unset for SQLite (another scheme is refused by {@link loadConfig}). */
  databaseUrl?: string;
  /** Absolute folder of the SQLite file. */
  dataDir: string;
  redisUrl?: string;
  /** Prefix of Redis channel and key names (several deployments or test runs can share one Redis). */
  redisKeyPrefix: string;
  upstreamUrl?: string;
  upstreamKey: string;
  upstreamTimeoutMs: number;
  /**
   * The secret channel API keys are encrypted with at rest (README "Channels"); unset: no
   * channel can be added, and a start with stored channels fails.
   */
  channelKeySecret?: string;
  /** Failed submissions in a row that take a channel out of rotation (AUTO_DISABLED). */
  channelFailureThreshold: number;
  /** Most channels one submission is tried on before it is refunded. */
  channelMaxAttempts: number;
  /** First delay before an auto-disabled channel is probed; doubled per failed probe up to `channelProbeMaxMs`. */
  channelProbeBaseMs: number;
  channelProbeMaxMs: number;
  /** How long a signed `/media/p/...` URL of a provider result is valid (s; README "Channels"). */
  mediaUrlTtlSeconds: number;
  /** How long a provider result is kept (s). */
  mediaRetentionSeconds: number;
  /** Where provider results are kept: `DATA_DIR/media`, or an S3-compatible bucket (MEDIA_S3_*). */
  mediaStore: "disk" | "s3";
  /** An S3-compatible endpoint; unset: AWS. */
  mediaS3Endpoint?: string;
  mediaS3Region: string;
  mediaS3Bucket?: string;
  mediaS3Prefix: string;
  /** Unset: the AWS SDK's default credential chain. */
  mediaS3AccessKeyId?: string;
  mediaS3SecretAccessKey?: string;
  /** Time limit of one `/graphql` HTTP request at the router; 0: none. */
  requestTimeoutMs: number;
  taskPollIntervalMs: number;
  taskPollBatch: number;
  taskPollConcurrency: number;
  /** Deadline of every task in seconds, overriding each model's `deadlineSeconds` (tests); unset: the model's. */
  taskDeadlineSeconds?: number;
  /**
   * Added to UPSTREAM_TIMEOUT_MS: a task still `pending` (debited, not accepted upstream) that is
   * older than both was interrupted by a crash, and the recovery sweep resends or refunds it.
   */
  recoveryMarginMs: number;
  /** Graceful shutdown: how long in-flight HTTP requests may take before their connections are cut. */
  shutdownTimeoutMs: number;
  simulatorStepMs: number;
  /** Resolver addresses such as `127.0.0.1:5353`; unset: the system resolver. */
  dnsServers?: string[];
  adminToken?: string;
  /** Wrong admin tokens a client address may present per minute; beyond, its admin checks are 429 (src/auth/admin.ts). */
  adminFailuresPerMinute: number;
  /** A console session ends after this many minutes without a request (docs/adr/0022-operators-and-audit.md). */
  adminSessionIdleMinutes: number;
  /** A console session ends this many hours after sign-in. */
  adminSessionHours: number;
  /**
   * The key of the router's HMAC signature on every subgraph request (README "Security model");
   * unset: made per start when every role runs in this process ({@link subgraphSecretFor}).
   */
  subgraphSecret?: string;
  logLevel: (typeof LOG_LEVELS)[number];
  /**
   * How logs are written on stdout: `json` (one JSON object a line), `pretty` (human-readable,
   * pino-pretty) or `auto`: pretty when stdout is a terminal and NODE_ENV is not `production`.
   */
  logFormat: "auto" | "json" | "pretty";
  provisionDelayMs: number;
  webhookRetryBaseMs: number;
  webhookMaxAttempts: number;
  /** Time limit of one callback request; a sender that died mid-request frees its lease after about twice this. */
  webhookTimeoutMs: number;
  /**
   * Proxies the router trusts to tell the client's address in `X-Forwarded-For` (proxy-addr
   * names such as `loopback` or CIDRs, comma separated); empty: the socket's peer is the client.
   */
  trustProxy: string[];
  /**
   * Origins whose pages may call the router from a browser (CORS, router/http/cors.ts): exact
   * `Origin` values; empty (the default): none, the router's own pages being same-origin.
   */
  corsOrigins: string[];
  bodyLimitBytes: number;
  /** Most operations in one batched `POST /graphql` (a JSON array; router/graph/batch.ts). */
  graphqlBatchMax: number;
  /**
   * `@defer` delivered incrementally (multipart/mixed, SSE): the gateway leaves the Rust query
   * planner for the runtime's default one, which defers (ADR 0021). Off: `@defer` is an unknown directive (a validation error).
   */
  graphqlDefer: boolean;
  /**
   * PERSISTED_DOCUMENTS: absolute path of a trusted-documents manifest loaded besides the
   * project's schema/trusted-documents.json (router/plugins/usePersistedQueries.manifest.ts); unset: the project's alone.
   */
  persistedDocuments?: string;
  /**
   * PERSISTED_ONLY: `/graphql` runs trusted documents only (README "Persisted queries and trusted
   * documents"); off unless set, in production too (ADR 0020).
   */
  persistedOnly: boolean;
  /**
   * Whether `start` seeds the demo data on this database (README "Demo data"): the demo catalog,
   * and a funded "demo" key when it has no key at all. SEED_DEMO=1 or 0 decides; unset, on
   * unless NODE_ENV is `production`. `switchyard start --demo` turns it on.
   */
  seedDemo: boolean;
  /**
   * The database budget of one subgraph request (src/db/budget.ts): most SQL statements, most
   * pooled connections at once, and its deadline (REQUEST_TIMEOUT_MS, as the router's; 0 none).
   */
  requestBudget: { statements: number; connections: number; timeoutMs: number };
  /** Bearer token required on `/metrics`; unset: `/metrics` answers loopback clients only. */
  metricsToken?: string;
  /** OTLP/HTTP base URL traces go to (`{url}/v1/traces`); unset: tracing off, no OpenTelemetry code loaded. */
  otlpEndpoint?: string;
  /** `service.name` of the spans; unset: `switchyard-<roles>`. */
  otelServiceName?: string;
  /** Delay before finished spans are exported in a batch (ms). */
  otelScheduleDelayMs: number;
  /** Share of new traces recorded (0-1); a caller's `traceparent` sampled flag is honoured. */
  otelSampleRatio: number;
}

/**
 * Reads and validates the settings.
 * @param env an environment object (defaults to `process.env`)
 * @returns the typed settings
 * @throws ConfigError naming every invalid variable
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new ConfigError(`Invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  return {
    nodeEnv: e.NODE_ENV,
    host: e.HOST,
    port: e.PORT,
    generationPort: e.GENERATION_PORT,
    cloudPort: e.CLOUD_PORT,
    generationUrl: e.GENERATION_URL,
    cloudUrl: e.CLOUD_URL,
    subgraphTransport: e.SUBGRAPH_TRANSPORT,
    publicUrl: e.PUBLIC_URL,
    databaseUrl: e.DATABASE_URL || undefined,
    dataDir: path.resolve(e.DATA_DIR),
    redisUrl: e.REDIS_URL || undefined,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    upstreamUrl: e.GENERATION_UPSTREAM_URL,
    upstreamKey: e.GENERATION_UPSTREAM_KEY,
    upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    channelKeySecret: e.CHANNEL_KEY_SECRET,
    channelFailureThreshold: e.CHANNEL_FAILURE_THRESHOLD,
    channelMaxAttempts: e.CHANNEL_MAX_ATTEMPTS,
    channelProbeBaseMs: e.CHANNEL_PROBE_BASE_MS,
    channelProbeMaxMs: Math.max(e.CHANNEL_PROBE_MAX_MS, e.CHANNEL_PROBE_BASE_MS),
    mediaUrlTtlSeconds: e.MEDIA_URL_TTL_SECONDS,
    mediaRetentionSeconds: e.MEDIA_RETENTION_SECONDS,
    mediaStore: e.MEDIA_STORE,
    mediaS3Endpoint: e.MEDIA_S3_ENDPOINT,
    mediaS3Region: e.MEDIA_S3_REGION,
    mediaS3Bucket: e.MEDIA_S3_BUCKET || undefined,
    mediaS3Prefix: e.MEDIA_S3_PREFIX,
    mediaS3AccessKeyId: e.MEDIA_S3_ACCESS_KEY_ID || undefined,
    mediaS3SecretAccessKey: e.MEDIA_S3_SECRET_ACCESS_KEY || undefined,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    taskPollIntervalMs: e.TASK_POLL_INTERVAL_MS,
    taskPollBatch: e.TASK_POLL_BATCH,
    taskPollConcurrency: e.TASK_POLL_CONCURRENCY,
    taskDeadlineSeconds: e.TASK_DEADLINE_SECONDS,
    recoveryMarginMs: e.RECOVERY_MARGIN_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    simulatorStepMs: e.SIMULATOR_STEP_MS,
    dnsServers: e.DNS_SERVERS
      ? e.DNS_SERVERS.split(",")
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined,
    adminToken: e.ADMIN_TOKEN || undefined,
    adminFailuresPerMinute: e.ADMIN_FAILURES_PER_MINUTE,
    adminSessionIdleMinutes: e.ADMIN_SESSION_IDLE_MINUTES,
    adminSessionHours: e.ADMIN_SESSION_HOURS,
    subgraphSecret: e.SUBGRAPH_SECRET || undefined,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    provisionDelayMs: e.PROVISION_DELAY_MS,
    webhookRetryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
    webhookMaxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    trustProxy: e.TRUST_PROXY.split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    corsOrigins: e.CORS_ORIGINS,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    persistedDocuments: e.PERSISTED_DOCUMENTS ? path.resolve(e.PERSISTED_DOCUMENTS) : undefined,
    persistedOnly: e.PERSISTED_ONLY,
    graphqlBatchMax: e.GRAPHQL_BATCH_MAX,
    graphqlDefer: e.GRAPHQL_DEFER,
    seedDemo: e.SEED_DEMO ?? e.NODE_ENV !== "production",
    requestBudget: { statements: e.DB_STATEMENTS_PER_REQUEST, connections: e.DB_CONNECTIONS_PER_REQUEST, timeoutMs: e.REQUEST_TIMEOUT_MS },
    metricsToken: e.METRICS_TOKEN || undefined,
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
    otelServiceName: e.OTEL_SERVICE_NAME || undefined,
    otelScheduleDelayMs: e.OTEL_BSP_SCHEDULE_DELAY,
    otelSampleRatio: e.OTEL_TRACES_SAMPLER_ARG,
  };
}
