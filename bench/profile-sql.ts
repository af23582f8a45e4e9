/**
 * Counts what one request costs the database and Redis (issue 25 §1 and §2, bench/README.md
 * "Round 3"): runs the whole stack in this process (bin/stack.ts, every role) on a fresh bench
 * database (PostgreSQL with DATABASE_URL, else SQLite; Redis with REDIS_URL), then sends requests
 * one at a time and then `concurrency` at a time, and reports per request: SQL statements and
 * transactions run on behalf of the HTTP request (an AsyncLocalStorage scope per `request` event,
 * as test/support/sql-count.ts does), the background loops' statements in the same window (outbox
 * dispatch, poller, simulator), time from each statement's send to its answer, pool waits (tarn's
 * acquire events), Redis commands, and this process's CPU (it also runs the HTTP client: fetch).
 * Usage: `node --import tsx bench/profile-sql.ts submit|dashboard [requests=400] [concurrency=32]`.
 */
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import { AsyncLocalStorage } from "node:async_hooks";
import { Redis } from "ioredis";
import { startBenchStack } from "./in-process.ts";
import { createBenchDatabase } from "./server.ts";
import { createBenchKeys, seedToScale, withDb } from "./seed.ts";
import { DASHBOARD_QUERY } from "./scenarios.ts";

const mode = process.argv[2] === "dashboard" ? "dashboard" : "submit";
const total = Number(process.argv[3] ?? 400);
const concurrency = Number(process.argv[4] ?? 32);

const database = await createBenchDatabase(`sql${mode}`);
const key =
  mode === "dashboard" ? (await seedToScale(database, 1)).keys[0]!.key : (await withDb(database, (db) => createBenchKeys(db, 1, "bench-sql")))[0]!.key;
const stack = await startBenchStack(database, "sql");
const db = stack.db!;

// Every statement, tagged with whether an HTTP request of this process ran it.
const scope = new AsyncLocalStorage<true>();
const originalEmit = http.Server.prototype.emit;
http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
  if (event !== "request") return originalEmit.call(this, event, ...args);
  return scope.run(true, () => originalEmit.call(this, event, ...args));
} as typeof http.Server.prototype.emit;

interface Tally {
  request: number;
  background: number;
  transactions: number;
  outbox: number;
  statementUs: number;
  poolWaits: number;
  poolWaitUs: number;
  redis: Map<string, number>;
  kinds: Map<string, number>;
  backgroundKinds: Map<string, number>;
}
let tally: Tally;
const reset = () =>
  (tally = {
    request: 0,
    background: 0,
    transactions: 0,
    outbox: 0,
    statementUs: 0,
    poolWaits: 0,
    poolWaitUs: 0,
    redis: new Map(),
    kinds: new Map(),
    backgroundKinds: new Map(),
  });
reset();
const started = new Map<string, bigint>();
db.on("query", (query: { sql: string; __knexQueryUid: string }) => {
  const inRequest = scope.getStore() === true;
  if (inRequest) tally.request++;
  else tally.background++;
  const sql = query.sql.trim();
  if (/^begin|^BEGIN/i.test(sql)) tally.transactions++;
  if (/outbox/i.test(sql)) tally.outbox++;
  const kind = sql
    .replace(/\s+/g, " ")
    .replace(/\$\d+|\?/g, "?")
    .slice(0, 90);
  const kinds = inRequest ? tally.kinds : tally.backgroundKinds;
  kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  started.set(query.__knexQueryUid, process.hrtime.bigint());
});
const done = (_: unknown, query: { __knexQueryUid: string }) => {
  const at = started.get(query.__knexQueryUid);
  if (at !== undefined) tally.statementUs += Number(process.hrtime.bigint() - at) / 1000;
  started.delete(query.__knexQueryUid);
};
db.on("query-response", done);
db.on("query-error", (_: unknown, query: { __knexQueryUid: string }) => done(undefined, query));
// tarn's pool (knex.client.pool): the time between asking for a connection and getting one.
const pool = (db as unknown as { client: { pool: { on(event: string, fn: (id: number) => void): void } } }).client.pool;
const asked = new Map<number, bigint>();
pool.on("acquireRequest", (id) => asked.set(id, process.hrtime.bigint()));
pool.on("acquireSuccess", (id) => {
  const at = asked.get(id);
  asked.delete(id);
  if (at === undefined) return;
  const us = Number(process.hrtime.bigint() - at) / 1000;
  tally.poolWaitUs += us;
  if (us > 100) tally.poolWaits++;
});
const sendCommand = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, command: { name: string }, ...rest: unknown[]) {
  tally.redis.set(command.name, (tally.redis.get(command.name) ?? 0) + 1);
  return (sendCommand as (...a: unknown[]) => unknown).call(this, command, ...rest);
} as typeof Redis.prototype.sendCommand;

