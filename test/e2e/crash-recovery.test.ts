/**
 * Crash safety with processes really killed (issue 6 item 4): the real `switchyard start` runs as
 * a child process against a fake upstream served by this test process, is SIGKILLed (or frozen
 * with SIGSTOP first) at the moment that matters, and restarted on the same SQLite file.
 * `switchyard verify` must pass afterwards. Every wait is for an event or a state, never a sleep.
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isSqlite, migrate, openDb, type Db } from "../../src/db/index.ts";
import { createKeyAudited } from "../../src/auth/keys.ts";
import { CLI_ACTOR } from "../../src/audit/log.ts";
import { parseYuan } from "../../src/money.ts";
import { createGenerationService, toTaskRecord } from "../../src/generation/tasks/index.ts";
import { runCli, startCli, type RunningProcess } from "../support/process.ts";
import { createTestDatabase } from "../support/db.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { collect, wsClient } from "../support/graphql-ws.ts";
import { waitForState } from "../support/events.ts";

const isSubmit = (r: { method: string; path: string }) => r.method === "POST" && /\/generations$/.test(r.path);
/** The fields of rows and answers these tests read. */
type LedgerRow = { kind: string; amount: number | string; task_id: string; id: number };
type TaskRow = { id: string; submit_state: string; status: number; refunded: number | string };
type TaskAnswer = { data: { task_id: string; status?: number; error?: string } };

/** Model 52, 5 s at 720P: 5.000 yuan. */
const PRICE = 5000;

/**
 * Polls the shared database: the processes under test are separate (no pub/sub reaches this
 * one without Redis), so a row is the only thing that shows their progress. Callbacks, which do
 * reach this process, are awaited on the receiver's events instead.
 */
async function waitUntil<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not reached in ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The exit code of a process already told to stop (a second signal would abort its shutdown). */
function exitCodeOf(proc: RunningProcess): Promise<number | null> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return Promise.resolve(proc.child.exitCode);
  return new Promise((resolve) => proc.child.once("exit", (code) => resolve(code)));
}

