/**
 * Scale-out (issue 6): the deployment of README "Running at scale" — nginx (deploy/nginx.conf)
 * balancing two routers, two generation and two cloud processes on one PostgreSQL database and
 * Redis — under 2,000 submissions with 10% injected upstream failures while one generation
 * process is killed with SIGKILL and started again. Afterwards the books verify, every task is
 * terminal, every callback reached a receiver that deduplicates by nothing exactly once, and a
 * key's rate limit held across both routers.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { startDeployment, type Deployment } from "../support/deploy.ts";
import { runCli } from "../support/process.ts";
import { waitUntil } from "../support/stack.ts";
import { collect, wsClient } from "../support/graphql-ws.ts";
import { openDb, type Db } from "../../src/db/index.ts";
import { verifyWebhookSignature } from "../../src/events/webhook-signing.ts";

const SUBMISSIONS = Number(process.env.SCALE_SUBMISSIONS ?? 2000);
const CONCURRENCY = 24;
const PRICE_MILLI = 5_000; // model 52, 5 s at 720P: 1 yuan per second
/** Which prompts fail upstream: one in 20 refused at submission (HTTP 500), one in 20 failing later (status 2). */
const refusedAtSubmission = (i: number) => i % 20 === 0;
const failsLater = (i: number) => i % 20 === 10;

