/**
 * Live-graph measurements (issue "live graph", Measure): runs the subgraphs in one process and
 * the router alone in another (real processes, SQLite in a temporary folder), then
 *  - event latency: REST submission sent → the `tasks` subscriber's first event for that task,
 *    through the router, over 200 submissions (median, p99);
 *  - memory per idle subscription on the router: router RSS before and after 2,000 open
 *    graphql-ws subscriptions (one connection each), divided by 2,000.
 * Prints a table and merges the numbers into bench/results/<date>.json. Numbers, not assertions.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn } from "node:child_process";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 200);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 2000);
const CLI = path.resolve("bin/switchyard");
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-live-"));
const baseEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "warn", TASK_POLL_INTERVAL_MS: "1000", SIMULATOR_STEP_MS: "1000" };

function start(args: string[], env: Record<string, string>, ready: RegExp) {
  const child = spawn(CLI, args, { env: { ...baseEnv, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  return new Promise<{ child: typeof child; match: RegExpMatchArray }>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      out += d;
      const match = out.match(ready);
      if (match) resolve({ child, match });
    });
    child.on("exit", (code) => reject(new Error(`${args.join(" ")} exited ${code}: ${out}`)));
  });
}

function rssKb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
}

const keyRun = spawn(CLI, ["keys", "create", "--name", "bench", "--balance", "1000000", "--json"], { env: baseEnv });
let keyOut = "";
keyRun.stdout.on("data", (d) => (keyOut += d));
await new Promise((r) => keyRun.on("close", r));
const { key } = JSON.parse(keyOut.trim());

const subgraphs = await start(["start", "generation,cloud"], { GENERATION_PORT: "4711", CLOUD_PORT: "4712" }, /Cloud subgraph:/);
const router = await start(
  ["start", "router"],
  { PORT: "4710", GENERATION_URL: "http://127.0.0.1:4711/graphql", CLOUD_URL: "http://127.0.0.1:4712/graphql" },
  /Switchyard router:\s+(\S+)/,
);
const url = router.match[1]!;
const wsUrl = `${url.replace(/^http/, "ws")}/graphql`;

// Event latency.
const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${key}` } });
const waiting = new Map<string, (t: number) => void>();
const early = new Map<string, number>();
client.subscribe(
  { query: "subscription { tasks { id statusCode } }" },
  {
    next: (value: any) => {
      const id = value.data?.tasks?.id;
      const now = performance.now();
      const resolve = waiting.get(id);
      if (resolve) {
        waiting.delete(id);
        resolve(now);
      } else if (id && !early.has(id)) early.set(id, now);
    },
    error: (e) => console.error("subscription error", e),
    complete: () => {},
  },
);
await new Promise((r) => setTimeout(r, 500));
const latencies: number[] = [];
for (let i = 0; i < EVENTS + 10; i++) {
  const sent = performance.now();
  const response = await fetch(`${url}/api/v1/video/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ prompt: "bench", model_id: 52 }),
  });
  const id = (await response.json()).data.task_id as string;
  const received = early.get(id) ?? (await new Promise<number>((resolve) => waiting.set(id, resolve)));
  if (i >= 10) latencies.push(received - sent);
}
await client.dispose();
latencies.sort((a, b) => a - b);
const q = (p: number) => +latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(2);

// Memory per idle subscription.
await new Promise((r) => setTimeout(r, 1000));
const before = rssKb(router.child.pid!);
const clients = [];
for (let i = 0; i < SUBSCRIBERS; i++) {
  const c = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${key}` } });
  const acked = new Promise<void>((resolve) => c.on("connected", () => resolve()));
  c.subscribe({ query: "subscription { tasks { id } }" }, { next: () => {}, error: () => {}, complete: () => {} });
  clients.push(acked.then(() => c));
}
const opened = await Promise.all(clients);
await new Promise((r) => setTimeout(r, 2000));
const after = rssKb(router.child.pid!);
for (const c of opened) await c.dispose();

router.child.kill("SIGTERM");
subgraphs.child.kill("SIGTERM");
fs.rmSync(dataDir, { recursive: true, force: true });

const live = {
  event_latency_ms: { n: latencies.length, median: q(0.5), p99: q(0.99) },
  idle_subscription_memory: { subscribers: SUBSCRIBERS, router_rss_before_kb: before, router_rss_after_kb: after, kb_per_subscription: +((after - before) / SUBSCRIBERS).toFixed(2) },
};
console.log(`\nLive graph (router in its own process; subgraphs in another)\n`);
console.log(`event latency, REST submission → tasks subscriber via router, n=${latencies.length}: median ${live.event_latency_ms.median} ms, p99 ${live.event_latency_ms.p99} ms`);
console.log(`idle subscriptions: ${SUBSCRIBERS} → router RSS ${before} kB → ${after} kB = ${live.idle_subscription_memory.kb_per_subscription} kB per subscription`);
const file = path.join("bench", "results", `${new Date().toISOString().slice(0, 10)}.json`);
const existing = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
fs.writeFileSync(file, JSON.stringify({ ...existing, live }, null, 2));
console.log(`\nwrote ${file}`);
process.exit(0);
