/**
 * The processes under test (bench/README.md): the real `bin/switchyard start` in child processes
 * (all roles in one by default, or router and subgraphs apart), the peer gateways (Apollo Gateway,
 * Hive Gateway with the Rust planner, Grafbase behind a signing proxy), a fresh
 * database per phase, the CLI (`verify`), and the RSS of a process from /proc.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { DbLocation } from "./seed.ts";
import { SUPERGRAPH_FILE } from "../router/compose.ts";
import { supergraphWithUrls } from "../router/graph/gateway.ts";
import { SUBGRAPHS } from "../router/subgraphs.ts";

/** The repository root. */
export const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = path.join(ROOT, "bin", "switchyard");

/** How the stack is laid out: `single` = `npm start` (every role in one process); `split` = router | subgraphs. */
export type Topology = "single" | "split";

/** Children still running, ended (by their own pid) if the bench dies. */
const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) if (child.exitCode === null) child.kill("SIGKILL");
});

/** A child process that printed its ready lines. */
export interface Started {
  child: ChildProcess;
  /** Capture groups of each ready pattern, in order. */
  matches: RegExpMatchArray[];
  stop(): Promise<void>;
}

/**
 * Spawns a process and waits until its stdout matched every pattern.
 * @param command executable; `args` its arguments; `env` its whole environment
 * @throws Error with the process's output when it exits first or after 90 s
 */
export function startProcess(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp[]): Promise<Started> {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let output = "";
  // BENCH_SERVER_LOG=<file>: every server process's stdout and stderr appended there too (--trace-gc under A/B).
  const logFile = process.env.BENCH_SERVER_LOG;
  // Keep draining both pipes for the life of the child: a full pipe would block it.
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    if (logFile) fs.appendFileSync(logFile, chunk);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      running.delete(child);
      resolve();
    }),
  );
  async function stop() {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${args.join(" ")} not ready after 90 s:\n${output}`));
    }, 90_000);
    const check = () => {
      const matches = ready.map((pattern) => output.match(pattern));
      if (matches.every(Boolean)) {
        clearTimeout(timer);
        child.stdout!.off("data", check);
        resolve({ child, matches: matches as RegExpMatchArray[], stop });
      }
    };
    child.stdout!.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${args.join(" ")} exited with ${code}:\n${output}`));
    });
  });
}

/** A running Switchyard. */
export interface Server {
  /** Router base URL. */
  url: string;
  generationUrl: string;
  cloudUrl: string;
  /** The process that runs the router (in `single`, the only one). */
  routerPid: number;
  /** Every process of the stack (router and subgraphs). */
  pids: number[];
  /** SUBGRAPH_SECRET of the stack: requests straight to a subgraph must be signed with it. */
  subgraphSecret: string;
  stop(): Promise<void>;
}

/**
 * The command that runs `switchyard <args>`: the CLI script, or, with BENCH_PROFILE=<dir>, the
 * same entry under `node --cpu-prof` (Node refuses --cpu-prof in NODE_OPTIONS), so each server
 * process writes a V8 CPU profile into <dir> when it stops (bench/profile.mjs summarises it).
 */
function cli(args: string[]): [string, string[]] {
  const dir = process.env.BENCH_PROFILE;
  if (!dir) return [CLI, args];
  const loader = pathToFileURL(path.join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
  return [
    process.execPath,
    [...productionV8Flags(), "--cpu-prof", `--cpu-prof-dir=${path.resolve(dir)}`, "--import", loader, path.join(ROOT, "bin", "cli.ts"), ...args],
  ];
}

/**
 * The V8 flags bin/switchyard starts node with (its `V8_FLAGS=(…)` line, ADR 0033), so a profiled
 * server runs the same heap; as there, a flag the server's NODE_OPTIONS names is left to it.
 */
function productionV8Flags(): string[] {
  const line = /^V8_FLAGS=\(([^)]*)\)$/m.exec(fs.readFileSync(CLI, "utf8"));
  if (!line) throw new Error(`${CLI}: no V8_FLAGS=(…) line`);
  const named = ` ${process.env.NODE_OPTIONS ?? ""} ${process.env.BENCH_SERVER_NODE_OPTIONS ?? ""} `;
  return line[1]!.split(/\s+/).filter((flag) => flag && !named.includes(` ${flag.split("=")[0]}=`));
}

/**
 * Starts Switchyard with the real CLI on free ports.
 * @param env settings on top of the bench's environment (database, timings)
 * @returns the URLs and the router's pid; `stop()` sends SIGTERM and waits for a clean exit
 */
