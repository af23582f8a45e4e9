/**
 * Liveness and readiness (docs/architecture.md §2.9, docs/adr/0015-readiness-and-containers.md):
 * `GET /livez` says the process serves HTTP and checks nothing else; `GET /readyz` runs this
 * process's checks (database, migrations, Redis, outbox dispatcher, and on a router the subgraphs
 * it reaches) and answers 200 or 503 with each check's outcome.
 *
 * Probes are frequent (every few seconds from each orchestrator, load balancer and container
 * runtime), so a check is cheap (one query, one PING, one GET), bounded (each answer within
 * {@link CHECK_TIMEOUT_MS}), never run twice at once (a probe arriving while a check is under way
 * waits for that one; a check still pending after its timeout is not started again until it
 * settles) and the whole report is reused for {@link REPORT_CACHE_MS}.
 * The database's own checks are in src/db/readiness.ts (this module imports no business module,
 * docs/architecture.md §1.2).
 * A failure is a short reason from a fixed vocabulary ("connection refused", "no answer within
 * 2 s", "HTTP 503"...): never a host, a URL or a password, since `/readyz` answers anyone.
 */
import type { ServerResponse } from "node:http";

/** How long one check may take before it counts as failed (ms). */
export const CHECK_TIMEOUT_MS = 2_000;
/** How long a readiness report is reused (ms): probes more frequent than this cost nothing. */
export const REPORT_CACHE_MS = 1_000;

/** A check failure whose message is safe to answer to anyone (no address, URL or secret). */
export class CheckFailure extends Error {}

/** One readiness check: resolves when healthy, rejects (preferably with a {@link CheckFailure}) when not. */
export interface ReadinessCheck {
  /** Its name in the report (`database`, `migrations`, `redis`, `outbox_dispatcher`, `subgraph:generation`). */
  name: string;
  run(): Promise<void>;
}

/** The outcome of one check in a report. */
export interface CheckOutcome {
  status: "ok" | "failed";
  /** Why it failed (a short reason without addresses or secrets); absent when ok. */
  error?: string;
}

/** The body of `GET /readyz`. */
export interface ReadinessReport {
  status: "ok" | "unavailable";
  /** Each check by name. */
  checks: Record<string, CheckOutcome>;
}

/** A process's readiness: its checks, run together. */
export interface Readiness {
  /** Runs every check (or reuses a report at most {@link REPORT_CACHE_MS} old). */
  report(): Promise<ReadinessReport>;
}

/**
 * A short, safe reason for a failed check: a {@link CheckFailure}'s own message, else one of a
 * few words for common network errors, else "failed" (another error's message may hold an address).
 */
export function reasonOf(error: unknown): string {
  if (error instanceof CheckFailure) return error.message;
  const e = (error ?? {}) as { code?: unknown; name?: unknown; cause?: { code?: unknown } };
  const code = e.code ?? e.cause?.code;
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ECONNRESET":
    case "EPIPE":
      return "connection reset";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host not found";
    case "ETIMEDOUT":
      return "connection timed out";
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "host unreachable";
    case "57P01":
    case "57P03":
      return "database is shutting down or starting up";
    case "3D000":
      return "database does not exist";
  }
  if (e.name === "TimeoutError" || e.name === "AbortError") return `no answer within ${CHECK_TIMEOUT_MS / 1000} s`;
  return "failed";
}

/**
 * One check made single-flight: while its last run is pending, callers share that run; each
 * caller stops waiting after `timeoutMs` (the run goes on, and the next caller waits for it).
 */
function singleFlight(check: ReadinessCheck, timeoutMs: number): () => Promise<CheckOutcome> {
  let pending: Promise<void> | undefined;
  return async () => {
    if (!pending) {
      const run = check.run().finally(() => {
        if (pending === run) pending = undefined;
      });
      pending = run;
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailure(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      await Promise.race([pending, timeout]);
      return { status: "ok" };
    } catch (error) {
      return { status: "failed", error: reasonOf(error) };
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * Creates the readiness of a process.
 * @param checks the checks, each named once (in the report's order)
 * @param options `timeoutMs` per check (default {@link CHECK_TIMEOUT_MS}), `cacheMs` (default
 *   {@link REPORT_CACHE_MS}), `now` the clock in epoch ms (tests)
 * @returns `report()`: ok when every check is (and with no checks)
 */
export function createReadiness(checks: readonly ReadinessCheck[], options: { timeoutMs?: number; cacheMs?: number; now?: () => number } = {}): Readiness {
  const timeoutMs = options.timeoutMs ?? CHECK_TIMEOUT_MS;
  const cacheMs = options.cacheMs ?? REPORT_CACHE_MS;
  const now = options.now ?? Date.now;
  const runs = checks.map((check) => ({ name: check.name, run: singleFlight(check, timeoutMs) }));
  let last: { at: number; report: Promise<ReadinessReport> } | undefined;
  const build = async (): Promise<ReadinessReport> => {
    const outcomes = await Promise.all(runs.map((c) => c.run()));
    const named = Object.fromEntries(runs.map((c, i) => [c.name, outcomes[i]!]));
    return { status: outcomes.every((o) => o.status === "ok") ? "ok" : "unavailable", checks: named };
  };
  return {
    report() {
      // A report being built is shared too: a burst of probes runs each check once.
      if (last && (last.at === -1 || now() - last.at < cacheMs)) return last.report;
      const entry: { at: number; report: Promise<ReadinessReport> } = { at: -1, report: build() };
      // build() never rejects: every check answers an outcome.
      void entry.report.then(() => (entry.at = now()));
      last = entry;
      return entry.report;
    },
  };
}

/** Answers `GET /livez`: 200 `{"status":"ok"}`, whatever the dependencies say. */
export function serveLiveness(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end('{"status":"ok"}');
}

/** Answers `GET /readyz`: 200 with the report when every check is ok, else 503 with it. */
export async function serveReadiness(res: ServerResponse, readiness: Readiness): Promise<void> {
  const report = await readiness.report();
  res.writeHead(report.status === "ok" ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(report));
}

/** `redis`: the command connection answers a PING. */
export function redisCheck(redis: { ping(): Promise<unknown> }): ReadinessCheck {
  return {
    name: "redis",
    async run() {
      await redis.ping();
    },
  };
}

/**
 * `outbox_dispatcher`: the dispatcher's loop made progress recently (src/events/dispatcher/
 * `alive`): a stopped or stuck loop publishes no event and sends no callback.
 */
export function dispatcherCheck(dispatcher: { alive(): boolean }): ReadinessCheck {
  return {
    name: "outbox_dispatcher",
    async run() {
      if (!dispatcher.alive()) throw new CheckFailure("its loop has not run recently");
    },
  };
}
