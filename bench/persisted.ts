/**
 * What persisted documents save on the dashboard request (issue 21 §3; README "Persisted queries
 * and trusted documents"):
 *
 * 1. parse + validate of the dashboard document against the API schema (graphql-js, the default
 *    rules), the work a router does for a document text its cache does not hold: a persisted
 *    request never brings an unknown text (trusted documents are parsed at start, registered
 *    ones once per router);
 * 2. end to end, against a real stack (in-process subgraphs, SQLite): the same dashboard request
 *    sent as the full document, by hash alone (APQ), and as a new text each time (a comment
 *    varied: every request parsed, validated and planned), rounds interleaved; request bytes and latency.
 *
 * Run: `node --import tsx bench/persisted.ts` (about a minute). Numbers vary with the machine's load.
 */
import fs from "node:fs";
import { createHash } from "node:crypto";
import { buildSchema, parse, validate } from "graphql";
import { API_SCHEMA_FILE } from "../router/compose.ts";
import { startTestStack } from "../test/support/stack.ts";

const DASHBOARD = `query Dashboard {
  viewer {
    id
    balance { amount }
    spent { amount }
    tasks(first: 100) { totalCount nodes { id status price { amount } model { id name } } }
    orders(first: 100) {
      totalCount
      nodes { id status amount { amount } product { id name vendor { id name } } resource { id expiresAt } customer { customerId } }
    }
  }
}`;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const microseconds = (ns: bigint, n: number) => Number(ns) / n / 1000;

function measureParseValidate(iterations: number): { parse: number; validate: number } {
  const schema = buildSchema(fs.readFileSync(API_SCHEMA_FILE, "utf8"));
  for (let i = 0; i < 200; i++) validate(schema, parse(DASHBOARD)); // warm the JIT
  let parsing = 0n;
  let validating = 0n;
  for (let i = 0; i < iterations; i++) {
    const a = process.hrtime.bigint();
    const document = parse(DASHBOARD);
    const b = process.hrtime.bigint();
    const errors = validate(schema, document);
    const c = process.hrtime.bigint();
    if (errors.length) throw errors[0];
    parsing += b - a;
    validating += c - b;
  }
  return { parse: microseconds(parsing, iterations), validate: microseconds(validating, iterations) };
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

async function measureEndToEnd(rounds: number, perRound: number) {
  const t = await startTestStack({ LOG_LEVEL: "silent" });
  try {
    const { key } = await t.createKey("10");
    const headers = { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${key}` };
    const hash = sha256(DASHBOARD);
    const bodies = {
      document: () => JSON.stringify({ query: DASHBOARD }),
      hash: () => JSON.stringify({ extensions: { persistedQuery: { version: 1, sha256Hash: hash } } }),
      "new text": (() => {
        let n = 0;
        return () => JSON.stringify({ query: `${DASHBOARD}\n#${++n}` });
      })(),
    } as const;
    // Register the hash (APQ), as a client's first request would.
    await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers,
      body: JSON.stringify({ query: DASHBOARD, extensions: { persistedQuery: { version: 1, sha256Hash: hash } } }),
    });
    const samples: Record<keyof typeof bodies, number[]> = { document: [], hash: [], "new text": [] };
    const sizes: Record<string, number> = {};
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < perRound; i++) {
        for (const form of Object.keys(bodies) as (keyof typeof bodies)[]) {
          const body = bodies[form]();
          sizes[form] = Buffer.byteLength(body);
          const started = process.hrtime.bigint();
          const response = await fetch(`${t.url}/graphql`, { method: "POST", headers, body });
          const result = (await response.json()) as { data?: unknown };
          const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
          if (!result.data) throw new Error(`${form}: ${JSON.stringify(result)}`);
          if (round > 0) samples[form].push(elapsed); // round 0 warms up
        }
      }
    }
    return Object.fromEntries(
      Object.entries(samples).map(([form, values]) => [
        form,
        { requestBytes: sizes[form], medianMs: median(values).toFixed(3), meanMs: (values.reduce((s, v) => s + v, 0) / values.length).toFixed(3) },
      ]),
    );
  } finally {
    await t.close();
  }
}

const cold = measureParseValidate(5_000);
console.log(`parse + validate of the dashboard document (graphql-js, 5000 runs): parse ${cold.parse.toFixed(1)} µs, validate ${cold.validate.toFixed(1)} µs`);
console.table(await measureEndToEnd(6, 200));
