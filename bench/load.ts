/**
 * HTTP load with autocannon (programmatic): a warm-up pass, then a fixed-duration measured pass
 * with a closed loop of `connections` concurrent requests. Every response body is checked, so a
 * 200 carrying GraphQL `errors` counts as a failure, not as throughput.
 */
import fs from "node:fs";
import autocannon from "autocannon";

/** One HTTP load to run. */
export interface LoadSpec {
  url: string;
  method: "GET" | "POST";
  /** The request headers, or a function making them for every request (a key per request: the write scenario's many keys). */
  headers: Record<string, string> | (() => Record<string, string>);
  /** The request body, or a function making a fresh one for every request (a signed subgraph request is served once). */
  body?: string | (() => string);
  /** Concurrent connections (each sends its next request when the previous answer arrived). */
  connections: number;
  /** Seconds of the measured pass. */
  durationSeconds: number;
  /** Seconds of the warm-up pass before it (not reported). */
  warmupSeconds: number;
  /** True when a response body is a correct answer (checked on every response, so keep it cheap). */
  verify: (body: string) => boolean;
  /** The server processes whose CPU time the measured pass is charged with (all of them: a gateway and its subgraphs). */
  serverPids?: number[];
}

/** What a measured pass gave; latencies in milliseconds. */
export interface LoadResult {
  /** Correct 2xx answers per second over the measured pass. */
  rps: number;
  p50: number;
  p99: number;
  max: number;
  /** Requests answered in the measured pass. */
  requests: number;
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  /** 2xx answers whose body failed `verify` (for GraphQL: `errors` in the body). */
  mismatches: number;
  connections: number;
  seconds: number;
  /**
   * CPU milliseconds the server processes spent per answered request during the measured pass
   * (user + system, all threads, from /proc): steadier than req/s on a shared machine, and the
   * same unit for one process or a gateway plus its subgraphs. Null without `serverPids`.
   */
  cpuMsPerRequest: number | null;
  /** True when anything failed: such a row is flagged, its numbers are not comparable. */
  failed: boolean;
}

function run(spec: LoadSpec, seconds: number): Promise<autocannon.Result> {
  const { body, headers } = spec;
  const perRequest = typeof body === "function" || typeof headers === "function";
  return autocannon({
    url: spec.url,
    method: spec.method,
    ...(typeof headers === "function" ? {} : { headers }),
    ...(perRequest
      ? {
          requests: [
            {
              setupRequest: (request: Record<string, unknown>) => ({
                ...request,
                ...(typeof headers === "function" ? { headers: headers() } : {}),
                body: typeof body === "function" ? body() : body,
              }),
            },
          ],
        }
      : { body }),
    connections: spec.connections,
    duration: seconds,
    timeout: 10,
    verifyBody: spec.verify,
  } as autocannon.Options);
}

/**
 * Runs the warm-up pass, then the measured pass.
 * @returns the measured pass's throughput (correct answers only), latency percentiles and failures
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  if (spec.warmupSeconds > 0) await run(spec, spec.warmupSeconds);
  const cpuBefore = spec.serverPids ? cpuMs(spec.serverPids) : 0;
  const result = await run(spec, spec.durationSeconds);
  const cpuSpent = spec.serverPids ? cpuMs(spec.serverPids) - cpuBefore : null;
  const ok2xx = Number((result as { "2xx"?: number })["2xx"] ?? 0);
  const good = Math.max(0, ok2xx - result.mismatches);
  const failures = result.non2xx + result.errors + result.timeouts + result.mismatches;
  return {
    rps: round(good / result.duration, 0),
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    mismatches: result.mismatches,
    connections: spec.connections,
    seconds: round(result.duration, 1),
    cpuMsPerRequest: cpuSpent !== null && result.requests.total > 0 ? round(cpuSpent / result.requests.total, 2) : null,
    failed: failures > 0 || good === 0,
  };
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU time (user + system, every thread) the processes have used so far, in milliseconds. */
export function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** Rounds to `digits` decimals. */
export function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
