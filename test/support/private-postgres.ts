/**
 * A PostgreSQL server of a test's own: `initdb` into a temporary folder and `pg_ctl` on a free
 * loopback port, so a test can stop and start it (the machine's shared cluster serves every other
 * test and must never be stopped). Debian's server binaries (/usr/lib/postgresql/<version>/bin);
 * as root they run as the `postgres` user (initdb refuses root), through runuser.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { freePort } from "./deploy.ts";

const run = promisify(execFile);

/** A running (or stopped) private server. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/<database>` (trust authentication). */
  url(database?: string): string;
  port: number;
  /** Creates a database. */
  createDatabase(name: string): Promise<void>;
  /** Stops the server (fast shutdown: open connections are ended) and waits until it is down. */
  stop(): Promise<void>;
  /** Starts it again on the same port and waits until it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  destroy(): Promise<void>;
}

/** The folder of the newest installed server's binaries, or undefined when none is installed. */
export function postgresBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!fs.existsSync(root)) return undefined;
  const versions = fs
    .readdirSync(root)
    .filter((v) => fs.existsSync(path.join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], "bin") : undefined;
}

/**
 * Creates and starts a private server.
 * @throws Error when no server binaries are installed, or initdb or the start fails (its log in the message)
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql");
  const asRoot = process.getuid?.() === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-pg-"));
  const data = path.join(dir, "data");
  const log = path.join(dir, "server.log");
  if (asRoot) {
    fs.chmodSync(dir, 0o755);
    await run("chown", ["postgres:postgres", dir]);
  }
  /** Runs a server binary, as `postgres` when we are root. */
  const pg = (tool: string, args: string[]) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", path.join(bin, tool), ...args]) : run(path.join(bin, tool), args);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = async () => {
    try {
      await pg("pg_ctl", ["-D", data, "-l", log, "-o", options, "-w", "-t", "60", "start"]);
    } catch (error) {
      const text = fs.existsSync(log) ? fs.readFileSync(log, "utf8").slice(-2000) : "";
      throw new Error(`private PostgreSQL did not start: ${(error as Error).message}\n${text}`);
    }
  };
  let running = false;
  await pg("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
  await start();
  running = true;
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    url,
    port,
    async createDatabase(name) {
      const { default: driver } = await import("pg");
      const client = new driver.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
    },
    async stop() {
      await pg("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "60", "stop"]);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async destroy() {
      if (running) await pg("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => undefined);
      running = false;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
