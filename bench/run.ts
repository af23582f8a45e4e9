/**
 * `npm run bench`: starts the stack in this process (SQLite in a temporary folder, the simulator),
 * then measures sequential request latency through the router: a REST submission, the same
 * submission as a GraphQL mutation, a REST task read and a GraphQL task read; and the same read
 * straight on the generation subgraph (the ceiling). Prints a table and writes
 * bench/results/<date>.json. Numbers, not assertions.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../src/config.ts";
import { createKey } from "../src/auth/keys.ts";
import { parseYuan } from "../src/money.ts";
import { startStack } from "../bin/stack.ts";

const N = Number(process.env.BENCH_N ?? 300);
const WARMUP = 30;

function summarize(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { n: samples.length, median_ms: +at(0.5).toFixed(3), p99_ms: +at(0.99).toFixed(3), mean_ms: +(samples.reduce((a, b) => a + b, 0) / samples.length).toFixed(3) };
}

async function measure(run: () => Promise<Response>): Promise<ReturnType<typeof summarize>> {
  const samples: number[] = [];
  for (let i = 0; i < WARMUP + N; i++) {
    const started = performance.now();
    const response = await run();
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    if (i >= WARMUP) samples.push(performance.now() - started);
  }
  return summarize(samples);
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-bench-"));
const config = loadConfig({ ...process.env, DATA_DIR: dataDir, PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0", LOG_LEVEL: "silent" });
const stack = await startStack(config);
const { key } = await createKey(stack.db!, { name: "bench", balance: parseYuan("1000000") });
const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const body = JSON.stringify({ prompt: "bench", model_id: 52, seconds: 5 });
const gql = (query: string, variables: object = {}, url = `${stack.url}/graphql`) =>
  fetch(url, { method: "POST", headers: { ...auth, accept: "application/json" }, body: JSON.stringify({ query, variables }) });

const first = await (await fetch(`${stack.url}/api/v1/video/generations`, { method: "POST", headers: auth, body })).json();
const taskId = first.data.task_id;
const taskQuery = "query($id: ID!) { task(id: $id) { id statusCode statusName result price { amount } } }";

const results = {
  "submit REST (POST /api/v1/video/generations)": await measure(() => fetch(`${stack.url}/api/v1/video/generations`, { method: "POST", headers: auth, body })),
  "submit GraphQL (submitVideoGeneration via router)": await measure(() =>
    gql("mutation($i: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $i) { task { id price { amount } } } }", { i: { prompt: "bench", modelId: 52, seconds: 5 } }),
  ),
  "read REST (GET /api/v1/tasks/{id})": await measure(() => fetch(`${stack.url}/api/v1/tasks/${taskId}`, { headers: auth })),
  "read GraphQL via router (task(id))": await measure(() => gql(taskQuery, { id: taskId })),
  "read GraphQL direct on subgraph (ceiling)": await measure(() => gql(taskQuery, { id: taskId }, stack.generationUrl)),
};
await stack.close();
fs.rmSync(dataDir, { recursive: true, force: true });

console.log(`\nSequential latency, ${N} requests each after ${WARMUP} warm-up, ${os.cpus().length} cores, node ${process.version}\n`);
console.log(`${"scenario".padEnd(52)} ${"median".padStart(9)} ${"p99".padStart(9)}`);
for (const [name, r] of Object.entries(results)) console.log(`${name.padEnd(52)} ${`${r.median_ms} ms`.padStart(9)} ${`${r.p99_ms} ms`.padStart(9)}`);
const file = path.join("bench", "results", `${new Date().toISOString().slice(0, 10)}.json`);
fs.writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), node: process.version, cores: os.cpus().length, n: N, results }, null, 2));
console.log(`\nwrote ${file}`);
