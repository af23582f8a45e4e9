/**
 * CPU and allocation per README dashboard, for A/B runs on a loaded machine (bench/README.md,
 * Round 3 step F): the whole stack in one process (as bench/profile-sql.ts) with its own fetch
 * client, 800 warm-up dashboards, then two passes of `total` at `concurrency` in flight; per pass
 * `process.cpuUsage` and V8's `total_allocated_bytes` per dashboard (allocation does not move
 * with the machine's load, CPU does). With `HEAPSAMPLE=1` one pass runs under V8's sampling heap
 * profiler (collected objects included) and prints the top allocating functions instead.
 * With `READ=1` it sends the bench's task read (`TASK_QUERY`) instead of the dashboard.
 * Usage: node --import tsx bench/profile-alloc.ts [total=1500] [concurrency=16]
 */
import v8 from "node:v8";
import os from "node:os";
import { startBenchStack } from "./in-process.ts";
import { createBenchDatabase } from "./server.ts";
import { seedToScale } from "./seed.ts";
import { DASHBOARD_QUERY, TASK_QUERY } from "./scenarios.ts";

const total = Number(process.argv[2] ?? 1500);
const concurrency = Number(process.argv[3] ?? 16);
const database = await createBenchDatabase("alloc");
const seeded = await seedToScale(database, 1);
const key = seeded.keys[0]!.key;
const stack = await startBenchStack(database, "alloc");
// READ=1: the bench's task read instead of the dashboard.
const body = JSON.stringify(process.env.READ ? { query: TASK_QUERY, variables: { id: seeded.taskId } } : { query: DASHBOARD_QUERY });
let bad = 0;
async function one() {
  const r = await fetch(`${stack.url}/graphql`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json" },
    body,
  });
  const t = await r.text();
  if (r.status !== 200 || t.includes('"errors"')) bad++;
}
async function pass(n: number) {
  let left = n;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) await one();
    }),
  );
}
/** A node of V8's sampling heap profile. */
interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

await pass(800);
if (process.env.HEAPSAMPLE) {
  const inspector = await import("node:inspector/promises");
  const session = new inspector.Session();
  session.connect();
  await session.post("HeapProfiler.enable");
  await session.post("HeapProfiler.startSampling", { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  await pass(total);
  const { profile } = (await session.post("HeapProfiler.stopSampling")) as { profile: { head: HeapNode } };
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const walk = (node: HeapNode, stack: string[]): number => {
    const f = node.callFrame;
    const k = `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\//, "").replace(`file://${process.cwd()}/`, "")}:${f.lineNumber}`;
    self.set(k, (self.get(k) ?? 0) + node.selfSize);
    let size = node.selfSize;
    for (const c of node.children) size += walk(c, [...stack, k]);
    if (!stack.includes(k)) incl.set(k, (incl.get(k) ?? 0) + size);
    return size;
  };
  walk(profile.head, []);
  const top = (m: Map<string, number>, re: RegExp, n: number) =>
    [...m]
      .filter(([k]) => re.test(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${(v / 1024 / total).toFixed(1)} KB ${k}`)
      .join("\n");
  console.log(`SELF\n${top(self, /./, 40)}`);
  console.log(`INCL router/\n${top(incl, / router\//, 30)}`);
  process.exit(0);
}
for (let round = 0; round < 2; round++) {
  const a0 = v8.getHeapStatistics().total_allocated_bytes;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await pass(total);
  const c = process.cpuUsage(c0);
  const a = v8.getHeapStatistics().total_allocated_bytes - a0;
  const ms = performance.now() - t0;
  console.log(
    JSON.stringify({
      round,
      cpuMs: +((c.user + c.system) / 1000 / total).toFixed(3),
      allocKB: +(a / 1024 / total).toFixed(1),
      rps: Math.round((total / ms) * 1000),
      bad,
      load: os.loadavg().map((x) => +x.toFixed(2)),
    }),
  );
}
await stack.close();
process.exit(0);
