/**
 * Prometheus metrics of a process (docs/architecture.md §2 `/metrics`): one prom-client registry per stack,
 * never the global default (several stacks share a test process). The hot path only increments
 * counters and observes histograms; what costs a query (outbox lag, ledger totals) is computed in
 * `collect()` callbacks, that is only while `/metrics` is being scraped ({@link onScrape}).
 * Infrastructure only: the modules that own a figure register its metric themselves.
 */
import { secretsEqual } from "../digest.ts";
import type { IncomingMessage, ServerResponse } from "node:http";
import ipaddr from "ipaddr.js";
import type { Logger } from "pino";
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import { VERSION } from "../version.ts";

/** Prefix of every metric Switchyard defines (process metrics keep their standard names). */
export const METRIC_PREFIX = "switchyard_";

/**
 * A fresh registry for one stack, holding `switchyard_build_info{version,node}` = 1 (the
 * package.json version and the Node.js version, so a dashboard can tell builds apart).
 * @returns the registry
 */
export function createRegistry(): Registry {
  const registry = new Registry();
  new Gauge({
    name: `${METRIC_PREFIX}build_info`,
    help: "Always 1; labels: the Switchyard version and the Node.js version of this process",
    labelNames: ["version", "node"] as const,
    registers: [registry],
  }).set({ version: VERSION, node: process.versions.node }, 1);
  return registry;
}

/**
 * Adds prom-client's default process metrics (CPU, memory, event-loop lag, GC, handles) to a
 * registry. Meant for `switchyard start` processes: the collectors stay installed for the life of
 * the process, so tests that start many stacks do not call it.
 *
 * prom-client also exposes gauges named like counters (`nodejs_active_handles_total`, the sum of
 * `nodejs_active_handles{type}`, and the same for requests and resources), which break the
 * `_total`-means-counter rule: a gauge `X_total` whose labelled breakdown `X` exists is dropped
 * (`sum(X)` gives it). Any other stays, and the promtool lint of the test suite reports it.
 */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  const names = new Set(registry.getMetricsAsArray().map((metric) => metric.name));
  for (const metric of registry.getMetricsAsArray()) {
    const breakdown = metric.name.replace(/_total$/, "");
    if (!(metric instanceof Counter) && breakdown !== metric.name && names.has(breakdown)) registry.removeSingleMetric(metric.name);
  }
}

/** Latency buckets in seconds, shared by Switchyard's duration histograms (5 ms to 30 s, the default request and upstream timeouts). */
export const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One series of a counter read from a store: its labels and its current (cumulative) value. */
export type StoredSeries<L extends string> = [labels: Partial<Record<L, string>>, value: number];

/**
 * A counter whose values are cumulative counts a store keeps (ledger entries, channel
 * submissions), read on scrape: the type stays `counter` (so `rate()` and `increase()` apply, and
 * the name ends in `_total`), and each scrape replaces every series with what the store says.
 * prom-client has no `set` for counters; `collect()` resets and adds each value, with no `await`
 * in between, so no scrape ever reads a half-replaced counter. When `read` gives undefined (the
 * query failed: {@link onScrape}), the last values stay.
 * @param config name (with {@link METRIC_PREFIX}), help and label names
 * @param read the current series
 * @returns the registered counter
 */
export function storedCounter<L extends string>(
  registry: Registry,
  config: { name: string; help: string; labelNames: readonly L[] },
  read: () => Promise<Iterable<StoredSeries<L>> | undefined>,
): Counter<L> {
  return new Counter<L>({
    ...config,
    registers: [registry],
    async collect() {
      const series = await read();
      if (!series) return;
      this.reset();
      for (const [labels, value] of series) this.inc(labels, value);
    },
  });
}

/**
 * Caps a client-controlled label (GraphQL operation names): the first `max` distinct values are
 * kept, later new ones become `other`, a missing one `anonymous`, so the number of series stays
 * bounded whatever clients send.
 */
export class LabelCap {
  private readonly seen = new Set<string>();

  /** @param max distinct values kept (default 100); @param maxLength longer values count as `other` */
  constructor(
    private readonly max = 100,
    private readonly maxLength = 100,
  ) {}

  /** @returns the value itself, `anonymous` (none) or `other` (over the cap or too long) */
  label(value: string | null | undefined): string {
    if (!value) return "anonymous";
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max || value.length > this.maxLength) return "other";
    this.seen.add(value);
    return value;
  }
}

/**
 * The collector hook of gauges and counters read from a store on scrape (the domain registers
 * its own: src/events/metrics.ts, src/ledger/metrics.ts): one in-flight query is shared among the
 * collectors of one scrape (prom-client runs them concurrently), and a failed query is logged
 * and gives undefined, so the collectors keep their last values.
 * @param what names the figures in the warning
 * @returns a function that runs (or joins) the query
 */
export function onScrape<T>(query: () => Promise<T>, logger: Logger, what: string): () => Promise<T | undefined> {
  let running: Promise<T | undefined> | undefined;
  const failed = (error: unknown) => {
    logger.warn({ err: error }, `metrics: ${what} could not be read; keeping the last values`);
    return undefined;
  };
  return () =>
    (running ??= query()
      .catch(failed)
      .finally(() => (running = undefined)));
}

/** Who may read `/metrics`. */
export interface MetricsAccess {
  /** METRICS_TOKEN: when set, a matching `Authorization: Bearer` is required from everyone. */
  token?: string;
  /** The client's address (behind a trusted proxy, the one it names); default: the socket's peer. */
  clientAddress?: string;
}

/** True when `address` (a socket's remote address) is a loopback address, IPv4 or IPv6. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address || !ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === "loopback";
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  if (!match) return false;
  // (Hashed first: the comparison does not tell the token's length either.)
  return secretsEqual(match[1]!.trim(), token);
}

/**
 * Answers `GET /metrics` in the Prometheus text format. With METRICS_TOKEN set, a request without
 * the matching bearer token gets 401; without it, only loopback clients are answered (403 for
 * others), so a server bound to a public address does not publish its ledger totals.
 * @param registry what to expose
 * @param access the token, and the client's address when a proxy stands in front
 * @returns when the response has been sent
 */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, registry: Registry, access: MetricsAccess): Promise<void> {
  const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
    void res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", ...headers }).end(`${text}\n`);
  if (access.token) {
    if (!tokenMatches(req.headers.authorization, access.token)) return plain(401, "Unauthorized", { "www-authenticate": 'Bearer realm="metrics"' });
  } else if (!isLoopbackAddress(access.clientAddress ?? req.socket.remoteAddress)) {
    return plain(403, "Forbidden: set METRICS_TOKEN to scrape /metrics from another host");
  }
  const body = await registry.metrics();
  res.writeHead(200, { "content-type": registry.contentType, "cache-control": "no-store" }).end(body);
}
