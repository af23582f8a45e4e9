import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { freePort } from "../support/deploy.ts";
import { runCli } from "../support/process.ts";

/** A server that accepts connections and never says a word (a PostgreSQL that does not answer). */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The process failed with exactly one line on stderr (no stack trace) and nothing on stdout. */
function expectOneLineFailure(run: { code: number | null; stdout: string; stderr: string }, pattern: RegExp): void {
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: "" });
  expect(run.stderr.endsWith("\n")).toBe(true);
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}

describe("configuration that cannot work fails loudly, in one line, as an operator meets it", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-cli-config-"));
  const env = { DATA_DIR: dataDir, PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0", LOG_LEVEL: "info" };
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it("refuses to start on a DATABASE_URL that is not PostgreSQL, naming the variable and not the URL", async () => {
    for (const args of [["start"], ["keys", "create", "--name", "x"]]) {
      const run = await runCli(args, { ...env, DATABASE_URL: "mysql://root:hunter2@db.example/switchyard" });
      expectOneLineFailure(run, /^switchyard: Invalid configuration: DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL, not mysql:\/\//);
      expect(run.stderr).not.toMatch(/hunter2/);
    }
    // Nothing was written to SQLite instead.
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it("refuses a GENERATION_UPSTREAM_URL with credentials at start, naming the variable and not the password", async () => {
    const run = await runCli(["start"], { ...env, GENERATION_UPSTREAM_URL: "https://relay:hunter2@provider.example" });
    expectOneLineFailure(
      run,
      /^switchyard: Invalid configuration: GENERATION_UPSTREAM_URL: must not contain credentials \(user:password@\): give the provider's key in GENERATION_UPSTREAM_KEY$/,
    );
    expect(run.stderr).not.toMatch(/hunter2|relay/);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it("names PORT when it is not a port", async () => {
    expectOneLineFailure(
      await runCli(["start"], { ...env, PORT: "abc" }),
      /^switchyard: Invalid configuration: PORT: must be a TCP port: a whole number from 0 to 65535/,
    );
  });

  it("names LOG_LEVEL and lists pino's levels when it is not one", async () => {
    expectOneLineFailure(
      await runCli(["start"], { ...env, LOG_LEVEL: "loud" }),
      /^switchyard: Invalid configuration: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent$/,
    );
  });

  it("says a PostgreSQL server that refuses connections cannot be reached, at start and in a CLI command, without its password", async () => {
    const port = await freePort();
    const url = `postgres://switchyard:hunter2@127.0.0.1:${port}/switchyard`;
    for (const args of [["start"], ["keys", "list"], ["migrate"]]) {
      const run = await runCli(args, { ...env, DATABASE_URL: url });
      expectOneLineFailure(
        run,
        new RegExp(`^switchyard: database: cannot connect to postgres 127\\.0\\.0\\.1:${port}/switchyard \\(DATABASE_URL\\): connection refused$`),
      );
      expect(run.stderr).not.toMatch(/hunter2/);
    }
  });

  it("says a PostgreSQL server that does not answer cannot be reached, after the connect timeout", { timeout: 60_000 }, async () => {
    const silent = await silentServer();
    try {
      const run = await runCli(["keys", "list"], { ...env, DATABASE_URL: `postgres://postgres@127.0.0.1:${silent.port}/switchyard` });
      expectOneLineFailure(
        run,
        new RegExp(`^switchyard: database: cannot connect to postgres 127\\.0\\.0\\.1:${silent.port}/switchyard \\(DATABASE_URL\\): no answer within 10 s$`),
      );
    } finally {
      await silent.close();
    }
  });

  describe("with a PostgreSQL server", () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase("switchyard-cli-config-pg-", { postgres: true });
    });
    afterAll(() => database?.drop());

    it("says a database that does not exist does not, in one line", async () => {
      const url = new URL(database.databaseUrl!);
      url.pathname = `/${url.pathname.slice(1)}_missing`;
      const run = await runCli(["migrate"], { ...env, DATABASE_URL: url.toString() });
      expectOneLineFailure(
        run,
        /^switchyard: database: cannot connect to postgres [^ ]+:\d+\/sy_test_\w+_missing \(DATABASE_URL\): database "sy_test_\w+_missing" does not exist$/,
      );
    });

    it("prints which database a command opened on stderr, host, port and name but never the user's password", async () => {
      const url = new URL(database.databaseUrl!);
      url.password = "hunter2"; // the test server trusts local connections: the password is not checked
      const run = await runCli(["keys", "list"], { ...env, DATABASE_URL: url.toString() });
      expect(run.code).toBe(0);
      expect(run.stdout).toBe("no keys\n");
      expect(run.stderr).toBe(`database: postgres ${url.hostname}:${url.port || 5432}${url.pathname}\n`);
    });
  });

  it("prints which SQLite file a command opened on stderr", async () => {
    const run = await runCli(["keys", "list"], env);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe(`database: sqlite ${path.join(dataDir, "switchyard.db")}\n`);
  });

  it.each([["PORT"], ["GENERATION_PORT"], ["CLOUD_PORT"]])(
    "refuses to start when %s is in use, naming the variable and the address",
    { timeout: 60_000 },
    async (variable) => {
      const taken = net.createServer();
      await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
      const { port } = taken.address() as net.AddressInfo;
      try {
        const run = await runCli(["start"], { ...env, [variable]: String(port) });
        expectOneLineFailure(
          run,
          new RegExp(`^switchyard: ${variable}: 127\\.0\\.0\\.1:${port} is already in use; stop what listens there or set ${variable} to another port$`),
        );
      } finally {
        await new Promise((resolve) => taken.close(resolve));
      }
    },
  );

  it("refuses two servers on one port, naming both variables", async () => {
    const port = await freePort();
    const run = await runCli(["start"], { ...env, PORT: String(port), CLOUD_PORT: String(port) });
    expectOneLineFailure(run, new RegExp(`^switchyard: CLOUD_PORT and PORT are both ${port}: each server needs its own port$`));
  });
});

describe("`switchyard config check` and `--env-file`, as an operator prepares a deployment", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-config-check-"));
  const env = { DATA_DIR: dataDir, PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0" };
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const envFile = (text: string) => {
    const file = path.join(dataDir, `${Math.random().toString(36).slice(2)}.env`);
    fs.writeFileSync(file, text);
    return file;
  };

  it("prints every setting with secrets and URL passwords masked, marks defaults, and exits 0", async () => {
    const secret = "s".repeat(40);
    const run = await runCli(["config", "check"], {
      ...env,
      SUBGRAPH_SECRET: secret,
      ADMIN_TOKEN: "admin-hunter2",
      CHANNEL_KEY_SECRET: "c".repeat(40),
      GENERATION_UPSTREAM_KEY: "upstream-hunter2",
      DATABASE_URL: "postgres://sy:hunter2@db.example:5432/switchyard",
      REDIS_URL: "redis://:hunter2@redis.example:6379",
    });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(/hunter2|sssss|ccccc/);
    const line = (name: string) =>
      run.stdout
        .split("\n")
        .find((l) => l.startsWith(`${name} `))
        ?.replace(/\s+/g, " ");
    expect(line("SUBGRAPH_SECRET")).toBe("SUBGRAPH_SECRET ****");
    expect(line("ADMIN_TOKEN")).toBe("ADMIN_TOKEN ****");
    expect(line("GENERATION_UPSTREAM_KEY")).toBe("GENERATION_UPSTREAM_KEY ****");
    expect(line("DATABASE_URL")).toBe("DATABASE_URL postgres://sy:****@db.example:5432/switchyard");
    expect(line("REDIS_URL")).toBe("REDIS_URL redis://:****@redis.example:6379");
    expect(line("METRICS_TOKEN")).toBe("METRICS_TOKEN (default)");
    expect(line("WEBHOOK_MAX_ATTEMPTS")).toBe("WEBHOOK_MAX_ATTEMPTS 15 (default)");
    expect(run.stderr).toBe("configuration is valid for generation, cloud, router\n");
  });

  it("fails with the start's own one-line error, exit 1: a bad value, a router without SUBGRAPH_SECRET or subgraph URLs", { timeout: 120_000 }, async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [[], { PORT: "abc" }, /^switchyard: Invalid configuration: PORT: must be a TCP port/],
      [["router"], {}, /^switchyard: SUBGRAPH_SECRET is required when the router and the subgraphs run as separate processes/],
      [["router"], { SUBGRAPH_SECRET: "x".repeat(32) }, /^switchyard: GENERATION_URL is required when the generation subgraph runs elsewhere/],
    ];
    for (const [roles, extra, message] of cases) {
      const [check, start] = await Promise.all([
        runCli(["config", "check", ...roles], { ...env, ...extra }),
        runCli(["start", ...roles], { ...env, ...extra }),
      ]);
      expect({ roles, extra, code: check.code }).toEqual({ roles, extra, code: 1 });
      expect(check.stderr).toMatch(message);
      expect(check.stderr.trimEnd().split("\n")).toHaveLength(1);
      expectOneLineFailure(start, message);
    }
  });

  it("reads --env-file with Node's parser for start and config check, the environment winning over the file", async () => {
    const file = envFile('# a comment\nWEBHOOK_MAX_ATTEMPTS=7\nLOG_LEVEL="warn"\nPORT=abc\n');
    const fromFile = await runCli(["config", "check", "--env-file", file], { ...env, PORT: "0" });
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout).toMatch(/^WEBHOOK_MAX_ATTEMPTS\s+7$/m);
    expect(fromFile.stdout).toMatch(/^LOG_LEVEL\s+warn$/m);
    expect(fromFile.stdout).toMatch(/^PORT\s+0$/m);
    const { PORT: _port, ...withoutPort } = env;
    expectOneLineFailure(await runCli(["start", "--env-file", file], withoutPort), /^switchyard: Invalid configuration: PORT: must be a TCP port/);
  });

  it("names an --env-file it cannot read, in one line, exit 1", async () => {
    const missing = path.join(dataDir, "missing.env");
    for (const args of [["config", "check"], ["start"]]) {
      expectOneLineFailure(await runCli([...args, "--env-file", missing], env), new RegExp(`^switchyard: --env-file: cannot read ${missing}: no such file$`));
    }
  });

  it("accepts .env.example as it stands: every setting at its default", async () => {
    const run = await runCli(["config", "check", "--env-file", fileURLToPath(new URL("../../.env.example", import.meta.url))], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^CHANNEL_MAX_ATTEMPTS\s+5\s+\(default\)$/m);
  });
});
