/**
 * Memory after a full garbage collection, on request (bench/README.md "Round 3", issue 25 §3):
 * preloaded into a server process with `BENCH_SERVER_NODE_OPTIONS="--expose-gc
 * --import=file://…/bench/gc-on-signal.mjs"` and BENCH_GC_DIR=<dir>; on SIGUSR2 it runs two full
 * collections, then writes <dir>/memory-<pid>-<n>.json with process.memoryUsage() (rss,
 * heapTotal, heapUsed, external, arrayBuffers, bytes). bench/live.ts sends the signal before it
 * reads the router's RSS when BENCH_GC_DIR is set.
 */
import fs from "node:fs";
import path from "node:path";

const dir = process.env.BENCH_GC_DIR;
if (dir && typeof globalThis.gc === "function") {
  fs.mkdirSync(dir, { recursive: true });
  let n = 0;
  process.on("SIGUSR2", () => {
    globalThis.gc();
    globalThis.gc();
    const file = path.join(dir, `memory-${process.pid}-${n++}.json`);
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()));
    fs.renameSync(`${file}.tmp`, file);
  });
}
