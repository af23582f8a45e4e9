/**
 * The live scenario (bench/README.md): 10,000 graphql-ws subscribers on one router by default, held by
 * two subscriber processes (bench/live-worker.ts), each subscribed to `tasks` with one of
 * `keys` keys (a subscriber sees only its key's tasks). Submissions at a steady rate then make
 * every task go 0 → 4 → 0 → 3 → 1 (the simulator), and every status change must reach every
 * subscriber of its key. Measured: delivery latency (arrival − the change's `updatedAt`, same
 * machine clock), submission → first event, missed events, and router RSS per subscriber.
 */
import { fork, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import pLimit from "p-limit";
import { ROOT, createBenchDatabase, rssKb, startServer, type Topology } from "./server.ts";
import { createBenchKeys, withDb, type BenchKey } from "./seed.ts";
import { round } from "./load.ts";
import type { FromWorker, ToWorker, WorkerReport } from "./live-worker.ts";

/** Settings of the live scenario. */
export interface LiveOptions {
  topology: Topology;
  subscribers: number;
  /** Keys the subscribers are spread over (subscribers / keys per key). */
  keys: number;
  /** Submissions per second while measuring, and for how many seconds. */
  rate: number;
  seconds: number;
  /** Simulator step and poll interval of the server, ms (how fast a task moves). */
  stepMs: number;
  /** Extra server environment (REDIS_URL...). */
  env: Record<string, string>;
  /** Progress lines. */
  log?: (message: string) => void;
}

/** What the live scenario measured. */
export interface LiveResult {
  subscribers: number;
  subscribed: number;
  failedToSubscribe: number;
  /** Keys with a subscriber that received no warm-up event in 60 s (its subscription never went live). */
  silentKeys: number;
  tasks: number;
  submitErrors: number;
  delivered: number;
  missed: number;
  duplicates: number;
  brokenSockets: number;
  /** Tasks whose terminal event had not reached every subscriber of their key 60 s after the last submission. */
  unfinished: number;
  /** Deliveries per second over the measured window. */
  deliveriesPerSecond: number;
  delivery: { p50: number; p99: number; max: number };
  submitToFirstEvent: { p50: number; p99: number };
  rss: { beforeKb: number; subscribedKb: number; afterKb: number; kbPerSubscriber: number | null };
  /** Router CPU (`/proc`, user + system): per subscriber while they connected and subscribed, and per delivery over the measured window (submissions included). */
  routerCpu: { msPerSubscriber: number; msPerDelivery: number };
  /** True when anything failed (subscription, submission, a missed or broken delivery). */
  failed: boolean;
}

/** A forked subscriber process; each request gets exactly one answer, in order. */
class Worker {
  private readonly child: ChildProcess;
  private readonly waiting: { resolve: (message: FromWorker) => void; reject: (error: Error) => void }[] = [];
  constructor() {
    this.child = fork(path.join(ROOT, "bench", "live-worker.ts"), [], {
      cwd: ROOT,
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.child.on("message", (message: FromWorker) => this.waiting.shift()?.resolve(message));
    this.child.on("exit", (code, signal) => {
      for (const { reject } of this.waiting.splice(0)) reject(new Error(`live worker exited (${code ?? signal}) before answering`));
    });
  }
  ask<T extends FromWorker["type"]>(message: ToWorker): Promise<Extract<FromWorker, { type: T }>> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve: resolve as (message: FromWorker) => void, reject });
      this.child.send(message);
    });
  }
  kill() {
    if (this.child.exitCode === null) this.child.kill("SIGKILL");
  }
}

/** Open files this process may hold (the soft limit children inherit), from /proc/self/limits. */
function openFileLimit(): number {
  const limits = fs.readFileSync("/proc/self/limits", "utf8");
  const soft = /Max open files\s+(\S+)/.exec(limits)?.[1];
  return soft === undefined || soft === "unlimited" ? Infinity : Number(soft);
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!, 1);
}

/**
 * With BENCH_HEAP_SNAPSHOTS=<dir> (the server started with BENCH_SERVER_NODE_OPTIONS=
 * "--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=<dir>"): asks the router for a heap snapshot
 * and waits until the file is complete, then renames it `<label>.heapsnapshot`
 * (bench/heap-diff.mjs compares two). Taking one grows the RSS: read the RSS figures from a run
 * without snapshots.
 */
