#!/usr/bin/env node
/**
 * Splits the samples of a V8 CPU profile that fall in a measured window (bench/profile-join.ts
 * writes `window-<pid>.json` beside the profile) into the buckets of issue 25 §1: GC, HMAC of the
 * internal hop, SQL (knex + driver), JSON, subgraph execution, router/gateway, node's HTTP and the
 * rest; then the top self-time functions. Each sample is charged to one bucket: GC and idle by
 * V8's own nodes; HMAC and SQL when any frame of the stack is theirs (so the JSON.stringify the
 * signer runs counts as signing); JSON when the leaf is JSON.parse/stringify; otherwise the first
 * frame, from the leaf up, that belongs to the router's or the subgraphs' code or packages.
 * Usage: node bench/profile-buckets.mjs <file.cpuprofile> <window.json> [rows=15]
 */
import fs from "node:fs";

const [file, windowFile, rowsArg] = process.argv.slice(2);
if (!file || !windowFile) {
  console.error("usage: node bench/profile-buckets.mjs <file.cpuprofile> <window.json> [rows]");
  process.exit(2);
}
const rows = Number(rowsArg ?? 15);
const profile = JSON.parse(fs.readFileSync(file, "utf8"));
const window = JSON.parse(fs.readFileSync(windowFile, "utf8"));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const pkgOf = (url) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
const SQL = new Set(["knex", "better-sqlite3", "pg", "pg-protocol", "pg-pool", "tarn", "pg-types", "postgres-array", "postgres-date"]);
const ROUTER_PKG = /^(@graphql-hive|@graphql-mesh|@graphql-tools|graphql-yoga|@envelop|@whatwg-node|@escape\.tech|@graphql-yoga|fets|@fastify)/;
const SUBGRAPH_PKG = /^(@apollo|dataloader)/;

