/**
 * Prometheus metrics of a process (docs/architecture.md §2 `/metrics`): one prom-client registry per stack,
 * never the global default (several stacks share a test process). The hot path only increments
 * counters and observes histograms; what costs a query (outbox lag, ledger totals) is computed in
 * `collect()` callbacks, that is only while `/metrics` is being scraped.
 */
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import ipaddr from "ipaddr.js";
import type { Logger } from "pino";
import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import type { Db } from "../db/index.ts";
import { UpstreamError, type GenerationUpstream } from "../generation/upstream/types.ts";

/** Prefix of every metric Switchyard defines (process metrics keep their standard names). */
export const METRIC_PREFIX = "switchyard_";

/**
 * A fresh registry for one stack.
 * @returns an empty prom-client registry
 */
export function createRegistry(): Registry {
  return new Registry();
}

/**
 * Adds prom-client's default process metrics (CPU, memory, event-loop lag, GC, handles) to a
 * registry. Meant for `switchyard start` processes: the collectors stay installed for the life of
 * the process, so tests that start many stacks do not call it.
 */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
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

/** Why a generation upstream call failed (label `kind` of `switchyard_upstream_errors_total`). */
export function upstreamErrorKind(error: unknown): string {
  return error instanceof UpstreamError ? error.reason : "unexpected";
}

/**
 * Counts the failures of a generation upstream adapter in `switchyard_upstream_errors_total{kind,operation}`
 * (kind: transport, timeout, http, code, body, unexpected; operation: submit, status, lookup — the
 * recovery sweep asking whether a lost submission reached the provider).
 * @returns an upstream that behaves exactly like `upstream` (errors are rethrown unchanged)
 */
export function countUpstreamErrors(upstream: GenerationUpstream, registry: Registry): GenerationUpstream {
  const errors = new Counter({
    name: `${METRIC_PREFIX}upstream_errors_total`,
    help: "Failed calls to the generation upstream, by failure kind and operation",
    labelNames: ["kind", "operation"] as const,
    registers: [registry],
  });
  const counted =
    <A extends unknown[], R>(operation: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args);
      } catch (error) {
        errors.inc({ kind: upstreamErrorKind(error), operation });
        throw error;
      }
    };
  return {
    name: upstream.name,
    submit: counted("submit", upstream.submit.bind(upstream)),
    fetchStatus: counted("status", upstream.fetchStatus.bind(upstream)),
    ...(upstream.findSubmission ? { findSubmission: counted("lookup", upstream.findSubmission.bind(upstream)) } : {}),
  };
}

/** Shares one in-flight query among the collectors of one scrape (prom-client runs them concurrently). */
function singleFlight<T>(query: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () => (running ??= query().finally(() => (running = undefined)));
}

/**
 * Registers the database-derived metrics, computed on scrape only:
 * - `switchyard_outbox_pending`: outbox rows not yet published;
 * - `switchyard_outbox_lag_seconds`: age of the oldest of them (0 when none);
 * - `switchyard_ledger_entries_total{kind}`: ledger entries by kind (topup, debit, refund, adjustment);
 * - `switchyard_ledger_milliyuan_total{kind,direction}`: their amounts in milli-yuan, credits and
 *   debits apart (docs/architecture.md §3), so each series only grows: the ledger is append-only.
 * Each is a whole-database figure: processes sharing one database report the same values
 * (aggregate them with `max`, not `sum`). A failed query is logged and the last values are kept.
 * @param now clock in milliseconds (tests)
 */
export function watchDatabase(registry: Registry, db: Db, logger: Logger, now: () => number = Date.now): void {
  const outbox = singleFlight(async () => {
    const row = await db("outbox").whereNull("published_at").count({ pending: "*" }).min({ oldest: "created_at" }).first();
    return { pending: Number(row?.pending ?? 0), oldest: row?.oldest ? String(row.oldest) : null };
  });
  const ledger = singleFlight(async () => {
    const rows: { kind: string; entries: number | string; credited: number | string | null; debited: number | string | null }[] = await db("ledger_entries")
      .select("kind")
      .count({ entries: "*" })
      .select(db.raw("sum(case when amount > 0 then amount else 0 end) as credited"))
      .select(db.raw("sum(case when amount < 0 then -amount else 0 end) as debited"))
      .groupBy("kind");
    return rows;
  });
  const failed = (what: string) => (error: unknown) => {
    logger.warn({ err: error }, `metrics: ${what} could not be read; keeping the last values`);
    return undefined;
  };

  new Gauge({
    name: `${METRIC_PREFIX}outbox_pending`,
    help: "Outbox rows not yet published",
    registers: [registry],
    async collect() {
      const snapshot = await outbox().catch(failed("outbox"));
      if (snapshot) this.set(snapshot.pending);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}outbox_lag_seconds`,
    help: "Age of the oldest unpublished outbox row in seconds (0 when none)",
    registers: [registry],
    async collect() {
      const snapshot = await outbox().catch(failed("outbox"));
      if (!snapshot) return;
      const created = snapshot.oldest ? Date.parse(snapshot.oldest) : NaN;
      this.set(Number.isFinite(created) ? Math.max(0, (now() - created) / 1000) : 0);
    },
  });
  new Counter({
    name: `${METRIC_PREFIX}ledger_entries_total`,
    help: "Ledger entries by kind",
    labelNames: ["kind"] as const,
    registers: [registry],
    async collect() {
      const rows = await ledger().catch(failed("ledger"));
      if (!rows) return;
      // Absolute figures from the database: replace, not add (no await between the two).
      this.reset();
      for (const row of rows) this.inc({ kind: row.kind }, Number(row.entries));
    },
  });
  new Counter({
    name: `${METRIC_PREFIX}ledger_milliyuan_total`,
    help: "Ledger amounts in milli-yuan by kind and direction (credit, debit)",
    labelNames: ["kind", "direction"] as const,
    registers: [registry],
    async collect() {
      const rows = await ledger().catch(failed("ledger"));
      if (!rows) return;
      this.reset();
      for (const row of rows) {
        const credited = Number(row.credited ?? 0);
        const debited = Number(row.debited ?? 0);
        if (credited > 0) this.inc({ kind: row.kind, direction: "credit" }, credited);
        if (debited > 0) this.inc({ kind: row.kind, direction: "debit" }, debited);
      }
    },
  });
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
  const given = Buffer.from(match[1]!.trim());
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
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
