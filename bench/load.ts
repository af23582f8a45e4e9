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
  headers: Record<string, string>;
  /** The request body, or a function making a fresh one for every request (a signed subgraph request is served once). */
  body?: string | (() => string);
  /** Headers of each next request, on top of `headers` (load spread over several keys). */
  nextHeaders?: () => Record<string, string>;
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
  /** {@link cpuMsPerRequest} of each server process, in `serverPids` order (null without them). */
  cpuMsPerRequestByPid?: number[] | null;
  /** True when anything failed: such a row is flagged, its numbers are not comparable. */
  failed: boolean;
}

function run(spec: LoadSpec, seconds: number): Promise<autocannon.Result> {
  const { body, nextHeaders } = spec;
  const perRequest = typeof body === "function" || nextHeaders;
  const setupRequest = (request: autocannon.Request) => ({
    ...request,
    ...(typeof body === "function" ? { body: body() } : {}),
    ...(nextHeaders ? { headers: { ...spec.headers, ...nextHeaders() } } : {}),
  });
  return autocannon({
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    ...(perRequest ? { requests: [{ ...(typeof body === "string" ? { body } : {}), setupRequest }] } : { body }),
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
  const pids = spec.serverPids ?? [];
  const cpuBefore = pids.map((pid) => cpuMs([pid]));
  const result = await run(spec, spec.durationSeconds);
  const cpuByPid = spec.serverPids ? pids.map((pid, i) => cpuMs([pid]) - cpuBefore[i]!) : null;
  const cpuSpent = cpuByPid ? cpuByPid.reduce((sum, ms) => sum + ms, 0) : null;
  const perRequest = (ms: number) => round(ms / result.requests.total, 2);
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
    cpuMsPerRequest: cpuSpent !== null && result.requests.total > 0 ? perRequest(cpuSpent) : null,
    cpuMsPerRequestByPid: cpuByPid && result.requests.total > 0 ? cpuByPid.map(perRequest) : null,
    failed: failures > 0 || good === 0,
  };
}

/**
 * Several measured passes of one row as one result: counts added, CPU per request over all the
 * requests (each pass weighted by its requests), req/s and p50 averaged, p99 and max the worst.
 * @throws Error when `results` is empty
 */
export function combineLoads(results: LoadResult[]): LoadResult {
  if (results.length === 0) throw new Error("nothing to combine");
  if (results.length === 1) return results[0]!;
  const sum = (f: (r: LoadResult) => number) => results.reduce((total, r) => total + f(r), 0);
  const requests = sum((r) => r.requests);
  const weighted = (f: (r: LoadResult) => number | null | undefined) =>
    results.every((r) => typeof f(r) === "number") && requests > 0 ? round(sum((r) => f(r)! * r.requests) / requests, 2) : null;
  const pids = results[0]!.cpuMsPerRequestByPid?.length ?? 0;
  const byPid =
    results.every((r) => r.cpuMsPerRequestByPid?.length === pids) && pids > 0
      ? Array.from({ length: pids }, (_, i) => weighted((r) => r.cpuMsPerRequestByPid![i]))
      : null;
  return {
    rps: round(sum((r) => r.rps) / results.length, 0),
    p50: round(sum((r) => r.p50) / results.length, 1),
    p99: Math.max(...results.map((r) => r.p99)),
    max: Math.max(...results.map((r) => r.max)),
    requests,
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    mismatches: sum((r) => r.mismatches),
    connections: results[0]!.connections,
    seconds: round(
      sum((r) => r.seconds),
      1,
    ),
    cpuMsPerRequest: weighted((r) => r.cpuMsPerRequest),
    cpuMsPerRequestByPid: byPid?.every((v) => v !== null) ? (byPid as number[]) : null,
    failed: results.some((r) => r.failed),
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
