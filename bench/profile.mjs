#!/usr/bin/env node
/**
 * Summarises a V8 CPU profile (`BENCH_PROFILE=<dir> npm run bench` writes one per server process):
 * self time by function and by package, inclusive time of the hottest frames.
 * Usage: node bench/profile.mjs <file.cpuprofile> [rows=30]
 */
import fs from "node:fs";

const [file, rowsArg] = process.argv.slice(2);
if (!file) {
  console.error("usage: node bench/profile.mjs <file.cpuprofile> [rows]");
  process.exit(2);
}
const rows = Number(rowsArg ?? 30);
const profile = JSON.parse(fs.readFileSync(file, "utf8"));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] ?? 0;
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

/** Where a frame's code lives: a package name, our own folder, or node's internals. */
function area(frame) {
  const url = frame.url || "";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith("node:") || !url) return frame.functionName ? `(node) ${url || "native"}` : "(idle/gc/program)";
  const own = /\/work\/[^/]+\/([^/]+)\//.exec(url) ?? /\/(router|subgraphs|src|bin)\//.exec(url);
  return own ? `ours: ${own[1]}` : url;
}
const name = (frame) => `${frame.functionName || "(anonymous)"} ${area(frame)}:${frame.lineNumber + 1}`;
const tally = (map, key, value) => map.set(key, (map.get(key) ?? 0) + value);
const selfByFn = new Map();
const selfByArea = new Map();
const inclusive = new Map();
for (const [id, time] of self) {
  const frame = byId.get(id).callFrame;
  tally(selfByFn, name(frame), time);
  tally(selfByArea, area(frame), time);
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const key = name(byId.get(at).callFrame);
    if (!seen.has(key)) {
      tally(inclusive, key, time);
      seen.add(key);
    }
  }
}
const print = (title, map) => {
  console.log(`\n## ${title}`);
  for (const [key, time] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) console.log(`${((100 * time) / total).toFixed(1).padStart(5)}%  ${key}`);
};
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
print("self time by package", selfByArea);
print("self time by function", selfByFn);
print("inclusive time", inclusive);
