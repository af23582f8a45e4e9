/**
 * The write scenario (bench/README.md): `POST /api/v1/video/generations` under load on a fresh
 * database with the embedded simulator, then the money checks: the key's balance equals its
 * opening balance minus what it spent, what it spent equals its tasks times the price, and
 * `switchyard verify` (every balance recomputed from the ledger, every task's debit) exits 0.
 * Options: the load spread over many keys, and two `switchyard start` processes on one database
 * (PostgreSQL + Redis) sharing the connections. Run directly on PostgreSQL it also runs pgbench in
 * the same run (issue 25 §2): `DATABASE_URL=postgres://… REDIS_URL=… node --import tsx bench/write.ts [seconds=10] [connections=32]`.
 */
import { execFileSync } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { createBenchDatabase, runCli, startServer, type Topology } from "./server.ts";
import { KEY_BALANCE, withDb, type BenchKey } from "./seed.ts";
import { createKeyAudited } from "../src/auth/keys.ts";
import { CLI_ACTOR } from "../src/audit/log.ts";
import type { Db } from "../src/db/index.ts";
import { round, runLoad, type LoadResult } from "./load.ts";
import { formatYuan, parseYuan } from "../src/money.ts";
import type { WriteResult } from "./report.ts";

const BODY = JSON.stringify({ prompt: "bench write", model_id: 52, seconds: 5 });
const VIEWER = "{ viewer { balance { amount } spent { amount } tasks { totalCount } } }";

/**
 * Runs the write scenario on a database and server of its own.
 * @param settings connections and seconds of the load; `env` extra server settings
 * @returns throughput, the client-seen and stored counts, and the money checks
 */
export async function runWrite(settings: {
  topology: Topology;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  env: Record<string, string>;
  /** Keys the load is spread over, one per request in turn (default 1). */
  keys?: number;
  /** `switchyard start` processes on the one database, each taking its share of the connections (default 1). */
  processes?: number;
}): Promise<WriteResult> {
  const database = await createBenchDatabase("write");
  const keys = await withDb(database, (db) => createAuditedKeys(db, settings.keys ?? 1));
  const servers: Awaited<ReturnType<typeof startServer>>[] = [];
  let stopped = false;
  try {
    // One after the other: each applies the migrations it finds missing.
    for (let i = 0; i < (settings.processes ?? 1); i++) servers.push(await startServer(settings.topology, { ...settings.env, ...database.env }));
    let accepted = 0;
    let price: number | null = null;
    let mixedPrices = false;
    const amountPattern = /"amount":([0-9.]+)/;
    let turn = 0;
    const headersOf = (key: string) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });
    const share = Math.max(1, Math.floor(settings.connections / servers.length));
    const loads = await Promise.all(
      servers.map((server) =>
        runLoad({
          url: `${server.url}/api/v1/video/generations`,
          method: "POST",
          headers: headersOf(keys[0]!.key),
          // The write scenario's many keys: a key per request, in turn.
          ...(keys.length > 1 ? { nextHeaders: () => headersOf(keys[turn++ % keys.length]!.key) } : {}),
          body: BODY,
          connections: share,
          durationSeconds: settings.durationSeconds,
          warmupSeconds: settings.warmupSeconds,
          serverPids: server.pids,
          verify: (body) => {
            const amount = body.startsWith('{"code":200') && body.includes('"task_id"') ? amountPattern.exec(body)?.[1] : undefined;
            if (amount === undefined) return false;
            const milli = parseYuan(amount);
            if (price !== null && price !== milli) mixedPrices = true;
            price = milli;
            accepted++;
            return true;
          },
        }),
      ),
    );
    const load = combine(loads);
    // Answers cut off when the load stopped may still be committing: read until two reads agree.
    const readViewer = async (key: string) => {
      const response = await fetch(`${servers[0]!.url}/graphql`, {
        method: "POST",
        headers: { ...headersOf(key), accept: "application/json" },
        body: JSON.stringify({ query: VIEWER }),
      });
      return JSON.stringify(((await response.json()) as { data?: { viewer?: unknown } } | null)?.data?.viewer ?? null);
    };
    let balance = 0;
    let spent = 0;
    let tasksInDb = 0;
    let ledgerExact = !mixedPrices && price !== null;
    for (const key of keys) {
      let previous = "";
      let current = await readViewer(key.key);
      for (let i = 0; i < 50 && current !== previous; i++) [previous, current] = [current, await readViewer(key.key)];
      const viewer = JSON.parse(current);
      if (!viewer) throw new Error(`viewer query failed after the write load: ${current}`);
      const keyBalance = parseYuan(viewer.balance.amount);
      const keySpent = parseYuan(viewer.spent.amount);
      const keyTasks = Number(viewer.tasks.totalCount);
      if (keyBalance !== KEY_BALANCE - keySpent || keySpent !== keyTasks * (price ?? 0)) ledgerExact = false;
      balance += keyBalance;
      spent += keySpent;
      tasksInDb += keyTasks;
    }
    for (const server of servers) await server.stop();
    stopped = true;
    const verify = await runCli(["verify"], database.env);
    return {
      load,
      accepted,
      tasksInDb,
      price: price === null ? "-" : formatYuan(price),
      initialBalance: formatYuan(KEY_BALANCE * keys.length),
      balance: formatYuan(balance),
      spent: formatYuan(spent),
      ledgerExact,
      verifyExit: verify.code,
      verifyOutput: verify.output.trim().slice(-2000),
      database: database.databaseUrl ? "postgres" : "sqlite",
      // Every submission the client saw accepted must be stored; a few more may be stored whose
      // answers were cut off when the load stopped (at most one per connection).
      failed: load.failed || !ledgerExact || verify.code !== 0 || tasksInDb < accepted || tasksInDb > accepted + settings.connections * 2,
    };
  } finally {
    if (!stopped) for (const server of servers) await server.stop();
    await database.drop();
  }
}

