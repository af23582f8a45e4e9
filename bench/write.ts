/**
 * The write scenario (bench/README.md): `POST /api/v1/video/generations` under load on a fresh
 * database with the embedded simulator, then the money checks: the key's balance equals its
 * opening balance minus what it spent, what it spent equals its tasks times the price, and
 * `switchyard verify` (every balance recomputed from the ledger, every task's debit) exits 0.
 */
import { createBenchDatabase, runCli, startServer, type Topology } from "./server.ts";
import { KEY_BALANCE, createBenchKeys, withDb } from "./seed.ts";
import { runLoad } from "./load.ts";
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
}): Promise<WriteResult> {
  const database = await createBenchDatabase("write");
  const [key] = await withDb(database, (db) => createBenchKeys(db, 1, "bench-write"));
  const server = await startServer(settings.topology, { ...settings.env, ...database.env });
  let stopped = false;
  try {
    let accepted = 0;
    let price: number | null = null;
    let mixedPrices = false;
    const amountPattern = /"amount":([0-9.]+)/;
    const load = await runLoad({
      url: `${server.url}/api/v1/video/generations`,
      method: "POST",
      headers: { authorization: `Bearer ${key!.key}`, "content-type": "application/json" },
      body: BODY,
      connections: settings.connections,
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
    });
    // Answers cut off when the load stopped may still be committing: read until two reads agree.
    const readViewer = async () => {
      const response = await fetch(`${server.url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${key!.key}`, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ query: VIEWER }),
      });
      return JSON.stringify(((await response.json()) as { data?: { viewer?: unknown } } | null)?.data?.viewer ?? null);
    };
    let previous = "";
    let current = await readViewer();
    for (let i = 0; i < 50 && current !== previous; i++) [previous, current] = [current, await readViewer()];
    const viewer = JSON.parse(current);
    if (!viewer) throw new Error(`viewer query failed after the write load: ${current}`);
    await server.stop();
    stopped = true;
    const verify = await runCli(["verify"], database.env);
    const balance = parseYuan(viewer.balance.amount);
    const spent = parseYuan(viewer.spent.amount);
    const tasksInDb = Number(viewer.tasks.totalCount);
    const ledgerExact = !mixedPrices && price !== null && balance === KEY_BALANCE - spent && spent === tasksInDb * price;
    return {
      load,
      accepted,
      tasksInDb,
      price: price === null ? "-" : formatYuan(price),
      initialBalance: formatYuan(KEY_BALANCE),
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
    if (!stopped) await server.stop();
    await database.drop();
  }
}
