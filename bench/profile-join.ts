/**
 * Profiles the README dashboard alone (issue 25 §1, bench/README.md "Round 3"): seeds 1x data,
 * starts `switchyard start` (one process: router + in-process subgraphs) under `node --cpu-prof`,
 * warms it up, then loads the dashboard for a measured pass and writes next to the profile a
 * `window.json` with the pass's monotonic start and end (µs, the profile's clock), the requests
 * answered and the process's CPU ms per request from /proc. bench/profile-buckets.mjs splits the
 * samples of that window into buckets.
 * Usage: `node --import tsx bench/profile-join.ts <dir> [seconds=10] [connections=32]`.
 * With `BENCH_DASHBOARD_BY_HASH=1` the dashboard is registered once (APQ: text and hash) and then
 * sent by its hash alone, to price what a persisted document saves.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createBenchDatabase, startServer } from "./server.ts";
import { seedToScale } from "./seed.ts";
import { runLoad } from "./load.ts";
import { dashboard, dashboardPersisted, loadSpec, preflight } from "./scenarios.ts";

const dir = path.resolve(process.argv[2] ?? "/tmp/switchyard-profile-join");
const seconds = Number(process.argv[3] ?? 10);
const connections = Number(process.argv[4] ?? 32);
fs.mkdirSync(dir, { recursive: true });
process.env.BENCH_PROFILE = dir;

const database = await createBenchDatabase("profile");
try {
  const state = await seedToScale(database, 1);
  const server = await startServer("single", { NODE_ENV: "production", ...database.env });
  try {
    const keys = [state.keys[0]!.key];
    // BENCH_DASHBOARD_BY_HASH=1: the dashboard by its persisted hash (registered once, then hash only).
    const endpoint = process.env.BENCH_DASHBOARD_BY_HASH === "1" ? dashboardPersisted(`${server.url}/graphql`, keys) : dashboard(`${server.url}/graphql`, keys);
    const problem = await preflight(endpoint);
    if (problem) throw new Error(`dashboard preflight: ${problem}`);
    await runLoad(loadSpec(endpoint, { connections, durationSeconds: 4, warmupSeconds: 0 }));
    const loadBefore = os.loadavg();
    const startUs = Number(process.hrtime.bigint() / 1000n);
    const result = await runLoad({ ...loadSpec(endpoint, { connections, durationSeconds: seconds, warmupSeconds: 0 }), serverPids: server.pids });
    const endUs = Number(process.hrtime.bigint() / 1000n);
    const window = {
      pid: server.routerPid,
      startUs,
      endUs,
      requests: result.requests,
      rps: result.rps,
      cpuMsPerRequest: result.cpuMsPerRequest,
      failed: result.failed,
      loadBefore,
      loadAfter: os.loadavg(),
    };
    fs.writeFileSync(path.join(dir, `window-${server.routerPid}.json`), JSON.stringify(window, null, 2));
    console.log(JSON.stringify(window));
  } finally {
    await server.stop();
  }
} finally {
  await database.drop();
}