/**
 * Keys with {@link KEY_BALANCE} each, made as `keys create` makes them: with the audit row that
 * `verify` asks of an opening balance.
 */
async function createAuditedKeys(db: Db, count: number): Promise<BenchKey[]> {
  const keys: BenchKey[] = [];
  for (let i = 0; i < count; i++) {
    const { created } = await createKeyAudited(db, CLI_ACTOR, { name: `bench-write-${i}`, balance: KEY_BALANCE });
    keys.push({ id: created.id, key: created.key, accountId: created.account_id });
  }
  return keys;
}

/** The loads of several processes as one: throughputs and requests add up, CPU per request over all, the worst latencies. */
function combine(loads: LoadResult[]): LoadResult {
  if (loads.length === 1) return loads[0]!;
  const requests = loads.reduce((n, l) => n + l.requests, 0);
  const cpu = loads.every((l) => l.cpuMsPerRequest !== null) ? loads.reduce((n, l) => n + l.cpuMsPerRequest! * l.requests, 0) / requests : null;
  return {
    rps: loads.reduce((n, l) => n + l.rps, 0),
    p50: Math.max(...loads.map((l) => l.p50)),
    p99: Math.max(...loads.map((l) => l.p99)),
    max: Math.max(...loads.map((l) => l.max)),
    requests,
    non2xx: loads.reduce((n, l) => n + l.non2xx, 0),
    errors: loads.reduce((n, l) => n + l.errors, 0),
    mismatches: loads.reduce((n, l) => n + l.mismatches, 0),
    connections: loads.reduce((n, l) => n + l.connections, 0),
    seconds: Math.max(...loads.map((l) => l.seconds)),
    cpuMsPerRequest: cpu === null ? null : round(cpu, 2),
    failed: loads.some((l) => l.failed),
  };
}

/**
 * pgbench on the same PostgreSQL server (issue 25 §2's yardstick): `pgbench -i -s 10` into a
 * database of its own, then `pgbench -c 8 -j 2 -T <seconds>` (TPC-B-like), then the database dropped.
 * @returns the transactions per second pgbench reports
 */
export async function runPgbench(seconds = 10): Promise<number> {
  const database = await createBenchDatabase("pgbench");
  try {
    const url = database.databaseUrl!;
    execFileSync("pgbench", ["-i", "-s", "10", "-q", url], { stdio: "ignore" });
    const out = execFileSync("pgbench", ["-c", "8", "-j", "2", "-T", String(seconds), url], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    const tps = /tps = ([0-9.]+)/.exec(out)?.[1];
    if (!tps) throw new Error(`pgbench printed no tps: ${out}`);
    return Number(tps);
  } finally {
    await database.drop();
  }
}

const load = () => os.loadavg()[0]!.toFixed(2);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!/^postgres(ql)?:/i.test(process.env.DATABASE_URL ?? ""))
    throw new Error("bench/write.ts run directly measures PostgreSQL: set DATABASE_URL=postgres://…");
  const seconds = Number(process.argv[2] ?? 10);
  const connections = Number(process.argv[3] ?? 32);
  const lines: string[] = [];
  const loadBefore = load();
  const pgbench = await runPgbench(seconds);
  lines.push(`| pgbench -s 10 -c 8 -j 2 -T ${seconds} | ${loadBefore} → ${load()} | ${round(pgbench, 0)} TPS | | | | |`);
  for (const [keys, processes] of [
    [1, 1],
    [100, 1],
    [1, 2],
    [100, 2],
  ] as const) {
    const before = load();
    const result = await runWrite({ topology: "single", connections, durationSeconds: seconds, warmupSeconds: 2, env: {}, keys, processes });
    lines.push(
      `| ${keys} key${keys > 1 ? "s" : ""}, ${processes} process${processes > 1 ? "es" : ""} | ${before} → ${load()} | ${result.load.rps}/s | **${round(result.load.rps / pgbench, 3)}x** | ${result.load.cpuMsPerRequest} | ${result.load.p50} / ${result.load.p99} | verify exit ${result.verifyExit}, ledger ${result.ledgerExact ? "exact" : "NOT exact"}, ${result.tasksInDb} tasks / ${result.accepted} accepted${result.failed ? ", FAILED" : ""} |`,
    );
    if (result.verifyExit !== 0) console.error(result.verifyOutput);
  }
  console.log(`| run | load | throughput | ÷ pgbench | server CPU ms/request | p50 / p99 ms | checks |\n|---|---|---:|---:|---:|---|---|\n${lines.join("\n")}`);
}
