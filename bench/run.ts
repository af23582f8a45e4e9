/**
 * `npm run bench` (issue 7 item 1; bench/README.md): starts Switchyard itself in child processes,
 * drives it with autocannon and graphql-ws subscriber processes, one run, back to back, so every
 * figure has its ratio partner; prints markdown tables, writes bench/results/<date>.json and,
 * after a full run, the results section of bench/README.md. Numbers, never test assertions.
 *
 * Settings (env): BENCH_ONLY (read,join,growth,write,live), BENCH_SCALES (1,10,100,1000),
 * BENCH_DURATION / BENCH_WARMUP (seconds per row), BENCH_CONNECTIONS, BENCH_TOPOLOGY
 * (single|split), BENCH_LIVE_SUBSCRIBERS, BENCH_LIVE_KEYS, BENCH_LIVE_RATE, BENCH_LIVE_SECONDS,
 * BENCH_LIVE_STEP_MS, BENCH_README (1/0: rewrite the README table), BENCH_PEERS (apollo,hive,grafbase:
 * the join scenario's peer gateways, measured in that order), BENCH_JOIN_ROUNDS (2: the join rows at
 * the first scale measured in that many interleaved rounds); DATABASE_URL (a PostgreSQL
 * server to create bench databases on) and REDIS_URL are honoured.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { ROOT, createBenchDatabase, startApolloGateway, startGrafbase, startHiveGateway, startServer, type Peer, type Server } from "./server.ts";
import { seedToScale, type SeedState } from "./seed.ts";
import { combineLoads, runLoad, round, type LoadResult } from "./load.ts";
import { dashboard, dashboardPersisted, loadSpec, preflight, readGraphql, readRest, readSubgraph, type Endpoint } from "./scenarios.ts";
import { runWrite } from "./write.ts";
import { runLive } from "./live.ts";
import { evaluate, renderTables, replaceResults, type Results, type Row } from "./report.ts";

const SCENARIOS = ["read", "join", "growth", "write", "live"] as const;
const list = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((s) =>
      s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean),
    );
const settings = z
  .object({
    BENCH_ONLY: list(SCENARIOS.join(",")).pipe(z.array(z.enum(SCENARIOS))),
    BENCH_SCALES: list("1,10,100,1000").pipe(z.array(z.coerce.number().int().min(1).max(1000))),
    BENCH_DURATION: z.coerce.number().positive().default(8),
    BENCH_WARMUP: z.coerce.number().min(0).default(2),
    BENCH_CONNECTIONS: z.coerce.number().int().min(1).default(32),
    BENCH_TOPOLOGY: z.enum(["single", "split"]).default("single"),
    BENCH_LIVE_SUBSCRIBERS: z.coerce.number().int().min(1).default(10_000),
    // Default: 10 subscribers per key (a user with a few tabs open).
    BENCH_LIVE_KEYS: z.coerce.number().int().min(1).optional(),
    BENCH_LIVE_RATE: z.coerce.number().positive().default(20),
    BENCH_LIVE_SECONDS: z.coerce.number().positive().default(5),
    BENCH_LIVE_STEP_MS: z.coerce.number().int().min(10).default(250),
    BENCH_README: z.enum(["0", "1"]).optional(),
    BENCH_JOIN_ROUNDS: z.coerce.number().int().min(1).default(2),
    BENCH_PEERS: list("apollo,hive,grafbase").pipe(z.array(z.enum(["apollo", "hive", "grafbase"]))),
  })
  .parse(process.env);

const started = performance.now();
const loadAtStart = os.loadavg()[0]!;
const only = new Set(settings.BENCH_ONLY);
const scales = [...new Set(settings.BENCH_SCALES)].sort((a, b) => a - b);
const load = { connections: settings.BENCH_CONNECTIONS, durationSeconds: settings.BENCH_DURATION, warmupSeconds: settings.BENCH_WARMUP };
// Several runs (or test stacks) may share one Redis: keep this run's channels apart.
const serverEnv: Record<string, string> = { NODE_ENV: "production", SHUTDOWN_TIMEOUT_MS: "3000", REDIS_KEY_PREFIX: `bench-${randomBytes(4).toString("hex")}:` };
const topology = settings.BENCH_TOPOLOGY;
const usingPostgres = /^postgres(ql)?:/i.test(process.env.DATABASE_URL ?? "");

const rows: Row[] = [];
const data: Results["data"] = {};

function log(message: string) {
  console.error(`[bench ${round((performance.now() - started) / 1000, 0)}s] ${message}`);
}

/** The peer gateways of the join scenario, each in front of our subgraph ports (bench/README.md "Scenarios"). */
const PEER_STARTERS = {
  apollo: { variant: "Apollo Gateway", start: startApolloGateway },
  hive: { variant: "Hive Gateway (Rust planner)", start: startHiveGateway },
  grafbase: { variant: "Grafbase", start: startGrafbase },
} satisfies Record<string, { variant: string; start: (server: Server) => Promise<Peer> }>;
/** The peers of this run, in BENCH_PEERS order (a reversed order shows what the order of rows does). */
const PEERS = settings.BENCH_PEERS.map((name) => PEER_STARTERS[name]);

