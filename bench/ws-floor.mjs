#!/usr/bin/env node
/**
 * The floor of memory per WebSocket on this node (bench/README.md "Round 3" §3): a bare
 * `http` + `ws` server (no deflate, as router/websocket.ts) holding N sockets opened by a child
 * process, memory read after two full GCs before and after. What the router holds per subscriber
 * above this is graphql-ws, the gateway and the subscription chain.
 * Usage: node --expose-gc bench/ws-floor.mjs [sockets=5000]
 */
import { fork } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";
import WebSocket, { WebSocketServer } from "ws";

if (process.argv[2] === "--client") {
  const [url, count] = [process.argv[3], Number(process.argv[4])];
  const sockets = [];
  let open = 0;
  for (let i = 0; i < count; i++) {
    const socket = new WebSocket(url);
    socket.on("open", () => {
      // One small message each, as a graphql-ws client's connection_init.
      socket.send(JSON.stringify({ type: "connection_init", payload: { authorization: "Bearer x".repeat(4) } }));
      if (++open === count) process.send("open");
    });
    sockets.push(socket);
  }
  process.on("message", () => process.exit(0));
} else {
  const count = Number(process.argv[2] ?? 5000);
  const memory = () => {
    globalThis.gc();
    globalThis.gc();
    return process.memoryUsage();
  };
  const server = http.createServer();
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  let messages = 0;
  wss.on("connection", (socket) => socket.on("message", () => messages++));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const before = memory();
  const child = fork(fileURLToPath(import.meta.url), ["--client", `ws://127.0.0.1:${server.address().port}`, String(count)]);
  await new Promise((resolve) => child.once("message", resolve));
  while (messages < count) await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const after = memory();
  const kb = (key) => ((after[key] - before[key]) / 1024 / count).toFixed(1);
  console.log(
    `${count} sockets: per socket rss ${kb("rss")} KB, heapTotal ${kb("heapTotal")} KB, heapUsed ${kb("heapUsed")} KB, external ${kb("external")} KB; rss ${(before.rss / 2 ** 20).toFixed(0)} → ${(after.rss / 2 ** 20).toFixed(0)} MB`,
  );
  child.send("done");
  child.kill();
  process.exit(0);
}
