/**
 * Event-loop stalls and GC pauses of a server process, for finding where a latency tail comes from
 * (bench/README.md "Where the rest of the gap is"). Preloaded into every server process with
 * BENCH_LOOP_MONITOR=<dir> (bench/server.ts adds `--import` of this file to NODE_OPTIONS); writes
 * <dir>/loop-<pid>.json when the process exits:
 * - `delay`: perf_hooks.monitorEventLoopDelay percentiles, ms, over the process's life;
 * - `stalls`: every turn at least STALL_MS late on a 10 ms timer (wall time `at`, ms late);
 * - `gc`: every pause of at least GC_MS (wall time, ms, kind), and totals by kind.
 * `node bench/loop-monitor.mjs <file> [fromIso toIso]` summarises one, optionally within a window.
 */
import fs from "node:fs";
import path from "node:path";
import { PerformanceObserver, constants, monitorEventLoopDelay, performance } from "node:perf_hooks";

const STALL_MS = 20;
const GC_MS = 5;
const KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "scavenge",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "mark-compact",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weak-callbacks",
};
const wall = (t = performance.now()) => performance.timeOrigin + t;

function monitor(dir) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const stalls = [];
  let expected = performance.now() + 10;
  const tick = () => {
    const now = performance.now();
    const late = now - expected;
    if (late >= STALL_MS) stalls.push({ at: Math.round(wall(now) - late), ms: Math.round(late) });
    expected = now + 10;
    setTimeout(tick, 10).unref();
  };
  setTimeout(tick, 10).unref();
  const pauses = [];
  const totals = {};
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = KINDS[entry.detail?.kind ?? entry.kind] ?? String(entry.detail?.kind);
      totals[kind] ??= { count: 0, ms: 0 };
      const total = totals[kind];
      total.count++;
      total.ms += entry.duration;
      if (entry.duration >= GC_MS) pauses.push({ at: Math.round(wall(entry.startTime)), ms: Math.round(entry.duration * 10) / 10, kind });
    }
  }).observe({ entryTypes: ["gc"] });
  process.on("exit", () => {
    histogram.disable();
    const ms = (ns) => Math.round(ns / 1e5) / 10;
    const delay = { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max), mean: ms(histogram.mean) };
    for (const t of Object.values(totals)) t.ms = Math.round(t.ms);
    const file = path.join(dir, `loop-${process.pid}.json`);
    fs.writeFileSync(file, JSON.stringify({ pid: process.pid, argv: process.argv.slice(1), delay, stalls, gc: { totals, pauses } }));
  });
}

function summarise(file, from, to) {
  const data = JSON.parse(fs.readFileSync(file, "utf8"));
  const inWindow = (e) => (from === undefined || e.at >= from) && (to === undefined || e.at <= to);
  const stalls = data.stalls.filter(inWindow);
  const pauses = data.gc.pauses.filter(inWindow);
  console.log(`${file}: ${data.argv.join(" ")}`);
  console.log(`event-loop delay (whole life): ${JSON.stringify(data.delay)}`);
  console.log(`GC totals (whole life): ${JSON.stringify(data.gc.totals)}`);
  const sum = (list) => list.reduce((n, e) => n + e.ms, 0);
  console.log(`stalls ≥ ${STALL_MS} ms in window: ${stalls.length}, ${sum(stalls)} ms in all`);
  for (const s of stalls) {
    // GC pauses that began inside this stall.
    const gc = pauses.filter((p) => p.at >= s.at - 5 && p.at <= s.at + s.ms);
    console.log(`  ${new Date(s.at).toISOString()} ${s.ms} ms late; GC inside: ${gc.map((p) => `${p.kind} ${p.ms}`).join(", ") || "none"}`);
  }
  console.log(`GC pauses ≥ ${GC_MS} ms in window: ${pauses.length}, ${Math.round(sum(pauses))} ms`);
  for (const p of pauses) console.log(`  ${new Date(p.at).toISOString()} ${p.kind} ${p.ms} ms`);
}

const dir = process.env.BENCH_LOOP_MONITOR;
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const [file, from, to] = process.argv.slice(2);
  summarise(file, from ? Date.parse(from) : undefined, to ? Date.parse(to) : undefined);
} else if (dir) {
  monitor(path.resolve(dir));
}