/**
 * The server processes a request of a variant passes through (the table's "processes" column):
 * with the default topology our router runs both subgraphs in its own process, so one core's
 * worth of event loop serves it; a peer gateway is always its own process (or two, with the
 * Grafbase row's signing proxy) in front of ours.
 */
function processesOf(variant: string, peer?: Peer): string {
  const subgraphs = topology === "single" ? "Switchyard, all roles in one" : "subgraphs";
  if (variant === "direct subgraph") return `1: ${subgraphs}`;
  if (peer) return `${peer.processes.length + 1}: ${peer.processes.map((p) => p.role).join(" | ")} | ${subgraphs}`;
  return topology === "single" ? "1: router + subgraphs" : "2: router | subgraphs";
}

/** A row to measure: what it sends, and the server processes it is charged with, by role. */
interface Contender {
  scenario: string;
  variant: string;
  endpoint: Endpoint;
  processes: { role: string; pid: number }[];
  peer?: Peer;
}

/** One measured pass of a contender, logged with its CPU split. */
async function loadOnce(c: Contender, label: string): Promise<LoadResult> {
  log(label);
  const result = await runLoad({ ...loadSpec(c.endpoint, load), serverPids: c.processes.map((p) => p.pid) });
  const cpuByRole = cpuByRoleOf(c, result);
  const split = cpuByRole
    ? ` (${Object.entries(cpuByRole)
        .map(([role, ms]) => `${role} ${ms}`)
        .join(", ")})`
    : "";
  log(`  ${result.rps} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, ${result.cpuMsPerRequest} CPU ms/request${split}${result.failed ? " — FAILED" : ""}`);
  return result;
}

/** CPU ms per request of a multi-process contender by role (undefined for one process). */
function cpuByRoleOf(c: Contender, result: LoadResult): Record<string, number> | undefined {
  const byPid = result.cpuMsPerRequestByPid;
  return byPid && c.processes.length > 1 ? Object.fromEntries(c.processes.map((p, i) => [p.role, byPid[i]!])) : undefined;
}

/** Adds a contender's row: its passes combined, or why it has none. */
function record(c: Contender, scale: number, results: LoadResult[], note?: string) {
  const processes = processesOf(c.variant, c.peer);
  const result = results.length ? combineLoads(results) : null;
  const cpuByRole = result ? cpuByRoleOf(c, result) : undefined;
  rows.push({ scenario: c.scenario, variant: c.variant, scale, result, processes, ...(note ? { note } : {}), ...(cpuByRole ? { cpuByRole } : {}) });
}

