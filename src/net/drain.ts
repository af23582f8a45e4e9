/**
 * Graceful shutdown of HTTP and WebSocket servers (issue 6 item 4): stop accepting, let the
 * requests in flight finish, and only cut what is still open after a deadline.
 */
import type http from "node:http";
import type { WebSocketServer } from "ws";

/** The default time in-flight requests get to finish (SHUTDOWN_TIMEOUT_MS). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;

/**
 * Closes an HTTP server gracefully: it stops listening at once; idle keep-alive connections are
 * closed at once and then as soon as their request in flight has been answered; connections
 * still busy after `timeoutMs` are cut.
 * @returns when every connection is closed
 */
export function drainHttpServer(server: http.Server, timeoutMs: number = DEFAULT_DRAIN_TIMEOUT_MS): Promise<void> {
  return new Promise<void>((resolve) => {
    if (!server.listening) {
      server.closeAllConnections();
      resolve();
      return;
    }
    // A keep-alive connection whose response just finished becomes idle: close it promptly
    // rather than waiting out its keep-alive timeout.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const force = setTimeout(() => server.closeAllConnections(), Math.max(0, timeoutMs));
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/**
 * Closes a WebSocket server's clients with 1001 (going away) and ends the server; a client that
 * has not completed the closing handshake after `timeoutMs` is terminated.
 * @param dispose the graphql-ws cleanup (it sends the 1001 close frames itself), if any
 */
export async function closeWebSockets(
  wss: WebSocketServer,
  dispose: (() => Promise<void> | void) | undefined,
  timeoutMs: number = DEFAULT_DRAIN_TIMEOUT_MS,
): Promise<void> {
  for (const client of wss.clients) client.close(1001, "Server shutting down");
  const force = setTimeout(
    () => {
      for (const client of wss.clients) client.terminate();
    },
    Math.max(0, timeoutMs),
  );
  try {
    if (dispose) await dispose();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  } finally {
    clearTimeout(force);
  }
}
