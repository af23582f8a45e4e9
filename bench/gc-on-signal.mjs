/**
 * Memory after a full garbage collection, on request (bench/README.md "Round 3", issue 25 §3):
 * preloaded into a server process with `BENCH_SERVER_NODE_OPTIONS="--expose-gc
 * --import=file://…/bench/gc-on-signal.mjs"` and BENCH_GC_DIR=<dir>; on SIGUSR2 it runs two full
 * collections and reads process.memoryUsage() (rss, heapTotal, heapUsed, external, arrayBuffers,
 * bytes); a second later it reads again (`settled`: V8 unmaps freed pages in the background), then
 * runs a compacting `last-resort` collection as the memory reducer does and, a second later, reads
 * again (`reduced`); it writes all three to <dir>/memory-<pid>-<n>.json. bench/live.ts
 * sends the signal before it reads the router's RSS when BENCH_GC_DIR is set, so that reading is
 * the reduced one.
 */
import fs from "node:fs";
import path from "node:path";
import v8 from "node:v8";

/**
 * Resident bytes by kind of mapping (/proc/self/smaps): `heap` is glibc malloc's main arena
 * (brk), `anonymous` V8's pages and the other malloc arenas, `file` code and mapped files: where
 * the RSS outside V8's heap lives.
 */
function residentByMapping() {
  const out = { heap: 0, anonymous: 0, file: 0, other: 0, largest: [] };
  let kind = "other";
  let range = "";
  for (const line of fs.readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const name = head[1];
      range = line.split(" ")[0];
      kind = name === "[heap]" ? "heap" : name === "" ? "anonymous" : name.startsWith("/") ? "file" : "other";
    } else if (line.startsWith("Rss:")) {
      const bytes = Number(line.split(/\s+/)[1]) * 1024;
      out[kind] += bytes;
      if (kind === "anonymous") out.largest.push({ range, rss: bytes });
    }
  }
  // The ten anonymous mappings holding the most (their sizes tell V8's cage from malloc's arenas).
  out.largest = out.largest.sort((a, b) => b.rss - a.rss).slice(0, 10);
  return out;
}

/** process.memoryUsage() with where the RSS lives and V8's own figures. */
function figures() {
  return {
    ...process.memoryUsage(),
    mappings: residentByMapping(),
    v8: v8.getHeapStatistics(),
    spaces: Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size])),
  };
}

/** How long V8's background unmapper and the allocator get to hand freed pages back before the second reading. */
const SETTLE_MS = 1_000;

const dir = process.env.BENCH_GC_DIR;
if (dir && typeof globalThis.gc === "function") {
  fs.mkdirSync(dir, { recursive: true });
  let n = 0;
  process.on("SIGUSR2", () => {
    globalThis.gc();
    globalThis.gc();
    const atGc = figures();
    setTimeout(() => {
      // The same heap a second later: V8's background unmapper has handed the freed pages back.
      const settled = figures();
      // What V8's memory reducer does when the process is idle: a compacting collection that
      // gives back the emptied pages (`last-resort` also shrinks the old space), then a pause for
      // the unmapper.
      try {
        globalThis.gc({ type: "major", execution: "sync", flavor: "last-resort" });
      } catch {
        globalThis.gc();
      }
      setTimeout(() => {
        const file = path.join(dir, `memory-${process.pid}-${n++}.json`);
        fs.writeFileSync(`${file}.tmp`, JSON.stringify({ ...atGc, settled, reduced: figures() }));
        fs.renameSync(`${file}.tmp`, file);
      }, SETTLE_MS).unref();
    }, SETTLE_MS).unref();
  });
}
