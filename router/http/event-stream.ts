/**
 * Ending an SSE response (`/graphql` with `Accept: text/event-stream`) from outside the gateway,
 * in the GraphQL-over-SSE framing it writes (distinct connections mode): optional `next` events,
 * then `complete`, then the connection is closed (which also ends the operation in the gateway).
 * Used when a key is disabled (router/revocation.ts) and on graceful shutdown (router/server.ts).
 */
import type http from "node:http";

/**
 * Ends an SSE response with `complete`, after `next` events with the given payloads. The leading
 * blank line ends (unsent: it has no data yet) any event whose `event:` line the gateway already
 * wrote. A response whose headers are not sent yet (its key still being checked) is only closed.
 * @param res the response of an SSE request
 * @param next payloads (GraphQL results) written as `next` events before `complete`
 */
export function completeEventStream(res: http.ServerResponse, next: readonly unknown[] = []): void {
  if (res.destroyed || res.writableEnded) return;
  if (!res.headersSent) return void res.destroy();
  res.on("error", () => undefined); // a chunk the gateway writes after this end is dropped, not a crash
  const events = next.map((payload) => `event: next\ndata: ${JSON.stringify(payload)}\n\n`).join("");
  res.end(`\n${events}event: complete\ndata:\n\n`, () => res.destroy());
}