/** Checks one answer (per key), then loads the endpoint once; a wrong answer makes a failed row, not a crash. */
async function measure(scenario: string, variant: string, scale: number, endpoint: Endpoint, processes: { role: string; pid: number }[]) {
  const c: Contender = { scenario, variant, endpoint, processes };
  const problem = await preflight(endpoint);
  if (problem) {
    log(`${scenario} · ${variant} · ${scale}x: preflight failed: ${problem}`);
    return record(c, scale, [], `preflight failed: ${problem}`);
  }
  record(c, scale, [await loadOnce(c, `${scenario} · ${variant} · ${scale}x`)]);
}

/**
 * The join rows of the first scale, interleaved: every peer is started first, then each round
 * loads every contender once in turn, so a change of the machine's load falls on all of them
 * alike; each row is its passes combined (CPU per request over all of its requests).
 */
async function joinRounds(server: Server, scale: number, keys: string[], ours: Contender["processes"]) {
  const contenders: Contender[] = [
    { scenario: "join", variant: "router", endpoint: dashboard(`${server.url}/graphql`, keys), processes: ours },
    { scenario: "join", variant: "router, persisted document id", endpoint: dashboardPersisted(`${server.url}/graphql`, keys), processes: ours },
  ];
  const peers: Peer[] = [];
  try {
    for (const { variant, start } of PEERS) {
      try {
        const peer = await start(server);
        peers.push(peer);
        contenders.push({ scenario: "join", variant, endpoint: dashboard(peer.url, keys), processes: [...peer.processes, ...ours], peer });
      } catch (error) {
        log(`  ${variant} did not start: ${error}`);
        record({ scenario: "join", variant, endpoint: dashboard("", keys), processes: [] }, scale, [], `did not start: ${String(error).slice(0, 300)}`);
      }
    }
    const ready: Contender[] = [];
    for (const c of contenders) {
      const problem = await preflight(c.endpoint);
      if (problem) {
        log(`join · ${c.variant}: preflight failed: ${problem}`);
        record(c, scale, [], `preflight failed: ${problem}`);
      } else ready.push(c);
    }
    const passes = new Map<Contender, LoadResult[]>(ready.map((c) => [c, []]));
    const rounds = settings.BENCH_JOIN_ROUNDS;
    for (let n = 1; n <= rounds; n++) {
      for (const c of ready) passes.get(c)!.push(await loadOnce(c, `join · ${c.variant} · ${scale}x · round ${n}/${rounds}`));
    }
    for (const c of ready) record(c, scale, passes.get(c)!);
  } finally {
    for (const peer of peers) await peer.stop();
  }
}

/** Our server's processes by role (one in `single`: router and subgraphs together). */
function ourProcesses(server: Server): { role: string; pid: number }[] {
  if (server.pids.length === 1) return [{ role: "Switchyard", pid: server.pids[0]! }];
  return server.pids.map((pid) => ({ role: pid === server.routerPid ? "router" : "subgraphs", pid }));
}

/** Read and join at every scale on one growing database (bench/README.md "Data"). */
async function readAndJoin() {
  const readJoinScales = only.has("growth") ? scales : scales.slice(0, 1);
  const database = await createBenchDatabase("graph");
  let state: SeedState | undefined;
  try {
    for (const [index, scale] of readJoinScales.entries()) {
      log(`seeding ${scale}x`);
      state = await seedToScale(database, scale, state);
      data[`${scale}x`] = state.totals;
      const server: Server = await startServer(topology, { ...serverEnv, ...database.env });
      try {
        const viewer = state.keys[0]!.key;
        const keys = state.keys.map((k) => k.key);
        const ours = ourProcesses(server);
        const baseline = index === 0;
        // Every row is measured on a warm server: without this pass, the first row (the direct
        // subgraph, the ratios' ceiling) ran while the process was still compiling the code
        // paths the others share, and looked slower than it is.
        if (baseline && load.warmupSeconds > 0) {
          log("warming the server up");
          const endpoints = [
            readSubgraph(server.generationUrl, viewer, state.taskId, server.subgraphSecret),
            readGraphql(`${server.url}/graphql`, viewer, state.taskId),
            readRest(server.url, viewer, state.taskId),
            dashboard(`${server.url}/graphql`, keys),
          ];
          for (const endpoint of endpoints) await runLoad(loadSpec(endpoint, { ...load, durationSeconds: load.warmupSeconds, warmupSeconds: 0 }));
        }
        // The full set at the first scale; the router's own rows at every scale (growth).
        if (baseline && only.has("read"))
          await measure("read", "direct subgraph", scale, readSubgraph(server.generationUrl, viewer, state.taskId, server.subgraphSecret), ours);
        if (only.has("read") || only.has("growth")) await measure("read", "router", scale, readGraphql(`${server.url}/graphql`, viewer, state.taskId), ours);
        if (baseline && only.has("read")) await measure("read", "REST shim", scale, readRest(server.url, viewer, state.taskId), ours);
        if (baseline && only.has("join")) await joinRounds(server, scale, keys, ours);
        else if (only.has("join") || only.has("growth")) await measure("join", "router", scale, dashboard(`${server.url}/graphql`, keys), ours);
      } finally {
        await server.stop();
      }
    }
  } finally {
    await database.drop();
  }
}

