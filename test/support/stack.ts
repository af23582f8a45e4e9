/**
 * Starts a real Switchyard stack for a test: router and generation subgraph on real ports
 * (port 0), a fresh database (SQLite in a temporary folder, or with `TEST_DATABASE=postgres` a
 * PostgreSQL database of its own; test/support/db.ts), the simulator (or a fake upstream) behind it.
 */
import type { DestinationStream } from "pino";
import { loadConfig } from "../../src/config.ts";
import { createKey, hashKey, type CreateKeyOptions } from "../../src/auth/keys.ts";
import { accountTopic } from "../../src/events/pubsub.ts";
import { parseYuan } from "../../src/money.ts";
import { createLogger, startStack, type Stack } from "../../bin/stack.ts";
import { createTestDatabase } from "./db.ts";
import { waitForState } from "./events.ts";

/** An answer of `rest()`: the status, the parsed JSON body (the text when not JSON) and the headers. */
export interface RestAnswer<Body = any> {
  status: number;
  body: Body;
  headers: Headers;
}

/** An answer of `graphql()`: the HTTP status and the GraphQL response (`data`, `errors`, `extensions`). */
export interface GraphqlAnswer<Body = any> {
  status: number;
  body: Body;
}

/** One GraphQL error as the router answers it: every error carries its registry code in `extensions` (docs/architecture.md §4). */
export interface GraphqlError {
  message: string;
  path?: (string | number)[];
  /** `code`, `http.status`, and the details of the code (`scope`, `field`, ...). */
  extensions: Record<string, any>;
}

/** A GraphQL response body with typed `data` (for `graphql<GraphqlBody<{ viewer: ... }>>()`). */
export interface GraphqlBody<Data> {
  data?: Data | null;
  errors?: GraphqlError[];
  extensions?: Record<string, unknown>;
}

/** A running test stack with helpers to call it. */
export interface TestStack {
  url: string;
  stack: Stack;
  /** Creates a key with a balance in yuan ("10", "1.125") and options of `keys create`. */
  createKey(balanceYuan?: string, options?: Partial<CreateKeyOptions>): Promise<{ id: string; key: string; account_id: string; webhook_secret: string }>;
  /** Calls a REST path; returns status, headers and parsed JSON body. */
  rest<Body = any>(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<RestAnswer<Body>>;
  /** Runs a GraphQL operation through the router; `Body` types the answer (see {@link GraphqlBody}). */
  graphql<Body = any>(query: string, variables?: Record<string, unknown>, key?: string, headers?: Record<string, string>): Promise<GraphqlAnswer<Body>>;
  /**
   * Reads the REST task now and again after each event of the key's account (the outbox publishes
   * every status change on `account:<id>`) until `done(task)` holds (or throws after `timeoutMs`).
   */
  waitForTask<Task = any>(key: string, taskId: string, done?: (task: Task) => boolean, timeoutMs?: number): Promise<Task>;
  /**
   * Reads `probe` now and again after each outbox event of the key's account (task status,
   * order paid/provisioned/failed, billing transaction, usage threshold: `account:<id>`) until
   * `done` holds: for a state the background loops reach and announce.
   */
  waitForAccount<T>(key: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs?: number): Promise<T>;
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

  async function rest<Body = any>(
    method: string,
    urlPath: string,
    options: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
  ): Promise<RestAnswer<Body>> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(`${url}${urlPath}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON: keep the text */
    }
    return { status: response.status, body: parsed as Body, headers: response.headers };
  }

  async function graphql<Body = any>(
    query: string,
    variables: Record<string, unknown> = {},
    key?: string,
    extra: Record<string, string> = {},
  ): Promise<GraphqlAnswer<Body>> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json", ...extra };
    if (key) headers.authorization = `Bearer ${key}`;
    const response = await fetch(`${url}/graphql`, { method: "POST", headers, body: JSON.stringify({ query, variables }) });
    return { status: response.status, body: (await response.json()) as Body };
  }

  async function waitForTask<Task = any>(
    key: string,
    taskId: string,
    done: (task: Task) => boolean = (t) => [1, 2].includes((t as { status?: number }).status!),
    timeoutMs = 10_000,
  ): Promise<Task> {
    const read = () => rest<{ data?: Task }>("GET", `/api/v1/tasks/${taskId}`, { key });
    const answer = await waitForAccount(key, read, (a) => a.body?.data !== undefined && done(a.body.data), timeoutMs);
    return answer.body.data!;
  }

  async function waitForAccount<T>(key: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
    const owner = await stack.db!("api_keys").where("key_hash", hashKey(key)).first("account_id");
    if (!owner) throw new Error(`no key ${key.slice(0, 8)}… in this stack`);
    return waitForState(stack.pubsub!, accountTopic(owner.account_id), probe, done, timeoutMs);
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
    waitForAccount,
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
 * Calls `probe` every 20 ms until `done(result)` holds. Only for a state that no event announces
 * (a statement export, a delivery row, a channel's health, a gauge, a Redis key's expiry): where an
 * event exists, wait on it (test/support/events.ts, {@link TestStack.waitForAccount}).
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
