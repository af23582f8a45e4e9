/**
 * The Grafbase row's signing proxy (bench/README.md "Scenarios", "Why the Grafbase row is fair"):
 * our subgraphs serve only requests signed with SUBGRAPH_SECRET (subgraphs/shared/internal-context.ts),
 * and a Rust gateway cannot run that signing. This process listens on one loopback port per
 * subgraph, signs each request it receives exactly as our router signs (the caller's
 * `Authorization`, a fresh nonce, the subgraph as audience) and passes it on to that subgraph over a
 * keep-alive connection; the answer goes back unchanged. The subgraphs keep every check they make
 * in production: nothing in them is switched off for the bench. The bench measures this process's
 * CPU apart, so the row can be read with and without it.
 *
 * Env: GENERATION_URL, CLOUD_URL (subgraph `/graphql` URLs), SUBGRAPH_SECRET.
 * Prints `Signing proxy: generation=<url> cloud=<url>` once both ports listen.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { signSubgraphRequest } from "../subgraphs/shared/internal-context.ts";

const secret = process.env.SUBGRAPH_SECRET;
if (!secret) throw new Error("SUBGRAPH_SECRET is required: the subgraphs serve only signed requests");
const targets = { generation: process.env.GENERATION_URL, cloud: process.env.CLOUD_URL };

/** One keep-alive pool for both subgraphs (the same host), as a gateway keeps its connections. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** Reads a request body whole. */
function readBody(request: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

/**
 * A server that signs for `audience` and forwards to `target`.
 * @returns the server, listening on a free loopback port
 */
async function signingServer(audience: string, target: URL): Promise<http.Server> {
  const server = http.createServer(async (request, response) => {
    try {
      const params = JSON.parse(await readBody(request)) as { query: string; variables?: Record<string, unknown>; operationName?: string };
      const headers: Record<string, string> = { "x-switchyard-client-ip": "127.0.0.1", "x-switchyard-count-id": randomUUID() };
      if (request.headers.authorization) headers.authorization = request.headers.authorization;
      const body = JSON.stringify(signSubgraphRequest(secret!, { ...params, operationName: params.operationName ?? undefined, audience, headers }));
      const upstream = http.request(
        target,
        {
          method: "POST",
          agent,
          headers: { "content-type": "application/json", accept: "application/json", "content-length": Buffer.byteLength(body) },
        },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, { "content-type": answer.headers["content-type"] ?? "application/json" });
          answer.pipe(response);
        },
      );
      upstream.on("error", (error) => {
        response.writeHead(502).end(String(error));
      });
      upstream.end(body);
    } catch (error) {
      response.writeHead(400).end(String(error));
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

const servers: Record<string, http.Server> = {};
for (const [name, url] of Object.entries(targets)) {
  if (!url) throw new Error("GENERATION_URL and CLOUD_URL are required");
  servers[name] = await signingServer(name, new URL(url));
}
const urlOf = (server: http.Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
console.log(`Signing proxy: generation=${urlOf(servers.generation!)} cloud=${urlOf(servers.cloud!)}`);

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    for (const server of Object.values(servers)) server.close();
    agent.destroy();
    process.exit(0);
  });
}