async function heapSnapshot(pid: number, label: string): Promise<void> {
  const dir = process.env.BENCH_HEAP_SNAPSHOTS;
  if (!dir) return;
  const before = new Set(fs.readdirSync(dir));
  process.kill(pid, "SIGUSR2");
  for (let waited = 0; waited < 120_000; waited += 500) {
    await new Promise((r) => setTimeout(r, 500));
    const file = fs.readdirSync(dir).find((f) => f.endsWith(".heapsnapshot") && !before.has(f));
    if (!file) continue;
    // Written in one go by the main thread: complete once its size holds still for a second.
    const size = fs.statSync(path.join(dir, file)).size;
    await new Promise((r) => setTimeout(r, 1000));
    if (fs.statSync(path.join(dir, file)).size === size && size > 0) {
      fs.renameSync(path.join(dir, file), path.join(dir, `${label}.heapsnapshot`));
      return;
    }
  }
  throw new Error(`no heap snapshot from ${pid} in ${dir} after 120 s`);
}

/**
 * With BENCH_GC_DIR=<dir> (the server preloading bench/gc-on-signal.mjs with --expose-gc): asks
 * the router for two full collections and waits for its memory figures, kept as `<label>.json`,
 * so the RSS read next holds live objects, not garbage not yet collected.
 */
async function collectGarbage(pid: number, label: string): Promise<void> {
  const dir = process.env.BENCH_GC_DIR;
  if (!dir) return;
  const before = new Set(fs.readdirSync(dir));
  process.kill(pid, "SIGUSR2");
  for (let waited = 0; waited < 30_000; waited += 100) {
    await new Promise((r) => setTimeout(r, 100));
    const file = fs.readdirSync(dir).find((f) => f.startsWith(`memory-${pid}-`) && f.endsWith(".json") && !before.has(f));
    if (file) {
      fs.renameSync(path.join(dir, file), path.join(dir, `${label}.json`));
      return;
    }
  }
  throw new Error(`no memory figures from ${pid} in ${dir} after 30 s`);
}

const wall = () => performance.timeOrigin + performance.now();

/**
 * With BENCH_LIVE_IDLE_SECONDS=<n>: leaves the router idle (subscribers connected, no events) for n
 * seconds and logs its RSS each second, no GC forced: what V8's own memory reducer gives back.
 */
async function idleRss(pid: number, beforeKb: number, subscribers: number, log: (message: string) => void): Promise<void> {
  const seconds = Number(process.env.BENCH_LIVE_IDLE_SECONDS ?? 0);
  const readings: number[] = [];
  for (let i = 0; i < seconds; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    readings.push(rssKb(pid));
  }
  if (readings.length === 0) return;
  const perSubscriber = (kb: number) => round((kb - beforeKb) / Math.max(1, subscribers), 1);
  log(
    `  idle ${seconds} s: router RSS ${readings.map((kb) => Math.round(kb / 1024)).join(" ")} MB; last ${perSubscriber(readings.at(-1)!)} KB per subscriber, lowest ${perSubscriber(Math.min(...readings))}`,
  );
}

/** CPU time a process has used, user + system, ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Runs the live scenario on a fresh database and server of its own.
 * @returns the measurements; `failed` when anything was lost or refused
 * @throws Error when the server or the workers cannot start
 */
