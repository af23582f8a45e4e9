/**
 * A proxy between a router and one subgraph port that keeps a copy of everything the router
 * sends: the bodies of its HTTP requests and the messages of its graphql-ws connections. What an
 * attacker on the router ↔ subgraph network would capture (README "Security model").
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";

/** A running recording proxy. */
export interface RecordingProxy {
  /** The `/graphql` URL to give the router (GENERATION_URL, CLOUD_URL). */
  url: string;
  /** The JSON bodies of the HTTP requests the router sent, in order, as sent (text). */
  requests: string[];
  /** The graphql-ws messages the router sent, in order, parsed. */
  messages: any[];
  /** Emits `message` with each graphql-ws message as it is recorded (test/support/events.ts). */
  events: EventEmitter;
  close(): Promise<void>;
}

/**
 * Starts a proxy on a free port forwarding to `target`.
 * @param target the subgraph's `/graphql` URL
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const requests: string[] = [];
  const messages: any[] = [];
  const events = new EventEmitter();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    if (body) requests.push(body);
    try {
      const answer = await fetch(target, { method: req.method, headers: { "content-type": "application/json" }, body: body || undefined });
      res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(await answer.text());
    } catch {
      res.writeHead(502).end();
    }
  });
  const sockets = new WebSocketServer({ server });
  sockets.on("connection", (client) => {
    const upstream = new WebSocket(target.replace(/^http/, "ws"), client.protocol);
    const pending: WebSocket.RawData[] = [];
    upstream.on("open", () => {
      for (const data of pending.splice(0)) upstream.send(data.toString());
    });
    client.on("message", (data) => {
      const message = JSON.parse(data.toString());
      messages.push(message);
      events.emit("message", message);
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data.toString());
      else pending.push(data);
    });
    upstream.on("message", (data) => client.send(data.toString()));
    const closeBoth = () => {
      client.close();
      upstream.close();
    };
    client.on("close", closeBoth);
    upstream.on("close", closeBoth);
    upstream.on("error", closeBoth);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    requests,
    messages,
    events,
    async close() {
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
