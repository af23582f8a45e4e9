/**
 * How many subgraph requests, and how many bytes, one dashboard costs behind each peer gateway
 * (bench/README.md "Round 3 step C"): the join scenario's stack at 1x, with a counting
 * pass-through (no change to the bytes) in front of each subgraph port, then `n` dashboards per
 * peer, one at a time, over the 8 keys.
 *
 * Run: `node --import tsx bench/peer-calls.ts [n=40]`.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createBenchDatabase, startApolloGateway, startGrafbase, startHiveGateway, startServer, type Peer, type Server } from "./server.ts";
import { seedToScale } from "./seed.ts";
import { DASHBOARD_QUERY } from "./scenarios.ts";

const n = Number(process.argv[2] ?? 40);

/** Per subgraph: requests seen, request and answer bytes. */
interface Count {
  requests: number;
  sent: number;
  answered: number;
}

/** A pass-through to `target` that counts what goes by. */
async function counting(target: string, count: Count): Promise<{ url: string; close(): void }> {
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((request, response) => {
    count.requests++;
    const upstream = http.request(target, { method: request.method, headers: request.headers, agent }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.on("data", (chunk: Buffer) => (count.answered += chunk.length));
      answer.pipe(response);
    });
    request.on("data", (chunk: Buffer) => (count.sent += chunk.length));
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}${new URL(target).pathname}`, close: () => server.close() };
}

const database = await createBenchDatabase("calls");
try {
  const state = await seedToScale(database, 1);
  const server = await startServer("single", { NODE_ENV: "production", ...database.env });
  const counts: Record<string, Count> = { generation: { requests: 0, sent: 0, answered: 0 }, cloud: { requests: 0, sent: 0, answered: 0 } };
  const generation = await counting(server.generationUrl, counts.generation!);
  const cloud = await counting(server.cloudUrl, counts.cloud!);
  const counted: Server = { ...server, generationUrl: generation.url, cloudUrl: cloud.url };
  try {
    const peers: [string, (s: Server) => Promise<Peer>][] = [
      ["Apollo Gateway", startApolloGateway],
      ["Hive Gateway (Rust planner)", startHiveGateway],
      ["Grafbase", startGrafbase],
    ];
    for (const [name, start] of peers) {
      const peer = await start(counted);
      try {
        for (const c of Object.values(counts)) Object.assign(c, { requests: 0, sent: 0, answered: 0 });
        for (let i = 0; i < n; i++) {
          const key = state.keys[i % state.keys.length]!.key;
          const response = await fetch(peer.url, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
            body: JSON.stringify({ query: DASHBOARD_QUERY }),
          });
          const text = await response.text();
          if (!response.ok || text.includes('"errors"')) throw new Error(`${name}: ${text.slice(0, 300)}`);
        }
        const per = (v: number) => Math.round((v / n) * 10) / 10;
        console.log(
          `${name}: per dashboard ${Object.entries(counts)
            .map(([s, c]) => `${s} ${per(c.requests)} requests (${per(c.sent)} B sent, ${per(c.answered)} B answered)`)
            .join("; ")}`,
        );
      } finally {
        await peer.stop();
      }
    }
  } finally {
    generation.close();
    cloud.close();
    await server.stop();
  }
} finally {
  await database.drop();
}
process.exit(0);
