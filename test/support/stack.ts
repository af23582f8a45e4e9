/**
 * Starts a real Switchyard stack for a test: router and generation subgraph on real ports
 * (port 0), a fresh database (SQLite in a temporary folder, or with `TEST_DATABASE=postgres` a
 * PostgreSQL database of its own; test/support/db.ts), the simulator (or a fake upstream) behind it.
 */
import type { DestinationStream } from "pino";
import { loadConfig } from "../../src/config.ts";
import { createKey, type CreateKeyOptions } from "../../src/auth/keys.ts";
import { parseYuan } from "../../src/money.ts";
import { createLogger, startStack, type Stack } from "../../bin/stack.ts";
import { createTestDatabase } from "./db.ts";

/** A running test stack with helpers to call it. */
export interface TestStack {
  url: string;
  stack: Stack;
  /** Creates a key with a balance in yuan ("10", "1.125") and options of `keys create`. */
  createKey(balanceYuan?: string, options?: Partial<CreateKeyOptions>): Promise<{ id: string; key: string; account_id: string; webhook_secret: string }>;
  /** Calls a REST path; returns status, headers and parsed JSON body. */
  rest(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** Runs a GraphQL operation through the router. */
  graphql(query: string, variables?: Record<string, unknown>, key?: string, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  /** Polls the REST task endpoint until `done(task)` holds (or throws after `timeoutMs`). */
  waitForTask(key: string, taskId: string, done?: (task: any) => boolean, timeoutMs?: number): Promise<any>;
  /** Stops the stack as a deploy does (WebSockets closed with 1001) and starts it again on the same router port and database. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a stack with test-friendly timings (50 ms poll interval and simulator steps).
 * @param env extra environment (for example GENERATION_UPSTREAM_URL, DNS_SERVERS)
 * @param options `logs`: where the stack's log lines go (with `LOG_LEVEL` in `env`; default: nowhere)
 */
export async function startTestStack(env: Record<string, string> = {}, options: { logs?: DestinationStream } = {}): Promise<TestStack> {
  const database = await createTestDatabase();
  const settings: Record<string, string> = {
    ...database.env,
    PORT: "0",
    GENERATION_PORT: "0",
    CLOUD_PORT: "0",
    LOG_LEVEL: "silent",
    TASK_POLL_INTERVAL_MS: "50",
    SIMULATOR_STEP_MS: "50",
    UPSTREAM_TIMEOUT_MS: "2000",
    PROVISION_DELAY_MS: "60",
    WEBHOOK_RETRY_BASE_MS: "40",
    ...env,
  };
  const logger = (config: ReturnType<typeof loadConfig>) => (options.logs ? createLogger(config, options.logs) : undefined);
  const config = loadConfig(settings);
  let stack = await startStack(config, undefined, logger(config)).catch(async (error) => {
    await database.drop();
    throw error;
  });
  const url = stack.url!;

  async function rest(method: string, urlPath: string, options: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${url}${urlPath}`, { method, headers, body });
    const text = await response.text();
    let parsed: any = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON: keep the text */
    }
    return { status: response.status, body: parsed, headers: response.headers };
  }

  async function graphql(query: string, variables: Record<string, unknown> = {}, key?: string, extra: Record<string, string> = {}) {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json", ...extra };
    if (key) headers.authorization = `Bearer ${key}`;
    const response = await fetch(`${url}/graphql`, { method: "POST", headers, body: JSON.stringify({ query, variables }) });
    return { status: response.status, body: await response.json() };
  }

  async function waitForTask(key: string, taskId: string, done: (task: any) => boolean = (t) => t.status === 1 || t.status === 2, timeoutMs = 10_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await rest("GET", `/api/v1/tasks/${taskId}`, { key });
      if (body?.data && done(body.data)) return body.data;
      if (Date.now() > deadline) throw new Error(`task ${taskId} did not reach the expected state: ${JSON.stringify(body)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  return {
    url,
    get stack() {
      return stack;
    },
    createKey: (balanceYuan = "100", options = {}) => createKey(stack.db!, { name: "test", balance: parseYuan(balanceYuan), ...options }),
    rest,
    graphql,
    waitForTask,
    async restart() {
      await stack.close();
      const again = loadConfig({ ...settings, PORT: new URL(url).port });
      stack = await startStack(again, undefined, logger(again));
    },
    async close() {
      await stack.close();
      await database.drop();
    },
  };
}

/**
 * Calls `probe` until `done(result)` holds; the way tests wait for a state reached in the
 * background (provisioning, callbacks) without fixed sleeps.
 * @throws Error with the last result after `timeoutMs`
 */
export async function waitUntil<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not reached in ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
