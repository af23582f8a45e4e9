/**
 * A callback (webhook) receiver for tests: a real HTTP server on loopback that accepts every
 * request with 200 and records its headers and body, for a key's `callbackUrl`.
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request the receiver got. */
export interface ReceivedCallback {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A running receiver. */
export interface CallbackReceiver {
  /** `http://127.0.0.1:<port>/hooks` */
  url: string;
  /** Every request so far, in arrival order. */
  received: ReceivedCallback[];
  /** Emits `received` with each request as it is recorded (test/support/events.ts `waitForState`). */
  events: EventEmitter;
  close(): Promise<void>;
}

/** Starts a receiver on a free port. */
export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const received: ReceivedCallback[] = [];
  const events = new EventEmitter();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const callback = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      received.push(callback);
      res.writeHead(200).end("ok");
      events.emit("received", callback);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    events,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