const send = async () => {
  const response =
    mode === "submit"
      ? await fetch(`${stack.url}/api/v1/video/generations`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ prompt: "bench sql", model_id: 52, seconds: 5 }),
        })
      : await fetch(`${stack.url}/graphql`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ query: DASHBOARD_QUERY }),
        });
  const text = await response.text();
  if (!response.ok || text.includes('"errors"')) throw new Error(`HTTP ${response.status}: ${text.slice(0, 300)}`);
};
const pass = async (count: number, inFlight: number) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < count) await send();
    }),
  );
};

/** PostgreSQL's own count of this database's commits and rollbacks (every autocommit statement too). */
const commits = async (): Promise<number | null> => {
  if (!database.databaseUrl) return null;
  // The statistics reach pg_stat_database at most once a second per backend.
  await new Promise((resolve) => setTimeout(resolve, 1200));
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: database.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query("select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()");
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
};

/**
 * CPU of the PostgreSQL server on this machine, ms (/proc: the postmaster with its reaped
 * children, plus its live children); null when it is not local. Counts every database's work.
 */
const postgresCpuMs = (): number | null => {
  try {
    const ticks = (pid: string, fields: number[]) => {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return fields.reduce((sum, f) => sum + Number(after[f - 3]), 0);
    };
    const pids = fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p));
    const isPostgres = (pid: string) => {
      try {
        return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres";
      } catch {
        return false;
      }
    };
    const parentOf = (pid: string) => fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[1]!;
    const postmaster = pids.find((p) => isPostgres(p) && !isPostgres(parentOf(p)));
    if (!postmaster) return null;
    let total = ticks(postmaster, [14, 15, 16, 17]);
    for (const pid of pids) {
      try {
        if (isPostgres(pid) && parentOf(pid) === postmaster) total += ticks(pid, [14, 15]);
      } catch {
        // Exited meanwhile: its time is in the postmaster's reaped children.
      }
    }
    return (total * 1000) / 100; // USER_HZ 100
  } catch {
    return null;
  }
};

const report = async (label: string, count: number, inFlight: number) => {
  const commitsBefore = await commits();
  reset();
  const pgCpu = postgresCpuMs();
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const startUs = Number(process.hrtime.bigint() / 1000n);
  await pass(count, inFlight);
  const endUs = Number(process.hrtime.bigint() / 1000n);
  const seconds = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu);
  const pgCpuAfter = postgresCpuMs();
  const commitsAfter = await commits();
  // PROFILE_WINDOW=<dir> (with node --cpu-prof): the pass's window for bench/profile-buckets.mjs.
  if (process.env.PROFILE_WINDOW)
    fs.writeFileSync(
      `${process.env.PROFILE_WINDOW}/window-${process.pid}-${label}.json`,
      JSON.stringify({
        pid: process.pid,
        startUs,
        endUs,
        requests: count,
        rps: Math.round(count / seconds),
        cpuMsPerRequest: (used.user + used.system) / 1000 / count,
        loadBefore: os.loadavg(),
        loadAfter: os.loadavg(),
      }),
    );
  const per = (n: number) => (n / count).toFixed(2);
  console.log(`\n### ${mode}, ${label}: ${count} requests, ${inFlight} in flight, ${(count / seconds).toFixed(0)}/s, load ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(`- process CPU (server + fetch client) ${((used.user + used.system) / 1000 / count).toFixed(2)} ms/request`);
  console.log(
    `- statements in the request ${per(tally.request)}, transactions ${per(tally.transactions)} (all), background statements ${per(tally.background)}, outbox statements ${per(tally.outbox)}`,
  );
  if (pgCpu !== null && pgCpuAfter !== null)
    console.log(`- PostgreSQL server CPU (/proc, every backend and database on the server) ${((pgCpuAfter - pgCpu) / count).toFixed(2)} ms/request`);
  if (commitsBefore !== null && commitsAfter !== null)
    console.log(
      `- PostgreSQL commits of this database (pg_stat_database, every loop and statement, less 1 for the reading): ${per(commitsAfter - commitsBefore - 1)}/request`,
    );
  console.log(
    `- statement send→answer ${(tally.statementUs / 1000 / count).toFixed(2)} ms/request (sum, overlaps at concurrency); pool waits > 0.1 ms ${per(tally.poolWaits)}/request, pool wait ${(tally.poolWaitUs / 1000 / count).toFixed(3)} ms/request`,
  );
  console.log(`- Redis commands/request: ${[...tally.redis].map(([k, v]) => `${k} ${per(v)}`).join(", ") || "none"}`);
  console.log("- statements of the request path:");
  for (const [kind, n] of [...tally.kinds].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  - ${per(n)} × \`${kind}\``);
  console.log("- background statements (outbox dispatch, poller, simulator):");
  for (const [kind, n] of [...tally.backgroundKinds].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  - ${per(n)} × \`${kind}\``);
};

try {
  await pass(Math.min(200, total), concurrency); // warm-up
  await report("sequential", Math.max(50, Math.floor(total / 4)), 1);
  await report("concurrent", total, concurrency);
} finally {
  http.Server.prototype.emit = originalEmit;
  await stack.close();
  await database.drop();
}
process.exit(0);
