/**
 * Backups taken while the server takes money (issue 23 §6; README "Backups and upgrades"): a real
 * `switchyard start` under a stream of paid REST submissions (some failing, so refunded) and admin
 * top-ups over real HTTP, a backup taken mid-stream (`switchyard backup` on SQLite, `pg_dump -Fc`
 * on PostgreSQL, the README's commands), restored into a fresh database (`switchyard restore`,
 * `pg_restore`), where `switchyard verify` passes, and the restored copy starts and takes money.
 * Every wait is for an event, never a sleep.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Knex } from "knex";
import { afterEach, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { LATEST_MIGRATION } from "../../src/db/migrations/index.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { runCli, startCli, type RunningProcess } from "../support/process.ts";
import { waitUntil } from "../support/stack.ts";

const run = promisify(execFile);
const ADMIN_TOKEN = "backup-test-admin-token";
const SERVER_ENV = { PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0", TASK_POLL_INTERVAL_MS: "50", SIMULATOR_STEP_MS: "50", ADMIN_TOKEN, LOG_LEVEL: "info" };
const TOP_UP = "mutation($input: AdminTopUpAccountInput!) { adminTopUpAccount(input: $input) { balance { amount } } }";

/** A started `switchyard start` and its demo key (when it printed one). */
async function startServer(env: Record<string, string>) {
  const proc = startCli(["start"], { ...env, ...SERVER_ENV });
  const [, url] = await proc.waitFor(/Switchyard router:\s+(http:\/\/\S+)/, 120_000);
  await proc.waitFor(/"event":"ready"/, 60_000);
  const demo = proc.output().match(/Demo API key[^:]*: (sy_\S+) \(id (key_\w+)\)/);
  return { proc, url: url!, key: demo?.[1], keyId: demo?.[2] };
}

/**
 * Paid image submissions (one in five fails upstream and is refunded) from three clients and admin
 * top-ups from a fourth, until stopped. `reach(n)` resolves once n submissions were answered.
 */
function startStream(url: string, key: string, keyId: string) {
  let stopping = false;
  const statuses: number[] = [];
  let topUps = 0;
  const waiters: { n: number; resolve(): void }[] = [];
  const answered = (status: number) => {
    statuses.push(status);
    for (const w of waiters.filter((w) => statuses.length >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  const submitter = async (client: number) => {
    for (let i = 0; !stopping; i++) {
      const response = await fetch(`${url}/api/v1/images/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ prompt: `a lighthouse ${client}-${i}${i % 5 === 4 ? " #fail" : ""}`, model_id: 45, count: 1 }),
      });
      await response.arrayBuffer();
      answered(response.status);
    }
  };
  const topper = async () => {
    while (!stopping) {
      const response = await fetch(`${url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ query: TOP_UP, variables: { input: { keyId, amount: "1.5" } } }),
      });
      const body = await response.json();
      expect(body.errors).toBeUndefined();
      topUps += 1;
    }
  };
  const clients = [submitter(0), submitter(1), submitter(2), topper()];
  return {
    submitted: () => statuses.length,
    topUps: () => topUps,
    statuses,
    reach: (n: number) => (statuses.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve }))),
    async stop() {
      stopping = true;
      await Promise.all(clients);
    },
  };
}

/** Tasks (and how many are still open), ledger entries and the key's balance in milli-yuan: a copy against its source. */
async function figuresOf(database: Pick<TestDatabase, "databaseUrl" | "dataDir">, keyId: string) {
  const db = openDb(database);
  try {
    const count = async (table: string, where: (q: Knex.QueryBuilder) => void = () => {}) => Number((await db(table).where(where).count({ n: "*" }))[0]!.n);
    // Open tasks first: once none is open, no settlement moves money any more, so the figures read
    // after it (the balance last) include every settlement (the reads are separate statements).
    const openTasks = await count("tasks", (q) => q.whereIn("status", [0, 3, 4]));
    const tasks = await count("tasks");
    const ledgerEntries = await count("ledger_entries");
    const account = await db("accounts").whereIn("id", db("api_keys").where("id", keyId).select("account_id")).first("balance");
    return { tasks, openTasks, ledgerEntries, balance: Number(account.balance) };
  } finally {
    await db.destroy();
  }
}