describe("crash recovery with real processes", () => {
  let fake: FakeUpstream;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    fake = await startFakeUpstream();
  });
  afterAll(async () => {
    await fake.close();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /**
   * A fresh database (SQLite in a temporary folder, or PostgreSQL with TEST_DATABASE=postgres),
   * migrated and opened here too, with a key of 100 yuan. `dbEnv` points a process at it.
   */
  async function prepare(keyOptions: { callbackUrl?: string } = {}, balance = "100") {
    const database = await createTestDatabase("switchyard-crash-");
    const db = openDb({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
    cleanups.push(async () => {
      await db.destroy();
      await database.drop();
    });
    await migrate(db);
    // As `keys create` makes it: with the audit row `verify` asks of the opening balance.
    const { created: key } = await createKeyAudited(db, CLI_ACTOR, { name: "crash", balance: parseYuan(balance), ...keyOptions });
    return { dbEnv: database.env, db, key };
  }

  function env(dbEnv: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> {
    return {
      ...dbEnv,
      PORT: "0",
      GENERATION_PORT: "0",
      CLOUD_PORT: "0",
      GENERATION_UPSTREAM_URL: fake.url,
      TASK_POLL_INTERVAL_MS: "100",
      // Long enough that a hanging submission is still in flight when the test kills the process.
      UPSTREAM_TIMEOUT_MS: "4000",
      RECOVERY_MARGIN_MS: "200",
      WEBHOOK_RETRY_BASE_MS: "300",
      ...extra,
    };
  }

  /** Starts `switchyard start`; killed at the end of the test if still running. */
  async function start(environment: Record<string, string>): Promise<{ proc: RunningProcess; url: string }> {
    const proc = startCli(["start"], environment);
    cleanups.push(async () => {
      await proc.stop("SIGKILL");
    });
    const [, url] = await proc.waitFor(/Switchyard router:\s+(http:\/\/\S+)/, 45_000);
    return { proc, url: url! };
  }

  function submitVideo(url: string, key: string, prompt: string) {
    return fetch(`${url}/api/v1/video/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt, model_id: 52, seconds: 5 }),
    });
  }

  const taskRow = (db: Db, id: string) => db("tasks").where({ id }).first();
  const entries = (db: Db, taskId: string) => db<LedgerRow>("ledger_entries").where("task_id", taskId).orderBy("id");
  const submissions = () => fake.requests.filter(isSubmit).length;

  async function expectVerifyPasses(dbEnv: Record<string, string>) {
    const verify = await runCli(["verify"], dbEnv);
    expect(verify.stdout).toMatch(/no discrepancies/);
    expect(verify.code).toBe(0);
  }

  it("(a) a submission killed between debit and upstream call is resent once at restart — or refunded once", { timeout: 120_000 }, async () => {
    const { dbEnv, db, key } = await prepare();

    // 1. The upstream hangs: the debit is committed, the upstream call never answers; SIGKILL.
    fake.onSubmit({ kind: "hang" });
    let stack = await start(env(dbEnv));
    const before = submissions();
    const cut = submitVideo(stack.url, key.key, "a lighthouse at dusk").catch((error) => error);
    await fake.waitForRequests(isSubmit, before + 1);
    const [pending] = await db("tasks").where("key_id", key.id);
    expect(pending).toMatchObject({ submit_state: "pending", status: 0 });
    expect(await stack.proc.stop("SIGKILL")).toBeNull();
    expect(await cut).toBeInstanceOf(Error); // the client saw the connection die

    // Restart with the upstream accepting: the sweep sends it exactly once more and it completes.
    fake.onSubmit({ kind: "accept", taskId: "up-recovered" });
    stack = await start(env(dbEnv));
    await waitUntil(
      () => taskRow(db, pending.id),
      (t) => t.submit_state === "sent",
    );
    expect(submissions()).toBe(before + 2);
    fake.setTask("up-recovered", { status: 1, result: "https://cdn.example.com/recovered.mp4" });
    const done = await waitUntil(
      () => taskRow(db, pending.id),
      (t) => Number(t.status) === 1,
    );
    expect(done).toMatchObject({ upstream_task_id: "up-recovered", result: "https://cdn.example.com/recovered.mp4", refunded: 0 });
    expect((await entries(db, pending.id)).map((e) => [e.kind, Number(e.amount)])).toEqual([["debit", -PRICE]]);

    // 2. Again, but the upstream refuses after the restart: failed and refunded exactly once.
    fake.onSubmit({ kind: "hang" });
    const cut2 = submitVideo(stack.url, key.key, "a harbour in fog").catch((error) => error);
    await fake.waitForRequests(isSubmit, before + 3);
    const second = await db("tasks").where("key_id", key.id).whereNot("id", pending.id).first();
    expect(second).toMatchObject({ submit_state: "pending", status: 0 });
    expect(await stack.proc.stop("SIGKILL")).toBeNull();
    await cut2;

    fake.onSubmit({ kind: "http_error", status: 500 });
    stack = await start(env(dbEnv));
    const refused = await waitUntil(
      () => taskRow(db, second.id),
      (t) => Number(t.status) === 2,
    );
    expect(refused).toMatchObject({ submit_state: "failed", error: "Upstream request failed" });
    expect(Number(refused.refunded)).toBe(PRICE);
    expect(submissions()).toBe(before + 4);
    expect((await entries(db, second.id)).map((e) => [e.kind, Number(e.amount)])).toEqual([
      ["debit", -PRICE],
      ["refund", PRICE],
    ]);
    const account = await db("accounts").where("id", key.account_id).first();
    expect(Number(account.balance)).toBe(100_000 - PRICE); // only the completed task is charged
    expect(await stack.proc.stop("SIGTERM")).toBe(0);
    expect(submissions()).toBe(before + 4);
    await expectVerifyPasses(dbEnv); // both cases: the resent task and the refunded one
  });

  it("(a2) a submission the provider accepted but whose answer a SIGKILL lost is found at restart and not sent again", { timeout: 120_000 }, async () => {
    const { dbEnv, db, key } = await prepare();

    // The provider creates the task, then the answer never arrives: SIGKILL while it is in flight.
    fake.onSubmit({ kind: "accept_silently", taskId: "up-lost-answer" });
    let stack = await start(env(dbEnv));
    const before = submissions();
    const cut = submitVideo(stack.url, key.key, "a lantern on a pier").catch((error) => error);
    await fake.waitForRequests(isSubmit, before + 1);
    const [pending] = await db("tasks").where("key_id", key.id);
    expect(pending).toMatchObject({ submit_state: "pending", status: 0, upstream_task_id: null });
    expect(fake.accepted.find((a) => a.taskId === "up-lost-answer")?.clientReference).toBe(pending.id);
    expect(await stack.proc.stop("SIGKILL")).toBeNull();
    expect(await cut).toBeInstanceOf(Error);

    // Restart: the sweep asks the provider, adopts its task and sends nothing; a resend would get another id.
    fake.onSubmit({ kind: "accept", taskId: "up-duplicate" });
    stack = await start(env(dbEnv));
    const adopted = await waitUntil(
      () => taskRow(db, pending.id),
      (t) => t.submit_state === "sent",
    );
    expect(adopted.upstream_task_id).toBe("up-lost-answer");
    fake.setTask("up-lost-answer", { status: 1, result: "https://cdn.example.com/lantern.mp4" });
    const done = await waitUntil(
      () => taskRow(db, pending.id),
      (t) => Number(t.status) === 1,
    );
    expect(done).toMatchObject({ upstream_task_id: "up-lost-answer", result: "https://cdn.example.com/lantern.mp4", refunded: 0 });
    expect(submissions()).toBe(before + 1);
    expect(fake.accepted.filter((a) => a.clientReference === pending.id)).toHaveLength(1);
    expect((await entries(db, pending.id)).map((e) => [e.kind, Number(e.amount)])).toEqual([["debit", -PRICE]]);
    const account = await db("accounts").where("id", key.account_id).first();
    expect(Number(account.balance)).toBe(100_000 - PRICE); // charged once
    expect(await stack.proc.stop("SIGTERM")).toBe(0);
    expect(submissions()).toBe(before + 1);
    await expectVerifyPasses(dbEnv);
  });

  it("(b) callbacks not yet delivered and outbox rows not yet published at a SIGKILL are delivered after restart, once", { timeout: 120_000 }, async () => {
    // A receiver that fails (503) until told otherwise, and records every request.
    let failing = true;
    const received: { delivery: string; event: string; taskId: string; status: number }[] = [];
    const arrivals = new EventEmitter();
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        const status = failing ? 503 : 200;
        received.push({ delivery: String(req.headers["x-service-delivery"]), event: body.event, taskId: body.data?.task_id, status });
        res.writeHead(status).end();
        arrivals.emit("received");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
    const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks`;
    const { dbEnv, db, key } = await prepare({ callbackUrl });
    // A slow poll keeps the process mostly idle, so freezing it rarely catches a write open.
    const environment = env(dbEnv, { TASK_POLL_INTERVAL_MS: "1000" });
    const stack = await start(environment);

    // Task A is refused: task.failed and task.refunded are published, their callbacks fail.
    fake.onSubmit({ kind: "http_error", status: 500 });
    const refusedResponse = await submitVideo(stack.url, key.key, "task A");
    expect(refusedResponse.status).toBe(502);
    const taskA = (await db("tasks").where("key_id", key.id).first()).id as string;
    await waitForState(
      arrivals,
      "received",
      async () => received.map((r) => r.event),
      (events) => events.includes("task.failed") && events.includes("task.refunded"),
      20_000,
    );

    // Task B is accepted; then the process is frozen (it can publish nothing more) and B's
    // success is committed with its outbox row, exactly as a poller writes it; then SIGKILL.
    fake.onSubmit({ kind: "accept", taskId: "up-b" });
    const acceptedResponse = await submitVideo(stack.url, key.key, "task B");
    expect(acceptedResponse.status).toBe(200);
    const taskB = ((await acceptedResponse.json()) as TaskAnswer).data.task_id;
    // SQLite has one write lock: a process frozen while it holds it would block every writer. So
    // this process takes the lock first (a no-op write opens its transaction) and only then
    // freezes the server, which therefore holds nothing; B's success is written in that same
    // transaction. Not while a callback attempt is leased: its lease would outlive the test.
    const sqlite = isSqlite(db);
    for (;;) {
      const applied = await db.transaction(async (trx) => {
        if (sqlite)
          await trx("accounts")
            .where("id", key.account_id)
            .update({ balance: trx.ref("balance") });
        stack.proc.child.kill("SIGSTOP");
        if (await trx("webhook_deliveries").whereNotNull("lease_until").first()) return false;
        const service = createGenerationService({ db: trx, upstream: null as never, checkUrl: async () => true, pollIntervalMs: 1000 });
        expect(await service.applyUpstreamState(toTaskRecord(await taskRow(trx, taskB)), { status: 1, result: "https://cdn.example.com/b.mp4" }, 1000)).toBe(
          true,
        );
        return true;
      });
      if (applied) break;
      stack.proc.child.kill("SIGCONT");
      await waitUntil(
        () => db("webhook_deliveries").whereNotNull("lease_until").first(),
        (row) => !row,
      );
    }
    const unpublished = await db("outbox").where("aggregate_id", taskB).whereNull("published_at");
    expect(unpublished.map((row: { payload: string }) => JSON.parse(row.payload).status)).toContain(1);
    const pendingDeliveries = await db("webhook_deliveries").where({ aggregate_id: taskA, status: "pending" });
    expect(pendingDeliveries.map((d: { event: string }) => d.event).sort()).toEqual(["task.failed", "task.refunded"]);
    expect(await stack.proc.stop("SIGKILL")).toBeNull();

    // Restart with a healthy receiver: everything arrives, each callback answered 2xx once.
    failing = false;
    const restarted = await start(environment);
    const ok = () => received.filter((r) => r.status === 200);
    await waitForState(
      arrivals,
      "received",
      async () =>
        ok()
          .map((r) => `${r.event} ${r.taskId}`)
          .sort(),
      (got) => got.length >= 3,
      20_000,
    );
    // Every outbox row, including any the restarted process commits meanwhile, gets published.
    await waitUntil(
      () => db("outbox").whereNull("published_at").count({ n: "*" }),
      (rows: { n?: number | string }[]) => Number(rows[0]!.n) === 0,
    );
    expect(await restarted.proc.stop("SIGTERM")).toBe(0);
    expect(
      ok()
        .map((r) => `${r.event} ${r.taskId}`)
        .sort(),
    ).toEqual([`task.failed ${taskA}`, `task.refunded ${taskA}`, `task.succeeded ${taskB}`].sort());
    expect(new Set(ok().map((r) => r.delivery)).size).toBe(3);
    expect(await db("outbox").whereNull("published_at").count({ n: "*" })).toEqual([{ n: 0 }]);
    expect((await db("webhook_deliveries").select("status")).map((d: { status: string }) => d.status)).toEqual(["delivered", "delivered", "delivered"]);
    await expectVerifyPasses(dbEnv);
  });

  it("(c) a task silent past its deadline is failed and refunded; a late success is recorded without a second charge", { timeout: 120_000 }, async () => {
    const { dbEnv, db, key } = await prepare();
    const environment = env(dbEnv, { TASK_DEADLINE_SECONDS: "1" });
    fake.onSubmit({ kind: "accept", taskId: "up-silent" });
    const before = submissions();
    let stack = await start(environment);
    const response = await submitVideo(stack.url, key.key, "a silent task");
    expect(response.status).toBe(200);
    const taskId = ((await response.json()) as TaskAnswer).data.task_id;
    // The process dies with the task open upstream (status 0); the restarted one enforces the deadline.
    expect(await stack.proc.stop("SIGKILL")).toBeNull();
    stack = await start(environment);

    const expired = await waitUntil(
      () => taskRow(db, taskId),
      (t) => Number(t.status) === 2,
    );
    expect(expired).toMatchObject({ error: "Generation timed out", submit_state: "sent", late_result: null });
    expect(Number(expired.refunded)).toBe(PRICE);
    expect(expired.expired_at).toEqual(expect.any(String));
    const rest = await fetch(`${stack.url}/api/v1/tasks/${taskId}`, { headers: { authorization: `Bearer ${key.key}` } });
    expect(((await rest.json()) as TaskAnswer).data).toMatchObject({ status: 2, error: "Generation timed out" });

    // The upstream finishes after all: recorded, not charged, the status stays 2.
    fake.setTask("up-silent", { status: 1, result: "https://cdn.example.com/late.mp4" });
    const late = await waitUntil(
      () => taskRow(db, taskId),
      (t) => t.late_result !== null,
    );
    expect(late).toMatchObject({ status: 2, late_result: "https://cdn.example.com/late.mp4", error: "Generation timed out" });
    expect(Number(late.refunded)).toBe(PRICE);
    expect((await entries(db, taskId)).map((e) => [e.kind, Number(e.amount)])).toEqual([
      ["debit", -PRICE],
      ["refund", PRICE],
    ]);
    const usage = await fetch(`${stack.url}/api/v1/usage`, { headers: { authorization: `Bearer ${key.key}` } });
    expect(((await usage.json()) as { data: { spent: number } }).data.spent).toBe(0);
    expect(submissions()).toBe(before + 1); // it had been sent: never resent
    expect(await stack.proc.stop("SIGTERM")).toBe(0);
    await expectVerifyPasses(dbEnv);
  });

  it("(d) SIGTERM drains requests in flight, closes WebSockets with 1001, refuses new connections and exits 0", { timeout: 120_000 }, async () => {
    const { dbEnv, db, key } = await prepare();
    fake.onSubmit({ kind: "hang" });
    const stack = await start(env(dbEnv, { UPSTREAM_TIMEOUT_MS: "20000" }));
    const client = wsClient(stack.url, { Authorization: `Bearer ${key.key}` });
    const connected = new Promise<void>((resolve) => client.on("connected", () => resolve()));
    const subscription = collect(client, `subscription { tasks { id statusCode } }`);
    await connected;

    const before = submissions();
    const inFlight = [1, 2, 3].map((n) => submitVideo(stack.url, key.key, `in flight ${n}`));
    await fake.waitForRequests(isSubmit, before + 3);
    stack.proc.child.kill("SIGTERM");
    const { error } = await subscription.done;
    expect(error?.code).toBe(1001);
    // The listener is closed: a new connection is refused while the old requests still run.
    await expect(fetch(`${stack.url}/health`)).rejects.toThrow();
    expect(stack.proc.child.exitCode).toBeNull();

    expect(fake.releaseHanging({ kind: "accept" })).toBe(3);
    const responses = await Promise.all(inFlight);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
    const ids = await Promise.all(responses.map(async (r) => ((await r.json()) as TaskAnswer).data.task_id));
    expect(await exitCodeOf(stack.proc)).toBe(0);
    const rows = await db("tasks").whereIn("id", ids);
    expect(rows.map((t: TaskRow) => t.submit_state)).toEqual(["sent", "sent", "sent"]);
    await client.dispose();
    await expectVerifyPasses(dbEnv);
  });
  it("(e) a SIGKILL among group-committed submissions loses no acknowledged one and charges none twice", { timeout: 120_000 }, async () => {
    const { dbEnv, db, key } = await prepare({}, "1000");
    fake.onSubmit({ kind: "accept" });
    let stack = await start(env(dbEnv));

    // 32 clients submit without pause (so submissions commit in groups, ADR 0011); the process
    // is killed as the 40th answer arrives, with the other clients' submissions in flight.
    const acknowledged: string[] = [];
    let enough!: () => void;
    const reached = new Promise<void>((resolve) => (enough = resolve));
    let killed = false;
    const client = async (n: number) => {
      for (let i = 0; !killed; i++) {
        let body: { status: number; data: { task_id: string } };
        try {
          const response = await submitVideo(stack.url, key.key, `group ${n}-${i}`);
          body = { status: response.status, ...((await response.json()) as TaskAnswer) };
        } catch {
          return; // the connection died with the process: not acknowledged
        }
        expect(body).toMatchObject({ status: 200, code: 200, data: { status: 0, amount: 5 } });
        acknowledged.push(body.data.task_id);
        if (acknowledged.length >= 40) enough();
      }
    };
    const clients = Array.from({ length: 32 }, (_, n) => client(n));
    await Promise.race([reached, Promise.all(clients)]);
    expect(acknowledged.length).toBeGreaterThanOrEqual(40);
    killed = true;
    expect(await stack.proc.stop("SIGKILL")).toBeNull();
    await Promise.all(clients);

    // Every acknowledged submission is stored with its one debit; none is charged twice.
    const stored = async (): Promise<TaskRow[]> => db("tasks").where("key_id", key.id).select("id", "submit_state", "status", "refunded");
    const debits = await db("ledger_entries").where({ key_id: key.id, kind: "debit" }).select("task_id", "amount");
    const tasks = await stored();
    const ids = new Set(tasks.map((t) => t.id));
    for (const id of acknowledged) expect(ids.has(id)).toBe(true);
    expect(debits.map((d: { task_id: string }) => d.task_id).sort()).toEqual([...ids].sort());
    for (const d of debits) expect(Number(d.amount)).toBe(-PRICE);

    // After a restart, the submissions cut off before their answer are sent once (or refunded
    // once), never twice, and the books balance.
    stack = await start(env(dbEnv));
    await waitUntil(stored, (rows) => rows.every((t) => t.submit_state === "sent" || t.submit_state === "failed"));
    expect(await stack.proc.stop("SIGTERM")).toBe(0);
    const settled = await stored();
    expect(settled).toHaveLength(tasks.length);
    for (const task of settled) expect(fake.accepted.filter((a) => a.clientReference === task.id).length).toBeLessThanOrEqual(1);
    const refunded = settled.reduce((sum, t) => sum + Number(t.refunded), 0);
    const account = await db("accounts").where("id", key.account_id).first("balance");
    expect(Number(account.balance)).toBe(parseYuan("1000") - settled.length * PRICE + refunded);
    expect(await db("ledger_entries").where({ key_id: key.id, kind: "debit" }).count({ n: "*" }).first()).toMatchObject({ n: settled.length });
    await expectVerifyPasses(dbEnv);
  });
});
