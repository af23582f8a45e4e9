/**
 * The one-statement submission on PostgreSQL (issue 25 §2, ADR 0027) under a real SIGKILL: the
 * real `switchyard start` on PostgreSQL takes 16 submissions at a time, is killed while some are
 * in flight, and is started again. Afterwards `switchyard verify` is clean, every submission the
 * client saw accepted is stored with its one debit, and the balance is the opening balance minus
 * the price of every stored task: a kill can cut a request off, never lose or double a fen.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, openDb } from "../../src/db/index.ts";
import { createKeyAudited } from "../../src/auth/keys.ts";
import { CLI_ACTOR } from "../../src/audit/log.ts";
import { parseYuan } from "../../src/money.ts";
import { runCli, startCli, type RunningProcess } from "../support/process.ts";
import { createTestDatabase } from "../support/db.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { waitUntil } from "../support/stack.ts";

/** Model 52, 5 s at 720P: 5.000 yuan. */
const PRICE = 5000;
const OPENING = 1_000_000; // 1,000 yuan: 200 tasks, more than the test submits
const IN_FLIGHT = 16;
/** Accepted answers seen before the kill. */
const BEFORE_KILL = 48;

describe("PostgreSQL submissions killed in flight", () => {
  let fake: FakeUpstream;
  beforeAll(async () => {
    fake = await startFakeUpstream();
  });
  afterAll(async () => {
    await fake.close();
  });

  it("keep the books exact: verify clean, every accepted task stored once, balance = opening − stored tasks' prices", { timeout: 120_000 }, async () => {
    const database = await createTestDatabase("switchyard-pgcrash-", { postgres: true });
    const db = openDb({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
    const procs: RunningProcess[] = [];
    try {
      await migrate(db);
      const { created: key } = await createKeyAudited(db, CLI_ACTOR, { name: "pg-crash", balance: parseYuan(String(OPENING / 1000)) });
      const env = {
        ...database.env,
        PORT: "0",
        GENERATION_PORT: "0",
        CLOUD_PORT: "0",
        GENERATION_UPSTREAM_URL: fake.url,
        TASK_POLL_INTERVAL_MS: "100",
        RECOVERY_MARGIN_MS: "200",
      };
      const start = async () => {
        const proc = startCli(["start"], env);
        procs.push(proc);
        const [, url] = await proc.waitFor(/Switchyard router:\s+(http:\/\/\S+)/, 45_000);
        return { proc, url: url! };
      };

      const first = await start();
      const accepted: string[] = [];
      let killed = false;
      let reachedKillPoint!: () => void;
      const killPoint = new Promise<void>((resolve) => (reachedKillPoint = resolve));
      // Each client submits until the process dies under it.
      const client = async () => {
        while (!killed) {
          try {
            const response = await fetch(`${first.url}/api/v1/video/generations`, {
              method: "POST",
              headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
              body: JSON.stringify({ prompt: "crash in flight", model_id: 52, seconds: 5 }),
            });
            const body = (await response.json()) as { code: number; data?: { task_id: string } };
            expect(body.code).toBe(200);
            accepted.push(body.data!.task_id);
            if (accepted.length >= BEFORE_KILL) reachedKillPoint();
          } catch (error) {
            if (!killed) throw error;
          }
        }
      };
      const clients = Array.from({ length: IN_FLIGHT }, client);
      await Promise.race([killPoint, Promise.all(clients)]);
      killed = true;
      expect(await first.proc.stop("SIGKILL")).toBeNull();
      await Promise.all(clients);

      // Started again: the recovery sweep hands any submission the kill left pending to the upstream.
      const second = await start();
      await waitUntil(
        () => db("tasks").where("submit_state", "pending").count({ n: "*" }).first(),
        (row) => Number(row?.n) === 0,
        30_000,
      );
      expect(await second.proc.stop("SIGTERM")).toBe(0);

      const verify = await runCli(["verify"], database.env);
      expect(verify.stdout).toMatch(/no discrepancies/);
      expect(verify.code).toBe(0);

      const tasks: { id: string; price: number; refunded: number }[] = await db("tasks").where("key_id", key.id).select("id", "price", "refunded");
      const stored = new Set(tasks.map((t) => t.id));
      expect(accepted.filter((id) => !stored.has(id))).toEqual([]);
      // At most the requests in flight at the kill were committed without an answer.
      expect(tasks.length).toBeLessThanOrEqual(accepted.length + IN_FLIGHT);
      const debits: { task_id: string }[] = await db("ledger_entries").where({ key_id: key.id, kind: "debit" }).select("task_id");
      expect(debits.map((d) => d.task_id).sort()).toEqual([...stored].sort());
      const charged = tasks.reduce((sum, t) => sum + Number(t.price) - Number(t.refunded), 0);
      expect(tasks.every((t) => Number(t.price) === PRICE)).toBe(true);
      const account = await db("accounts").where("id", key.account_id).first("balance");
      expect(Number(account.balance)).toBe(OPENING - charged);
    } finally {
      for (const proc of procs) await proc.stop("SIGKILL");
      await db.destroy();
      await database.drop();
    }
  });
});