/** The bucket a frame's code belongs to, or null when it says nothing (node internals, native, graphql's parser/validator). */
function frameBucket(frame, stackHas) {
  const url = frame.url || "";
  const pkg = pkgOf(url);
  if (pkg === "graphql") {
    // graphql-js executes only in the subgraphs (the gateway plans and runs fetches itself);
    // its parser, validator and printer serve both: decided by a frame further up.
    return /\/execution\//.test(url) ? "subgraph execution" : null;
  }
  if (pkg === "dataloader") return stackHas("@graphql-tools/batch-execute") ? "router/gateway" : "subgraph execution";
  if (pkg && SUBGRAPH_PKG.test(pkg)) return "subgraph execution";
  if (pkg && ROUTER_PKG.test(pkg)) return "router/gateway";
  if (pkg === "pino" || pkg === "prom-client" || pkg === "@opentelemetry/api") return "logging/metrics";
  if (pkg) return `other package: ${pkg}`;
  if (/\/(subgraphs|src)\//.test(url)) return "subgraph execution";
  if (/\/router\//.test(url)) return "router/gateway";
  if (/\/bin\//.test(url)) return "router/gateway";
  return null;
}

const buckets = new Map();
const detail = new Map();
const selfFn = new Map();
const tally = (map, key, value) => map.set(key, (map.get(key) ?? 0) + value);
let t = profile.startTime;
let inWindow = 0;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i] ?? 0;
  if (t < window.startUs || t > window.endUs) continue;
  // A sample's time is the gap to the next one (V8's own accounting); the last in the window gets the mean.
  const next = profile.timeDeltas[i + 1];
  const dt = next ?? 1000;
  inWindow += dt;
  const leaf = byId.get(profile.samples[i]);
  const stack = [];
  for (let at = leaf.id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at).callFrame);
  const urls = stack.map((f) => f.url || "");
  const stackHas = (needle) => urls.some((u) => u.includes(needle));
  const leafName = leaf.callFrame.functionName;
  const leafPkg = pkgOf(leaf.callFrame.url || "");
  tally(
    selfFn,
    `${leafName || "(anonymous)"} ${leafPkg ?? (leaf.callFrame.url || "native").replace(/^.*\/(router|subgraphs|src|bin)\//, "$1/")}:${leaf.callFrame.lineNumber + 1}`,
    dt,
  );
  let bucket;
  let why = "";
  if (leafName === "(garbage collector)") bucket = "GC";
  else if (leafName === "(idle)") bucket = "idle";
  else if (leafName === "(program)") bucket = "V8 (program: native, unattributed)";
  else if (stackHas("hmac-upstream-signature") || stackHas("/subgraphs/shared/internal-context.ts") || stackHas("/subgraphs/shared/hop-nonces.ts"))
    bucket = "HMAC sign/verify of the internal hop";
  else if (stackHas("/src/events/")) {
    bucket = "outbox dispatch, pub/sub, webhooks (src/events)";
    why = stack.some((f) => SQL.has(pkgOf(f.url || ""))) ? "its SQL" : "its JS";
  } else if (stack.some((f) => SQL.has(pkgOf(f.url || "")) || /\/src\/db\//.test(f.url || ""))) {
    bucket = "SQL (knex + driver)";
    why = pkgOf(stack.find((f) => SQL.has(pkgOf(f.url || "")))?.url || "") ?? "src/db";
  } else if ((!leaf.callFrame.url && /^(stringify|parse)$/.test(leafName)) || /stringify|JSONParse|json(Parse|Serial)/i.test(leafName)) {
    // JSON.stringify/parse are builtins: their time shows as the self time of the caller (yoga's
    // jsonStringifyResultWithoutInternals, fast-json-stringify...), so callers named for it count.
    bucket = "JSON (parse/stringify)";
    why = `${leafName} ${leafPkg ?? ""}`;
  } else {
    for (const frame of stack) {
      bucket = frameBucket(frame, stackHas);
      if (bucket) {
        why = pkgOf(frame.url || "") ?? (frame.url || "").replace(/^.*\/(router|subgraphs|src|bin)\//, "$1/");
        // Our own code by file, a package by name.
        if (!pkgOf(frame.url || "")) why = why.replace(/^file:\/\//, "");
        if (pkgOf(frame.url || "") === "graphql") why = "graphql (execution)";
        break;
      }
    }
    if (!bucket) {
      const nodeFrame = stack.find((f) => (f.url || "").startsWith("node:"));
      bucket = nodeFrame ? "node runtime (http, streams, timers, microtasks)" : "unattributed native";
      why = nodeFrame?.url ?? leafName;
    }
  }
  tally(buckets, bucket, dt);
  if (why) tally(detail, `${bucket} ← ${why}`, dt);
}

const requests = window.requests;
const busy = inWindow - (buckets.get("idle") ?? 0);
const ms = (us) => (us / 1000 / requests).toFixed(3);
console.log(
  `${file}\nwindow ${((window.endUs - window.startUs) / 1e6).toFixed(1)} s, ${requests} requests (${window.rps}/s), /proc CPU ${window.cpuMsPerRequest} ms/request, load ${window.loadBefore?.[0]} → ${window.loadAfter?.[0]}`,
);
console.log(`main thread busy ${ms(busy)} ms/request (${((100 * busy) / inWindow).toFixed(0)}% of the window)\n`);
console.log("| bucket | ms/request | share of busy |\n|---|---|---|");
for (const [key, us] of [...buckets].sort((a, b) => b[1] - a[1]))
  if (key !== "idle") console.log(`| ${key} | ${ms(us)} | ${((100 * us) / busy).toFixed(1)}% |`);
console.log("\n| bucket ← deciding code | ms/request |\n|---|---|");
for (const [key, us] of [...detail].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`| ${key} | ${ms(us)} |`);
console.log(`\n| top ${rows} self time | ms/request | share of busy |\n|---|---|---|`);
for (const [key, us] of [...selfFn]
  .filter(([k]) => !k.startsWith("(idle)"))
  .sort((a, b) => b[1] - a[1])
  .slice(0, rows))
  console.log(`| ${key} | ${ms(us)} | ${((100 * us) / busy).toFixed(1)}% |`);
