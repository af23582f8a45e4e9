import { afterEach, describe, expect, it } from "vitest";
import type { AddressInfo } from "node:net";
import { WebSocket, WebSocketServer } from "ws";
import { keepAlive } from "../../router/websocket.ts";

/** A real ws server on a free port with the router's keep-alive at `intervalMs`. */
async function serve(intervalMs: number) {
  const wss = new WebSocketServer({ port: 0 });
  await new Promise((resolve) => wss.once("listening", resolve));
  const stop = keepAlive(wss, intervalMs);
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, wss, stop };
}

function closeServer(wss: WebSocketServer) {
  for (const client of wss.clients) client.terminate();
  return new Promise<void>((resolve) => wss.close(() => resolve()));
}

const opened = (socket: WebSocket) => new Promise((resolve) => socket.once("open", resolve));
const pinged = (socket: WebSocket, times: number) =>
  new Promise<void>((resolve) => {
    let n = 0;
    socket.on("ping", () => ++n === times && resolve());
  });

describe("graphql-ws keep-alive (router/websocket.ts)", () => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("pings every socket each interval and keeps one that answers", async () => {
    const { url, wss, stop } = await serve(50);
    cleanups.push(stop, () => closeServer(wss));
    const socket = new WebSocket(url); // answers pings itself (autoPong)
    cleanups.push(() => socket.terminate());
    await opened(socket);
    await pinged(socket, 4);
    expect(socket.readyState).toBe(WebSocket.OPEN);
  });

  it("cuts a socket that did not answer the previous ping, and leaves the others open", async () => {
    const { url, wss, stop } = await serve(50);
    cleanups.push(stop, () => closeServer(wss));
    const silent = new WebSocket(url, { autoPong: false });
    const answering = new WebSocket(url);
    cleanups.push(
      () => silent.terminate(),
      () => answering.terminate(),
    );
    await Promise.all([opened(silent), opened(answering)]);
    const closed = new Promise<number>((resolve) => silent.once("close", (code) => resolve(code)));
    await pinged(silent, 1);
    expect(await closed).toBe(1006); // terminated: no close frame
    expect(answering.readyState).toBe(WebSocket.OPEN);
  });
});