export async function runLive(options: LiveOptions): Promise<LiveResult> {
  const log = options.log ?? (() => undefined);
  // The router process holds one socket per subscriber (plus its subgraph connections and, in the
  // single topology, the subgraphs' side); each worker half the client sockets.
  const needed = options.subscribers + 2 * options.keys + 1000;
  if (openFileLimit() < needed) {
    throw new Error(
      `live: ${options.subscribers} subscribers need about ${needed} open files per process; raise the limit (ulimit -n ${needed}) or lower BENCH_LIVE_SUBSCRIBERS`,
    );
  }
  const database = await createBenchDatabase("live");
  const keys: BenchKey[] = await withDb(database, (db) => createBenchKeys(db, options.keys, "bench-live"));
  const step = String(options.stepMs);
  const server = await startServer(options.topology, { ...options.env, ...database.env, SIMULATOR_STEP_MS: step, TASK_POLL_INTERVAL_MS: step });
  const workers = [new Worker(), new Worker()];
  try {
    const submit = async (keyIndex: number) => {
      const response = await fetch(`${server.url}/api/v1/video/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${keys[keyIndex]!.key}`, "content-type": "application/json" },
        body: JSON.stringify({ prompt: "bench live", model_id: 52, seconds: 5 }),
      });
      const body = (await response.json().catch(() => null)) as { data?: { task_id?: string } } | null;
      return response.ok && body?.data?.task_id ? body.data.task_id : null;
    };
    // Warm the router (first-request compilation) before the RSS baseline.
    await submit(0);
    await collectGarbage(server.routerPid, "before");
    const beforeKb = rssKb(server.routerPid);
    await heapSnapshot(server.routerPid, "before");

    // Subscribers: key k → worker k % 2, subscribers spread evenly over the keys.
    const plans: { keyIndex: number; key: string }[][] = workers.map(() => []);
    for (let i = 0; i < options.subscribers; i++) {
      const keyIndex = i % keys.length;
      plans[keyIndex % workers.length]!.push({ keyIndex, key: keys[keyIndex]!.key });
    }
    const wsUrl = `${server.url.replace(/^http/, "ws")}/graphql`;
    const cpuBeforeSubscribing = cpuMs(server.routerPid);
    const opened = await Promise.all(workers.map((w, i) => w.ask<"opened">({ type: "open", wsUrl, subscribers: plans[i]!, concurrency: 250 })));
    const subscribed = opened.reduce((n, o) => n + o.acked, 0);
    const failedToSubscribe = opened.reduce((n, o) => n + o.failed, 0);
    const subscribeCpuMs = cpuMs(server.routerPid) - cpuBeforeSubscribing;
    log(`  ${subscribed} subscribed, ${failedToSubscribe} failed; router CPU ${round(subscribeCpuMs / Math.max(1, subscribed), 3)} ms per subscriber`);

    // A subscription is live once it has received an event: submit for every key whose
    // subscribers have not all had one, until none is left (at most 60 s).
    const warmTasks: { id: string; keyIndex: number }[] = [];
    const confirmDeadline = Date.now() + 60_000;
    for (;;) {
      const answers = await Promise.all(workers.map((w) => w.ask<"unconfirmed">({ type: "unconfirmed" })));
      const unconfirmed = [...new Set(answers.flatMap((a) => a.keyIndexes))];
      if (unconfirmed.length === 0 || Date.now() > confirmDeadline) break;
      const limit = pLimit(8);
      await Promise.all(
        unconfirmed.map((keyIndex) =>
          limit(async () => {
            const id = await submit(keyIndex);
            if (id) warmTasks.push({ id, keyIndex });
          }),
        ),
      );
      await waitFor(
        async () => (await Promise.all(workers.map((w) => w.ask<"unconfirmed">({ type: "unconfirmed" })))).every((a) => a.keyIndexes.length === 0),
        10_000,
      );
    }
    const silentKeys = new Set((await Promise.all(workers.map((w) => w.ask<"unconfirmed">({ type: "unconfirmed" })))).flatMap((a) => a.keyIndexes)).size;
    if (silentKeys > 0) log(`  ${silentKeys} keys still have a subscriber that never received an event (60 s)`);
    // Let the warm-up tasks finish, so the measured window carries only its own events.
    if (!(await waitFor(async () => (await pendingCount(workers, warmTasks)) === 0, 30_000))) {
      log(`  warm-up: ${await pendingCount(workers, warmTasks)} of ${warmTasks.length} tasks did not finish at every subscriber in 30 s`);
    }
    await collectGarbage(server.routerPid, "subscribed");
    const subscribedKb = rssKb(server.routerPid);
    await heapSnapshot(server.routerPid, "subscribed");
    await idleRss(server.routerPid, beforeKb, subscribed, log);
    log(`  every subscription live (${warmTasks.length} warm-up tasks); measuring`);

    const markAt = wall();
    const cpuAtMark = cpuMs(server.routerPid);
    await Promise.all(workers.map((w) => w.ask<"marked">({ type: "mark", at: markAt })));
    const total = Math.round(options.rate * options.seconds);
    const tasks: { id: string; keyIndex: number; sentAt: number }[] = [];
    let submitErrors = 0;
    const started = wall();
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / options.rate;
      const wait = due - wall();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait)); // pacing the submission rate
      const keyIndex = i % keys.length;
      const sentAt = wall();
      inFlight.push(
        submit(keyIndex).then(
          (id) => void (id ? tasks.push({ id, keyIndex, sentAt }) : submitErrors++),
          () => void submitErrors++,
        ),
      );
    }
    await Promise.all(inFlight);
    log(`  ${tasks.length} submitted (${new Date(started).toISOString()} → ${new Date(wall()).toISOString()}); waiting for every delivery`);
    // Done when every subscriber of each task's key has its terminal event (or 60 s passed).
    await waitFor(async () => (await pendingCount(workers, tasks)) === 0, 60_000);
    const unfinished = await pendingCount(workers, tasks);
    if (unfinished > 0) log(`  ${unfinished} of ${tasks.length} tasks did not finish at every subscriber in 60 s`);
    const windowSeconds = (wall() - markAt) / 1000;
    const windowCpuMs = cpuMs(server.routerPid) - cpuAtMark;
    const afterKb = rssKb(server.routerPid);
    const reports = (await Promise.all(workers.map((w) => w.ask<"report">({ type: "report", tasks })))).map((r) => r.report);
    await Promise.all(workers.map((w) => w.ask<"closed">({ type: "close" })));

    const merged = mergeReports(reports);
    const routerCpu = {
      msPerSubscriber: round(subscribeCpuMs / Math.max(1, subscribed), 3),
      msPerDelivery: round(windowCpuMs / Math.max(1, merged.delivered), 3),
    };
    log(`  router CPU ${routerCpu.msPerDelivery} ms per delivery over the window (${merged.delivered} deliveries)`);
    const delivery = Float64Array.from(merged.deliveryMs).sort();
    const first = Float64Array.from(merged.firstEventMs).sort();
    const result: LiveResult = {
      subscribers: options.subscribers,
      subscribed,
      failedToSubscribe,
      silentKeys,
      tasks: tasks.length,
      submitErrors,
      delivered: merged.delivered,
      missed: merged.missed,
      duplicates: merged.duplicates,
      brokenSockets: merged.broken,
      unfinished,
      deliveriesPerSecond: round(merged.delivered / windowSeconds, 0),
      delivery: { p50: percentile([...delivery], 0.5), p99: percentile([...delivery], 0.99), max: round(delivery[delivery.length - 1] ?? NaN, 1) },
      submitToFirstEvent: { p50: percentile([...first], 0.5), p99: percentile([...first], 0.99) },
      // A delta at or below zero means a garbage collection outweighed the subscribers: no figure.
      rss: { beforeKb, subscribedKb, afterKb, kbPerSubscriber: subscribedKb > beforeKb ? round((subscribedKb - beforeKb) / Math.max(1, subscribed), 1) : null },
      routerCpu,
      failed: false,
    };
    result.failed =
      subscribed !== options.subscribers ||
      silentKeys > 0 ||
      submitErrors > 0 ||
      unfinished > 0 ||
      merged.missed > 0 ||
      merged.duplicates > 0 ||
      merged.broken > 0 ||
      merged.delivered === 0;
    return result;
  } finally {
    for (const w of workers) w.kill();
    await server.stop();
    await database.drop();
  }
}

async function pendingCount(workers: Worker[], tasks: { id: string; keyIndex: number }[]): Promise<number> {
  const answers = await Promise.all(workers.map((w) => w.ask<"pending">({ type: "pending", tasks })));
  return answers.reduce((n, a) => n + a.count, 0);
}

/** Polls `done` every 100 ms until it holds or `timeoutMs` passed. @returns whether it held */
async function waitFor(done: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await done()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function mergeReports(reports: WorkerReport[]): WorkerReport {
  return {
    subscribers: reports.reduce((n, r) => n + r.subscribers, 0),
    deliveryMs: reports.flatMap((r) => r.deliveryMs),
    firstEventMs: reports.flatMap((r) => r.firstEventMs),
    delivered: reports.reduce((n, r) => n + r.delivered, 0),
    missed: reports.reduce((n, r) => n + r.missed, 0),
    duplicates: reports.reduce((n, r) => n + r.duplicates, 0),
    broken: reports.reduce((n, r) => n + r.broken, 0),
  };
}