describe("backups taken while the server takes paid submissions and top-ups", () => {
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const stopLater = (proc: RunningProcess) => cleanups.push(() => proc.stop("SIGTERM"));

  /**
   * The scenario of both databases: stream, `takeBackup` mid-stream (the stream keeps going while
   * it runs), stop, `restore` into `restored`, verify, start the restored copy and pay with it.
   */
  async function backupUnderWrites(source: TestDatabase, restored: TestDatabase, takeBackup: () => Promise<void>, restore: () => Promise<void>): Promise<void> {
    const server = await startServer(source.env);
    stopLater(server.proc);
    expect(server.key).toBeDefined();
    const stream = startStream(server.url, server.key!, server.keyId!);
    try {
      await stream.reach(30);
      const before = stream.submitted();
      await takeBackup();
      const during = stream.submitted() - before;
      // The server kept answering while the backup ran, and keeps writing after it.
      expect(during).toBeGreaterThan(0);
      await stream.reach(stream.submitted() + 15);
    } finally {
      await stream.stop();
    }
    expect(new Set(stream.statuses)).toEqual(new Set([200]));
    expect(stream.topUps()).toBeGreaterThan(0);
    expect(await server.proc.stop("SIGTERM")).toBe(0);

    await restore();
    const verify = await runCli(["verify"], restored.env);
    expect({ code: verify.code, stdout: verify.stdout }).toEqual({
      code: 0,
      stdout: "ledger, running totals, tasks, orders and audit rows verified: no discrepancies\n",
    });
    // The copy is the database as of a moment mid-stream: some of the work, not all of it.
    const live = await figuresOf(source, server.keyId!);
    const copy = await figuresOf(restored, server.keyId!);
    expect(copy.tasks).toBeGreaterThan(0);
    expect(copy.tasks).toBeLessThan(live.tasks);
    expect(copy.ledgerEntries).toBeLessThan(live.ledgerEntries);

    // The restored copy starts (no new demo key: its keys came back), settles the tasks that were
    // open when the backup was taken, and takes money again.
    const again = await startServer(restored.env);
    stopLater(again.proc);
    expect(again.key).toBeUndefined();
    const settled = await waitUntil(
      () => figuresOf(restored, server.keyId!),
      (figures) => figures.openTasks === 0,
      60_000,
    );
    const usage = await fetch(`${again.url}/api/v1/usage`, { headers: { authorization: `Bearer ${server.key}` } });
    expect(usage.status).toBe(200);
    expect((await usage.json()).data.balance).toBe(settled.balance / 1000);
    const paid = await fetch(`${again.url}/api/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "after the restore", model_id: 45, count: 1 }),
    });
    expect(paid.status).toBe(200);
    expect(await again.proc.stop("SIGTERM")).toBe(0);
    expect((await figuresOf(restored, server.keyId!)).ledgerEntries).toBe(settled.ledgerEntries + 1);
  }

  it("SQLite: switchyard backup mid-stream, restore into a fresh DATA_DIR, verify passes, the copy starts; live databases and files are never replaced", {
    timeout: 600_000,
  }, async () => {
    const source = await createTestDatabase("switchyard-backup-source-", { postgres: false });
    const restored = await createTestDatabase("switchyard-backup-restored-", { postgres: false });
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-backups-"));
    cleanups.push(
      () => source.drop(),
      () => restored.drop(),
      () => fs.rmSync(folder, { recursive: true, force: true }),
    );
    const file = path.join(folder, "switchyard-backup.db");

    await backupUnderWrites(
      source,
      restored,
      async () => {
        const backup = await runCli(["backup", file], source.env);
        expect(backup.code).toBe(0);
        expect(backup.stdout).toMatch(new RegExp(`^backed up to ${file} \\(\\d+ bytes, schema ${LATEST_MIGRATION}\\)\\n$`));
        expect(backup.stderr).toBe(`database: sqlite ${path.join(source.dataDir, "switchyard.db")}\n`);
        // One self-contained file: no write-ahead log, no leftover partial copy.
        expect(fs.readdirSync(folder)).toEqual(["switchyard-backup.db"]);
        // Restoring into the live server's DATA_DIR is refused and changes nothing there.
        const liveFiles = fs.readdirSync(source.dataDir).sort();
        const onLive = await runCli(["restore", file], source.env);
        expect({ code: onLive.code, stdout: onLive.stdout }).toEqual({ code: 1, stdout: "" });
        expect(onLive.stderr).toBe(
          `switchyard: restore: ${path.join(source.dataDir, "switchyard.db")} exists; restore never replaces a database: ` +
            "stop the server, move switchyard.db and its -wal and -shm files aside, then restore\n",
        );
        expect(fs.readdirSync(source.dataDir).sort()).toEqual(liveFiles);
      },
      async () => {
        const restore = await runCli(["restore", file], restored.env);
        expect(restore.code).toBe(0);
        expect(restore.stdout).toBe(
          `restored ${path.join(restored.dataDir, "switchyard.db")} (schema ${LATEST_MIGRATION}); next: switchyard verify, then switchyard start\n`,
        );
        expect(fs.readdirSync(restored.dataDir)).toEqual(["switchyard.db"]);
      },
    );

    // A backup never replaces a file, and restore takes only a Switchyard database.
    const again = await runCli(["backup", file], source.env);
    expect({ code: again.code, stderr: again.stderr }).toEqual({
      code: 1,
      stderr: `switchyard: backup: ${file} exists; a backup never replaces a file: name a new one\n`,
    });
    const notADatabase = path.join(folder, "notes.txt");
    fs.writeFileSync(notADatabase, "not a database, but long enough to look like one to a careless reader ".repeat(20));
    const empty = await createTestDatabase("switchyard-backup-empty-", { postgres: false });
    cleanups.push(() => empty.drop());
    const refused = await runCli(["restore", notADatabase], empty.env);
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({ code: 1, stderr: `switchyard: restore: ${notADatabase} is not a SQLite database\n` });
    expect(fs.readdirSync(empty.dataDir)).toEqual([]);
  });

  it("PostgreSQL: pg_dump -Fc mid-stream, pg_restore into a fresh database, verify passes, the copy starts; backup and restore point at them", {
    timeout: 600_000,
  }, async () => {
    const source = await createTestDatabase("switchyard-pgdump-", { postgres: true });
    const restored = await createTestDatabase("switchyard-pgrestore-", { postgres: true });
    cleanups.push(
      () => source.drop(),
      () => restored.drop(),
    );
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-pgdump-"));
    cleanups.push(() => fs.rmSync(folder, { recursive: true, force: true }));
    const file = path.join(folder, "switchyard.dump");

    // pg_dump must be at least the server's major version (the README says so).
    const { stdout: clientVersion } = await run("pg_dump", ["--version"]);
    const db = openDb(source);
    const serverMajor = Number((await db.raw("show server_version_num")).rows[0].server_version_num.slice(0, -4));
    await db.destroy();
    expect(Number(/\) (\d+)/.exec(clientVersion)![1])).toBeGreaterThanOrEqual(serverMajor);

    for (const command of ["backup", "restore"]) {
      const refused = await runCli([command, file], source.env);
      expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: "" });
      expect(refused.stderr).toBe(
        command === "backup"
          ? 'switchyard: backup: DATABASE_URL is PostgreSQL: back it up with pg_dump -Fc (README "Backups and upgrades")\n'
          : 'switchyard: restore: DATABASE_URL is PostgreSQL: restore a pg_dump -Fc file with pg_restore (README "Backups and upgrades")\n',
      );
    }

    await backupUnderWrites(
      source,
      restored,
      async () => {
        await run("pg_dump", ["--format=custom", `--file=${file}`, `--dbname=${source.databaseUrl}`]);
      },
      async () => {
        await run("pg_restore", ["--no-owner", "--exit-on-error", "--single-transaction", `--dbname=${restored.databaseUrl}`, file]);
        const status = JSON.parse((await runCli(["migrate", "status", "--json"], restored.env)).stdout);
        expect(status).toMatchObject({ schema_version: LATEST_MIGRATION, pending: [], locked: false });
      },
    );
  });
});
