/**
 * Counts the SQL statements run on behalf of HTTP requests (for no-N+1 tests).
 *
 * The stack runs in the test's process, so knex's `query` event on its knex instance sees every
 * statement. Background workers (task poller, outbox dispatcher, provisioning, statement exports)
 * share that instance and tick every few tens of milliseconds, so a statement is counted only
 * when it runs on behalf of an HTTP request: while {@link measureStatements} runs, every `request`
 * event of a node:http server in this process is wrapped in an AsyncLocalStorage scope naming the
 * server's port, which follows the request's promises, DataLoader batches and knex calls, and
 * never the workers' timers.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { AsyncLocalStorage } from "node:async_hooks";
import type { Knex } from "knex";

/** One statement and the port of the server whose request ran it. */
export interface CountedStatement {
  sql: string;
  port: number | undefined;
}

const requestScope = new AsyncLocalStorage<{ port: number | undefined; url: string | undefined }>();
const originalEmit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;

/**
 * Runs `work` and returns its result with the statements run for HTTP requests meanwhile and the
 * requests each server received.
 */
export async function measureStatements<T>(
  db: Knex,
  work: () => Promise<T>,
): Promise<{ result: T; statements: CountedStatement[]; requests: { port: number | undefined; url: string | undefined }[] }> {
  const statements: CountedStatement[] = [];
  const requests: { port: number | undefined; url: string | undefined }[] = [];
  const onQuery = (query: { sql: string }) => {
    const scope = requestScope.getStore();
    if (scope) statements.push({ sql: query.sql, port: scope.port });
  };
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
    if (event !== "request") return originalEmit.call(this, event, ...args);
    const scope = { port: (this.address() as AddressInfo | null)?.port, url: (args[0] as http.IncomingMessage).url };
    requests.push(scope);
    return requestScope.run(scope, () => originalEmit.call(this, event, ...args));
  } as typeof http.Server.prototype.emit;
  db.on("query", onQuery);
  try {
    const result = await work();
    return { result, statements, requests };
  } finally {
    db.removeListener("query", onQuery);
    http.Server.prototype.emit = originalEmit as typeof http.Server.prototype.emit;
  }
}