export async function startServer(topology: Topology, env: Record<string, string>): Promise<Server> {
  const subgraphSecret = process.env.SUBGRAPH_SECRET ?? randomBytes(32).toString("hex");
  const base: Record<string, string | undefined> = {
    ...process.env,
    PORT: "0",
    GENERATION_PORT: "0",
    CLOUD_PORT: "0",
    LOG_LEVEL: "warn",
    SUBGRAPH_SECRET: subgraphSecret,
    ...env,
  };
  // BENCH_SERVER_NODE_OPTIONS: node options of the server processes alone (V8 flags under A/B).
  if (process.env.BENCH_SERVER_NODE_OPTIONS) base.NODE_OPTIONS = `${base.NODE_OPTIONS ?? ""} ${process.env.BENCH_SERVER_NODE_OPTIONS}`.trim();
  // BENCH_LOOP_MONITOR=<dir>: each server process records its event-loop stalls and GC pauses (bench/loop-monitor.mjs).
  if (process.env.BENCH_LOOP_MONITOR) {
    fs.mkdirSync(process.env.BENCH_LOOP_MONITOR, { recursive: true });
    base.NODE_OPTIONS = `${base.NODE_OPTIONS ?? ""} --import=${pathToFileURL(path.join(ROOT, "bench", "loop-monitor.mjs")).href}`.trim();
  }
  const router = /Switchyard router:\s+(\S+)/;
  const generation = /Generation subgraph:\s+(\S+)/;
  const cloud = /Cloud subgraph:\s+(\S+)/;
  if (topology === "single") {
    const one = await startProcess(...cli(["start"]), base, [router, generation, cloud]);
    return {
      url: one.matches[0]![1]!,
      generationUrl: one.matches[1]![1]!,
      cloudUrl: one.matches[2]![1]!,
      routerPid: one.child.pid!,
      pids: [one.child.pid!],
      subgraphSecret,
      stop: one.stop,
    };
  }
  const subgraphs = await startProcess(...cli(["start", "generation,cloud"]), base, [generation, cloud]);
  const generationUrl = subgraphs.matches[0]![1]!;
  const cloudUrl = subgraphs.matches[1]![1]!;
  const front = await startProcess(...cli(["start", "router"]), { ...base, GENERATION_URL: generationUrl, CLOUD_URL: cloudUrl }, [router]).catch(
    async (error) => {
      await subgraphs.stop();
      throw error;
    },
  );
  return {
    url: front.matches[0]![1]!,
    generationUrl,
    cloudUrl,
    routerPid: front.child.pid!,
    pids: [front.child.pid!, subgraphs.child.pid!],
    subgraphSecret,
    async stop() {
      await front.stop();
      await subgraphs.stop();
    },
  };
}

/** A running peer gateway: its GraphQL URL and its processes, each named (the CPU split). */
export interface Peer {
  url: string;
  /** The peer's own processes (gateway, and the signing proxy where there is one), by role. */
  processes: { role: string; pid: number }[];
  stop(): Promise<void>;
}

/** The environment of a peer process: the subgraphs' URLs and the secret they verify with. */
function peerEnv(server: Server, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GENERATION_URL: server.generationUrl,
    CLOUD_URL: server.cloudUrl,
    SUBGRAPH_SECRET: server.subgraphSecret,
    PORT: "0",
    NODE_ENV: "production",
    ...extra,
  };
}

/**
 * Starts the Apollo Gateway peer (bench/apollo-gateway.ts) over the running subgraphs.
 * @returns its GraphQL URL, its process and a stop function
 */
export async function startApolloGateway(server: Server): Promise<Peer> {
  const peer = await startProcess(process.execPath, ["--import", "tsx", path.join(ROOT, "bench", "apollo-gateway.ts")], peerEnv(server), [
    /Apollo Gateway:\s+(\S+)/,
  ]);
  return { url: peer.matches[0]![1]!, processes: [{ role: "Apollo Gateway", pid: peer.child.pid! }], stop: peer.stop };
}

/** A free TCP port on the loopback interface (for the peers whose CLI wants a port number). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** A folder of its own under the temporary directory for a peer's files, removed when it stops. */
function peerDir(label: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `switchyard-bench-${label}-`));
}

/**
 * Starts the Hive Gateway peer: the standalone `hive-gateway` CLI (@graphql-hive/gateway) serving
 * the checked-in supergraph with the routing URLs of the running subgraphs, with the Rust query
 * planner (`--hive-router-runtime`), one process (`--fork 1`), configured by
 * bench/hive-gateway.config.ts (signing, deduplication off).
 */
