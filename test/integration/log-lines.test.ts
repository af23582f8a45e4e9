/**
 * The router's log line per request (README "Configuration": LOG_FORMAT, LOG_LEVEL): route
 * pattern, GraphQL operation name, key id, status and duration in whole milliseconds; JSON for a
 * collector, human-readable lines (pino-pretty) for a person at a terminal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { createLogger, logFormatFor, startStack, type Stack } from "../../bin/stack.ts";
import { createKey } from "../../src/auth/keys.ts";
import { parseYuan } from "../../src/money.ts";
import { createTestDatabase } from "../support/db.ts";
import { json, lineSink } from "../support/log-sink.ts";

describe("the request log line", () => {
  const sink = lineSink();
  let stack: Stack;
  let url: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const database = await createTestDatabase();
    drop = database.drop;
    const config = loadConfig({ ...database.env, PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0", LOG_LEVEL: "info", LOG_FORMAT: "json" });
    stack = await startStack(config, undefined, createLogger(config, sink.stream));
    url = stack.url!;
  });
  afterAll(async () => {
    await stack.close();
    await drop();
  });

  const requestLine = (requestId: string) => sink.waitFor(json, (l) => l.msg === "request" && l.request_id === requestId);

  it("names the route, the GraphQL operation, the key id, the status and whole milliseconds of a /graphql request", async () => {
    const key = await createKey(stack.db!, { name: "logged", balance: parseYuan("1"), rateLimit: 10 });
    const response = await fetch(`${url}/graphql`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json", "x-request-id": "log-graphql-1" },
      body: JSON.stringify({ query: "query WhoAmI { viewer { id } }" }),
    });
    expect(response.status).toBe(200);
    const line = await requestLine("log-graphql-1");
    expect(line).toMatchObject({ route: "/graphql", operation_name: "WhoAmI", key_id: key.id, status: 200, method: "POST" });
    expect(Number.isInteger(line.duration_ms)).toBe(true);
    expect(JSON.stringify(line)).not.toContain(key.key);
  });

  it("names the route pattern (not the raw path) and the shim's operation of a REST request", async () => {
    const key = await createKey(stack.db!, { name: "logged-rest", balance: parseYuan("1") });
    const response = await fetch(`${url}/api/v1/tasks/task_nothere`, { headers: { authorization: `Bearer ${key.key}`, "x-request-id": "log-rest-1" } });
    expect(response.status).toBe(404);
    const line = await requestLine("log-rest-1");
    expect(line).toMatchObject({ route: "/api/v1/tasks/:task_id", operation_name: "RestTask", key_id: key.id, status: 404 });
    expect(Number.isInteger(line.duration_ms)).toBe(true);
  });

  it("has no key id for a request whose key does not authenticate", async () => {
    const response = await fetch(`${url}/openapi/v1/vendors`, { headers: { authorization: "Bearer sy_wrong", "x-request-id": "log-bad-key-1" } });
    expect(response.status).toBe(401);
    const line = await requestLine("log-bad-key-1");
    expect(line).toMatchObject({ route: "/openapi/v1/vendors", operation_name: "RestVendors", status: 401 });
    expect(line).not.toHaveProperty("key_id");
  });
});

describe("the log format", () => {
  it("is human-readable when LOG_FORMAT=pretty, JSON when LOG_FORMAT=json", async () => {
    const pretty = lineSink();
    createLogger(loadConfig({ LOG_FORMAT: "pretty", LOG_LEVEL: "info" }), pretty.stream).info({ route: "/graphql", key_id: "key_1", status: 200 }, "request");
    const line = await pretty.waitFor(
      (l) => l,
      (l) => l.includes("request"),
    );
    expect(json(line)).toBeNull();
    expect(line).toMatch(/INFO.*request.*"route":"\/graphql".*"key_id":"key_1"/);

    const plain = lineSink();
    createLogger(loadConfig({ LOG_FORMAT: "json", LOG_LEVEL: "info" }), plain.stream).info({ route: "/graphql" }, "request");
    expect(await plain.waitFor(json, (l) => l.msg === "request")).toMatchObject({ route: "/graphql", level: 30 });
  });

  it("by default is pretty only on a terminal outside production", () => {
    const auto = (nodeEnv: string, tty: boolean) => logFormatFor(loadConfig({ NODE_ENV: nodeEnv }), tty);
    expect(auto("development", true)).toBe("pretty");
    expect(auto("development", false)).toBe("json");
    expect(auto("production", true)).toBe("json");
    expect(logFormatFor(loadConfig({ NODE_ENV: "production", LOG_FORMAT: "pretty" }), false)).toBe("pretty");
  });

  it("refuses an unknown LOG_FORMAT at start", () => {
    expect(() => loadConfig({ LOG_FORMAT: "yaml" })).toThrow(/LOG_FORMAT/);
  });
});