function commit(): string | null {
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

if (only.has("read") || only.has("join") || only.has("growth")) await readAndJoin();
let write: Results["write"];
if (only.has("write")) {
  log(`write · REST submit`);
  write = { ...(await runWrite({ topology, ...load, env: serverEnv })), processes: processesOf("REST submit") };
  log(`  ${write.load.rps} accepted/s, verify exit ${write.verifyExit}, ledger ${write.ledgerExact ? "exact" : "NOT exact"}${write.failed ? " — FAILED" : ""}`);
  if (write.verifyExit !== 0) log(write.verifyOutput);
}
let live: Results["live"];
if (only.has("live")) {
  log(`live · ${settings.BENCH_LIVE_SUBSCRIBERS} subscribers`);
  live = await runLive({
    topology,
    subscribers: settings.BENCH_LIVE_SUBSCRIBERS,
    keys: settings.BENCH_LIVE_KEYS ?? Math.max(1, Math.round(settings.BENCH_LIVE_SUBSCRIBERS / 10)),
    rate: settings.BENCH_LIVE_RATE,
    seconds: settings.BENCH_LIVE_SECONDS,
    stepMs: settings.BENCH_LIVE_STEP_MS,
    env: serverEnv,
    log,
  });
  log(`  delivery p99 ${live.delivery.p99} ms, ${live.rss.kbPerSubscriber} KB/subscriber${live.failed ? " — FAILED" : ""}`);
}

const { ratios, targets } = evaluate(rows, write, live);
const cpus = os.cpus();
const results: Results = {
  date: new Date().toISOString(),
  wallSeconds: round((performance.now() - started) / 1000, 0),
  environment: {
    node: process.version,
    cpu: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    memoryGb: round(os.totalmem() / 2 ** 30, 1),
    // 1-minute load average when the run started and ended: other work on the machine skews every figure.
    loadAverage: { start: round(loadAtStart, 2), end: round(os.loadavg()[0]!, 2) },
    commit: commit(),
    topology,
    database: usingPostgres ? "postgres" : "sqlite",
    redis: Boolean(process.env.REDIS_URL),
    scenarios: [...only],
    scales,
    ...load,
  },
  data,
  rows,
  write,
  live,
  ratios,
  targets,
};

const tables = renderTables(results);
console.log(`\n${tables}\n`);
const full = SCENARIOS.every((s) => only.has(s));
const day = results.date.slice(0, 10);
const file = path.join(ROOT, "bench", "results", full ? `${day}.json` : `${day}-${[...only].join("-")}.json`);
fs.mkdirSync(path.dirname(file), { recursive: true });
fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
console.log(`wrote ${path.relative(ROOT, file)}`);
if (settings.BENCH_README === "1" || (settings.BENCH_README !== "0" && full)) {
  replaceResults(path.join(ROOT, "bench", "README.md"), tables);
  console.log("updated bench/README.md");
}
process.exit(0);