export async function startHiveGateway(server: Server): Promise<Peer> {
  const dir = peerDir("hive");
  const supergraph = path.join(dir, "supergraph.graphql");
  fs.writeFileSync(supergraph, supergraphWithUrls(fs.readFileSync(SUPERGRAPH_FILE, "utf8"), { generation: server.generationUrl, cloud: server.cloudUrl }));
  const port = await freePort();
  const bin = path.join(ROOT, "node_modules", "@graphql-hive", "gateway", "dist", "bin.js");
  const args = ["--import", "tsx", bin, "supergraph", supergraph, "--hive-router-runtime", "--fork", "1", "--host", "127.0.0.1", "--port", String(port)];
  // Waits for the CLI to take up the Rust planner option (it logs this before importing the runtime).
  const peer = await startProcess(process.execPath, [...args, "--config-path", path.join(ROOT, "bench", "hive-gateway.config.ts")], peerEnv(server), [
    /Using Hive Router Runtime/,
    /Listening on/,
  ]).catch((error) => {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    processes: [{ role: "Hive Gateway", pid: peer.child.pid! }],
    async stop() {
      await peer.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The `grafbase` binary of the CLI's npm package (a dev dependency used only here). */
const GRAFBASE = path.join(ROOT, "node_modules", "@grafbase", "cli-x86_64-unknown-linux-musl", "grafbase");

/**
 * Starts the Grafbase peer: `grafbase dev` (the Rust gateway of Grafbase's CLI) composing the
 * subgraphs' own SDL files, each routed to the signing proxy (bench/signing-proxy.ts) in front of
 * its subgraph port; `Authorization` forwarded, in-flight deduplication off.
 */
export async function startGrafbase(server: Server): Promise<Peer> {
  const proxy = await startProcess(process.execPath, ["--import", "tsx", path.join(ROOT, "bench", "signing-proxy.ts")], peerEnv(server), [
    /Signing proxy: generation=(\S+) cloud=(\S+)/,
  ]);
  const proxied: Record<string, string> = { generation: proxy.matches[0]![1]!, cloud: proxy.matches[0]![2]! };
  const dir = peerDir("grafbase");
  const subgraphs = SUBGRAPHS.map(
    (s) => `[subgraphs.${s.name}]\nurl = ${JSON.stringify(proxied[s.name])}\nschema_path = ${JSON.stringify(path.join(ROOT, s.schemaFile))}\n`,
  );
  fs.writeFileSync(
    path.join(dir, "grafbase.toml"),
    ['[[headers]]\nrule = "forward"\nname = "authorization"\n', "[traffic_shaping]\ninflight_deduplication = false\n", ...subgraphs].join("\n"),
  );
  const port = await freePort();
  try {
    // --home: the CLI's own state in the peer's folder, not the user's ~/.grafbase.
    const gateway = await startProcess(
      GRAFBASE,
      ["--home", dir, "dev", "--config", path.join(dir, "grafbase.toml"), "--port", String(port)],
      { ...process.env, NO_COLOR: "1" },
      [/GraphQL\S*:\s+(http\S+)/],
    );
    return {
      url: `http://127.0.0.1:${port}/graphql`,
      processes: [
        { role: "Grafbase", pid: gateway.child.pid! },
        { role: "signing proxy", pid: proxy.child.pid! },
      ],
      async stop() {
        await gateway.stop();
        await proxy.stop();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await proxy.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Runs a CLI command to completion.
 * @returns exit code and combined output
 */
export function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(CLI, args, { cwd: ROOT, env: { ...process.env, LOG_LEVEL: "warn", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** Resident set size of a process in kB (VmRSS of /proc/<pid>/status). */
export function rssKb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
}

/** A database of one bench phase. */
export interface BenchDatabase extends DbLocation {
  /** `DATABASE_URL` or `DATA_DIR` for the server and CLI processes. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/**
 * A fresh, empty database for one phase: a SQLite folder under the temporary directory, or, when
 * the bench runs with `DATABASE_URL=postgres://…`, a new database on that server (created through
 * the URL's database, dropped afterwards).
 */
export async function createBenchDatabase(label: string): Promise<BenchDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `switchyard-bench-${label}-`));
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl || !/^postgres(ql)?:/i.test(serverUrl)) {
    return { dataDir, env: { DATA_DIR: dataDir }, drop: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `switchyard_bench_${label}_${randomBytes(4).toString("hex")}`;
  const { default: pg } = await import("pg");
  const admin = async (sql: string, params: unknown[] = []) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql, params);
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  return {
    dataDir,
    databaseUrl,
    env: { DATABASE_URL: databaseUrl, DATA_DIR: dataDir },
    async drop() {
      await admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
      await admin(`DROP DATABASE IF EXISTS ${name}`);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