/** A provider for the whole run: answers by the prompt's number, finishes tasks 200 ms after accepting them. */
async function startScaleUpstream() {
  const accepted = new Map<string, { at: number; index: number }>();
  let submissions = 0;
  let sequence = 0;
  const server = http.createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const json = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    const path = (req.url ?? "").split("?")[0]!;
    if (req.method === "POST" && path === "/api/v1/video/generations") {
      submissions += 1;
      const index = Number(/#(\d+)/.exec(JSON.parse(text).prompt ?? "")?.[1] ?? -1);
      if (refusedAtSubmission(index)) return json(500, { code: 500, message: "injected failure" });
      const id = `up-${index}-${++sequence}`;
      accepted.set(id, { at: Date.now(), index });
      return json(200, { code: 200, data: { task_id: id, status: 0 } });
    }
    const task = /^\/api\/v1\/tasks\/([^/]+)$/.exec(path);
    const state = task ? accepted.get(decodeURIComponent(task[1]!)) : undefined;
    if (req.method === "GET" && task && state) {
      if (Date.now() - state.at < 200) return json(200, { code: 200, data: { task_id: task[1], status: 3 } });
      if (failsLater(state.index)) return json(200, { code: 200, data: { task_id: task[1], status: 2, error: "injected failure" } });
      return json(200, { code: 200, data: { task_id: task[1], status: 1, result: `https://media.example.com/${task[1]}.mp4` } });
    }
    json(404, { code: 404, message: "Not found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    submissions: () => submissions,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A callback receiver that keeps every request and answers 200 to all: it deduplicates by nothing. */
async function startReceiver(secret: () => string) {
  const received: { delivery: string; event: string; taskId: string; signed: boolean }[] = [];
  const server = http.createServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    let signed = true;
    try {
      verifyWebhookSignature(secret(), raw, req.headers["x-service-signature"] as string | undefined);
    } catch {
      signed = false;
    }
    const body = JSON.parse(raw);
    received.push({ delivery: String(req.headers["x-service-delivery"]), event: body.event, taskId: body.data?.task_id, signed });
    res.writeHead(200).end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("two routers behind nginx, two generation and two cloud processes on PostgreSQL and Redis", () => {
  let database: TestDatabase;
  let db: Db;
  let deployment: Deployment;
  let upstream: Awaited<ReturnType<typeof startScaleUpstream>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let key: { id: string; key: string; account_id: string; webhook_secret: string };
  let env: Record<string, string>;
  const INITIAL_YUAN = 20_000;

  beforeAll(async () => {
    database = await createTestDatabase("switchyard-scale-", { postgres: true });
    upstream = await startScaleUpstream();
    receiver = await startReceiver(() => key.webhook_secret);
    env = {
      ...database.env,
      REDIS_URL: "redis://127.0.0.1:6379",
      REDIS_KEY_PREFIX: `sy-scale-${randomBytes(4).toString("hex")}:`,
      GENERATION_UPSTREAM_URL: upstream.url,
      UPSTREAM_TIMEOUT_MS: "2000",
      RECOVERY_MARGIN_MS: "5000",
      TASK_POLL_INTERVAL_MS: "100",
      TASK_DEADLINE_SECONDS: "20",
      WEBHOOK_RETRY_BASE_MS: "200",
      WEBHOOK_TIMEOUT_MS: "2000",
      PROVISION_DELAY_MS: "100",
      SHUTDOWN_TIMEOUT_MS: "2000",
      LOG_LEVEL: "warn",
    };
    const migrated = await runCli(["migrate"], env);
    expect(migrated.code, migrated.stderr).toBe(0);
    const created = await runCli(["keys", "create", "--name", "scale", "--balance", String(INITIAL_YUAN), "--callback-url", receiver.url, "--json"], env);
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout);
    deployment = await startDeployment(env);
    db = openDb({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
  }, 180_000);

  afterAll(async () => {
    await deployment?.close();
    await db?.destroy();
    await upstream?.close();
    await receiver?.close();
    await database?.drop();
  }, 60_000);

  it("delivers to a subscriber on one router the events caused through the other, and through nginx's WebSocket", async () => {
    const direct = wsClient(deployment.routers[0], { Authorization: `Bearer ${key.key}` });
    const balanced = wsClient(deployment.url, { Authorization: `Bearer ${key.key}` });
    let taskId = "";
    const terminal = (client: typeof direct) => {
      let done: () => void = () => {};
      const reached = new Promise<void>((resolve) => (done = resolve));
      const sub = collect(client, "subscription { tasks { id statusCode } }", {}, (event) => {
        if (event.data?.tasks?.id === taskId && event.data.tasks.statusCode === 1) done();
      });
      return { sub, reached };
    };
    const viaRouter1 = terminal(direct);
    const viaNginx = terminal(balanced);
    // Both subscriptions are live once a warm-up task's first event reached both of them.
    const warmUp = (client: typeof direct) =>
      new Promise<void>((resolve, reject) => {
        const sub = collect(client, "subscription { tasks { id } }", {}, () => {
          sub.stop();
          resolve();
        });
        sub.done.then(({ error }) => reject(new Error(`warm-up subscription ended: ${JSON.stringify(error ?? "completed")}`)));
      });
    const warmed = Promise.all([warmUp(direct), warmUp(balanced)]);
    await waitUntil(
      async () => {
        await fetch(`${deployment.routers[1]}/api/v1/video/generations`, {
          method: "POST",
          headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model_id: 52, prompt: "warm-up #1", seconds: 5 }),
        });
        return Promise.race([warmed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1000))]);
      },
      (ok) => ok,
      30_000,
    );

    const submitted = await fetch(`${deployment.routers[1]}/api/v1/video/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model_id: 52, prompt: "through router 2 #1", seconds: 5 }),
    }).then((r) => r.json());
    taskId = submitted.data.task_id;
    await Promise.all([viaRouter1.reached, viaNginx.reached]);
    viaRouter1.sub.stop();
    viaNginx.sub.stop();
    await direct.dispose();
    await balanced.dispose();
  }, 60_000);

  it("holds a key's rate limit across both routers", async () => {
    const BURST = 24;
    const LIMIT = 10;
    const usage = (router: string, bearer: string) =>
      fetch(`${router}/openapi/v1/vendors`, { headers: { authorization: `Bearer ${bearer}` } }).then(async (r) => ({
        status: r.status,
        retryAfter: r.headers.get("retry-after"),
        body: await r.json(),
      }));
    // Open the client's keep-alive connections first, so the burst below is only the burst.
    await Promise.all(Array.from({ length: BURST }, (_, i) => usage(deployment.routers[i % 2], key.key)));
    // A fixed one-second window starts at a key's first request: a burst that ends within a
    // second must get exactly LIMIT through, where a limit kept per router would let 2 × LIMIT
    // through. A burst slowed past a second by a loaded machine proves nothing: try a fresh key.
    for (let attempt = 1; ; attempt++) {
      const created = await runCli(["keys", "create", "--name", `limited-${attempt}`, "--rate-limit", String(LIMIT), "--json"], env);
      const limited = JSON.parse(created.stdout);
      const started = Date.now();
      const answers = await Promise.all(Array.from({ length: BURST }, (_, i) => usage(deployment.routers[i % 2], limited.key)));
      const elapsedMs = Date.now() - started;
      const accepted = answers.filter((a) => a.status === 200).length;
      const refused = answers.filter((a) => a.status === 429);
      expect(accepted + refused.length).toBe(BURST);
      expect(refused[0]).toMatchObject({ retryAfter: expect.stringMatching(/^\d+$/), body: { success: false, error: { code: "rate_limited" } } });
      if (elapsedMs < 1000) {
        expect(accepted).toBe(LIMIT);
        return;
      }
      expect(accepted).toBeLessThanOrEqual(LIMIT * Math.ceil(elapsedMs / 1000));
      if (attempt === 8) throw new Error(`no burst of ${BURST} requests finished within a second (last: ${elapsedMs} ms)`);
    }
  }, 90_000);

  it(`settles ${SUBMISSIONS} submissions with 10% upstream failures and a generation process killed midway: verify passes, every task terminal, every callback once`, async () => {
    const before = await db("tasks").where("account_id", key.account_id).count({ n: "*" }).first();
    const entries = [deployment.url, ...deployment.routers];
    const outcomes: { index: number; status: number; taskId?: string; message?: string }[] = [];
    const started = Date.now();
    let next = 0;
    let killedAt = -1;
    let restartedAt = -1;
    let restarting: Promise<void> = Promise.resolve();
    const submitOne = async (index: number) => {
      try {
        const response = await fetch(`${entries[index % 3]}/api/v1/video/generations`, {
          method: "POST",
          headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model_id: 52, prompt: `scale #${index}`, seconds: 5 }),
        });
        const text = await response.text();
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = { message: text.slice(0, 120) };
        }
        outcomes.push({ index, status: response.status, taskId: body?.data?.task_id, message: body?.message });
      } catch (error) {
        outcomes.push({ index, status: 0, message: String(error) });
      }
      // One generation process dies with SIGKILL a third of the way in and is back at two thirds.
      if (outcomes.length === Math.floor(SUBMISSIONS / 3) && killedAt < 0) {
        killedAt = outcomes.length;
        restarting = deployment.kill("generation1");
      }
      if (outcomes.length === Math.floor((2 * SUBMISSIONS) / 3) && restartedAt < 0) {
        restartedAt = outcomes.length;
        restarting = restarting.then(() => deployment.restart("generation1"));
      }
    };
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < SUBMISSIONS) await submitOne(next++);
      }),
    );
    await restarting;
    const submitSeconds = (Date.now() - started) / 1000;

    // Every request has an answer; accepted ones carry a task; the refused 5% answer 502.
    expect(outcomes).toHaveLength(SUBMISSIONS);
    const accepted = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status === 502 && refusedAtSubmission(o.index));
    const cutOff = outcomes.filter((o) => o.status !== 200 && !(o.status === 502 && refusedAtSubmission(o.index)));
    // A request cut off by the kill gets the router's 503 (its subgraph went away mid-request).
    for (const o of cutOff) expect(o).toMatchObject({ status: 503, message: "Service unavailable" });
    for (const o of accepted) expect(o.taskId).toMatch(/\S/);
    expect(accepted.length + refused.length + cutOff.length).toBe(SUBMISSIONS);
    // Only requests that were in flight in the killed process can be cut off.
    expect(cutOff.length).toBeLessThanOrEqual(CONCURRENCY);

    // Every task reaches a terminal state (the dead process's claims run out, recovery sends or refunds).
    const tasksOf = () => db("tasks").where("account_id", key.account_id).select("id", "status", "price", "refunded", "prompt", "submit_state");
    const tasks = await waitUntil(tasksOf, (rows) => rows.every((t) => t.status === 1 || t.status === 2), 150_000);
    const settleSeconds = (Date.now() - started) / 1000;
    // Accepted ones ended as the upstream said; no task was created twice for one request.
    const byId = new Map(tasks.map((t) => [t.id, t]));
    for (const o of accepted) {
      const task = byId.get(o.taskId!);
      expect(task, `task ${o.taskId}`).toBeDefined();
      expect(task!.status).toBe(failsLater(o.index) ? 2 : 1);
    }
    const scaleTasks = tasks.filter((t) => /^scale #/.test(t.prompt));
    const prompts = scaleTasks.map((t) => t.prompt);
    expect(new Set(prompts).size).toBe(prompts.length);
    expect(scaleTasks.length).toBeGreaterThanOrEqual(accepted.length + refused.length);
    expect(scaleTasks.length).toBeLessThanOrEqual(SUBMISSIONS);

    // Money: succeeded tasks keep their price, failed ones are refunded in full; the books verify.
    for (const t of tasks) expect(Number(t.refunded)).toBe(t.status === 2 ? Number(t.price) : 0);
    const charged = tasks.filter((t) => t.status === 1).reduce((sum, t) => sum + Number(t.price), 0);
    const account = await db("accounts").where("id", key.account_id).first("balance");
    expect(Number(account.balance)).toBe(INITIAL_YUAN * 1000 - charged);
    expect(charged % PRICE_MILLI).toBe(0);
    const verified = await runCli(["verify"], env);
    expect(verified.stdout + verified.stderr).toMatch(/no discrepancies/);
    expect(verified.code).toBe(0);

    // Callbacks: task.succeeded for each success, task.failed + task.refunded for each failure.
    const expected = new Set<string>();
    for (const t of tasks) {
      if (t.status === 1) expected.add(`task.succeeded ${t.id}`);
      else for (const event of ["task.failed", "task.refunded"]) expected.add(`${event} ${t.id}`);
    }
    await waitUntil(
      async () => db("webhook_deliveries").where("account_id", key.account_id).whereNot("status", "delivered").count({ n: "*" }).first(),
      (row) => Number(row?.n) === 0 && new Set(receiver.received.map((r) => `${r.event} ${r.taskId}`)).size >= expected.size,
      120_000,
    );
    const seen = new Map<string, number>();
    for (const r of receiver.received) seen.set(`${r.event} ${r.taskId}`, (seen.get(`${r.event} ${r.taskId}`) ?? 0) + 1);
    expect([...seen.keys()].sort()).toEqual([...expected].sort());
    expect(receiver.received.every((r) => r.signed)).toBe(true);
    // A callback arrives twice only when its sender died after the receiver answered and before
    // the attempt was recorded (no sender can know the difference); each such one is counted.
    const recorded = await db("webhook_attempts as a")
      .join("webhook_deliveries as d", "d.id", "a.delivery_id")
      .where("d.account_id", key.account_id)
      .groupBy("a.delivery_id")
      .select("a.delivery_id as id")
      .count({ n: "*" });
    const recordedById = new Map(recorded.map((r: any) => [String(r.id), Number(r.n)]));
    const receivedById = new Map<string, number>();
    for (const r of receiver.received) receivedById.set(r.delivery, (receivedById.get(r.delivery) ?? 0) + 1);
    let unrecordedSends = 0;
    for (const [id, n] of receivedById) unrecordedSends += n - (recordedById.get(id) ?? 0);
    const duplicates = [...seen.values()].reduce((sum, n) => sum + n - 1, 0);
    expect(duplicates).toBe(unrecordedSends);
    expect(unrecordedSends).toBeLessThanOrEqual(8); // at most one batch in flight in the killed process

    const total = await db("tasks").where("account_id", key.account_id).count({ n: "*" }).first();
    console.log(
      JSON.stringify({
        scale_out: {
          submissions: SUBMISSIONS,
          accepted: accepted.length,
          refused_by_upstream: refused.length,
          failing_later: accepted.filter((o) => failsLater(o.index)).length,
          cut_off_by_kill: cutOff.length,
          killed_after: killedAt,
          restarted_after: restartedAt,
          upstream_submissions: upstream.submissions(),
          tasks: Number(total?.n) - Number(before?.n),
          callbacks: receiver.received.length,
          duplicate_callbacks: duplicates,
          submit_seconds: submitSeconds,
          settled_seconds: settleSeconds,
          verify_exit: verified.code,
        },
      }),
    );
  }, 420_000);
});
