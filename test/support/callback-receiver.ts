/**
 * A callback (webhook) receiver for tests: a real HTTP server on loopback that accepts every
 * request with 200 and records its headers and body, for a key's `callbackUrl`.
 */
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
  close(): Promise<void>;
}

/** Starts a receiver on a free port. */
export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const received: ReceivedCallback[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
