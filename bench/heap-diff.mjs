#!/usr/bin/env node
/**
 * What a set of subscribers holds on the V8 heap (issue 25 §3): compares two heap snapshots of
 * the router (bench/live.ts with BENCH_HEAP_SNAPSHOTS writes `before` and `subscribed`) by object
 * kind — constructor name for objects, the node type for strings, closures, arrays, code — and
 * prints the growth in count and bytes (self size) per subscriber, largest first.
 * Usage: node bench/heap-diff.mjs <before.heapsnapshot> <after.heapsnapshot> <subscribers> [rows=30]
 */
import fs from "node:fs";

const [beforeFile, afterFile, subscribersArg, rowsArg] = process.argv.slice(2);
if (!beforeFile || !afterFile || !subscribersArg) {
  console.error("usage: node bench/heap-diff.mjs <before.heapsnapshot> <after.heapsnapshot> <subscribers> [rows]");
  process.exit(2);
}
const subscribers = Number(subscribersArg);
const rows = Number(rowsArg ?? 30);

/**
 * Count and self size by kind, and the heap's total self size. A closure's kind names the script
 * and line of its function (its `shared` → `script` → `name` edges and the snapshot's
 * `locations`), so the growth points at the code that made it.
 */
function summarise(file) {
  const snapshot = JSON.parse(fs.readFileSync(file, "utf8"));
  const meta = snapshot.snapshot.meta;
  const fields = meta.node_fields;
  const types = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const width = fields.length;
  const edgeWidth = meta.edge_fields.length;
  const typeAt = fields.indexOf("type");
  const nameAt = fields.indexOf("name");
  const sizeAt = fields.indexOf("self_size");
  const edgeCountAt = fields.indexOf("edge_count");
  const { nodes, edges, strings } = snapshot;
  const firstEdge = new Int32Array(nodes.length / width);
  for (let i = 0, e = 0; i < nodes.length; i += width) {
    firstEdge[i / width] = e;
    e += nodes[i + edgeCountAt] * edgeWidth;
  }
  const child = (node, name) => {
    const start = firstEdge[node / width];
    for (let j = start; j < start + nodes[node + edgeCountAt] * edgeWidth; j += edgeWidth) {
      const type = edgeTypes[edges[j]];
      if (type !== "element" && type !== "hidden" && strings[edges[j + 1]] === name) return edges[j + 2];
    }
    return undefined;
  };
  const lines = new Map();
  for (let i = 0; i < (snapshot.locations?.length ?? 0); i += 4) lines.set(snapshot.locations[i], snapshot.locations[i + 2] + 1);
  const scriptOf = (closure) => {
    const shared = child(closure, "shared");
    const script = shared === undefined ? undefined : (child(shared, "script") ?? child(shared, "script_or_debug_info"));
    const name = script === undefined ? undefined : (child(script, "name") ?? child(script, "source_url"));
    const url =
      name === undefined ? "?" : strings[nodes[name + nameAt]].replace(/^file:\/\/.*?node_modules\//, "").replace(/^file:\/\/\/work\/[^/]+\/[^/]+\//, "");
    return `${url}:${lines.get(closure) ?? "?"}`;
  };
  const kinds = new Map();
  let total = 0;
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[nodes[i + typeAt]];
    const size = nodes[i + sizeAt];
    total += size;
    let kind;
    if (type === "object" || type === "native") kind = `${type} ${strings[nodes[i + nameAt]]}`;
    else if (type === "closure") kind = `closure ${strings[nodes[i + nameAt]] || "(anonymous)"} ${scriptOf(i)}`;
    else if (type === "hidden" || type === "code" || type === "object shape") kind = `${type} ${strings[nodes[i + nameAt]].slice(0, 40)}`;
    else kind = `(${type})`;
    const entry = kinds.get(kind) ?? { count: 0, size: 0 };
    entry.count++;
    entry.size += size;
    kinds.set(kind, entry);
  }
  return { kinds, total };
}

const before = summarise(beforeFile);
const after = summarise(afterFile);
const growth = [];
for (const [kind, a] of after.kinds) {
  const b = before.kinds.get(kind) ?? { count: 0, size: 0 };
  growth.push({ kind, count: a.count - b.count, size: a.size - b.size });
}
growth.sort((x, y) => y.size - x.size);
const kb = (bytes) => (bytes / 1024).toFixed(2);
console.log(
  `heap self size ${kb(before.total)} KB → ${kb(after.total)} KB: +${kb((after.total - before.total) / subscribers)} KB per subscriber (${subscribers})\n`,
);
console.log("| kind | objects per subscriber | bytes per subscriber |\n|---|---|---|");
for (const g of growth.slice(0, rows))
  console.log(`| ${g.kind.replace(/\|/g, "\\|")} | ${(g.count / subscribers).toFixed(2)} | ${(g.size / subscribers).toFixed(0)} |`);
