/**
 * Channels shared by two generation processes (issue 16, "Channels" → Tests; README "Channels";
 * ADR 0012): two routers, each in front of its own `switchyard start generation`, and one cloud
 * process, all real CLI processes on one PostgreSQL database (and Redis when it answers), with
 * CHANNEL_KEY_SECRET set. Three fake providers fail in different ways (HTTP 503, business code
 * 4001, no answer before UPSTREAM_TIMEOUT_MS) at priority 10, one healthy provider at priority 5
 * and the implicit channel (GENERATION_UPSTREAM_URL) at priority 0.
 *
 * "Within the cache window" is observed, never slept: a process has reloaded its channel list
 * after a change once one of its submissions lands where only the changed list sends it (a
 * channel added after the change, or the fallback once the healthy channel is disabled). Every
 * submission sent to that process after that answer must leave the changed channels alone.
 */
import net from "node:net";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { freePort } from "../support/deploy.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { runCli, startCli, type RunningProcess } from "../support/process.ts";
import { waitUntil } from "../support/stack.ts";
import { openDb, type Db } from "../../src/db/index.ts";

const POSTGRES_URL = process.env.TEST_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const ADMIN_TOKEN = "channels-scale-admin-token";
/** Submissions in flight per generation process while the load runs. */
const CONCURRENCY = 3;
/** Submissions each process must take after its last fence, so "no new tasks" has substance. */
const AFTER_FENCE = 8;

/** True when a TCP connection to host:port opens within a second. */
function reachable(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port || defaultPort), timeout: 1000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket
      .once("connect", () => done(true))
      .once("error", () => done(false))
      .once("timeout", () => done(false));
  });
}

const hasPostgres = await reachable(POSTGRES_URL, 5432);
const hasRedis = await reachable("redis://127.0.0.1:6379", 6379);
if (!hasPostgres) console.warn(`channels-scale-out: skipped, PostgreSQL is not reachable at ${POSTGRES_URL} (set TEST_POSTGRES_URL; .ci/run starts it)`);

type Gen = "generation1" | "generation2";
const GENS: Gen[] = ["generation1", "generation2"];

/** One submission the test sent, through the router in front of `gen`. */
interface Sent {
  gen: Gen;
  model: number;
  prompt: string;
  status: number;
  taskId?: string;
  /** Fences of `gen` already passed when it was sent. */
  afterFence: { autoDisabled: boolean; adminDisabled: boolean };
}

describe.skipIf(!hasPostgres)("channels on PostgreSQL with two generation processes: shared health", () => {
  let database: TestDatabase;
  let db: Db;
  let env: Record<string, string>;
  const processes: Partial<Record<"router1" | "router2" | Gen | "cloud", RunningProcess>> = {};
  const routers: Record<Gen, string> = { generation1: "", generation2: "" };
  let fakes: { http5xx: FakeUpstream; code: FakeUpstream; timeout: FakeUpstream; healthy: FakeUpstream; fallback: FakeUpstream; marker: FakeUpstream };
  const ids: Record<string, string> = { fallback: "chn_default" };
  let key: { id: string; key: string; account_id: string };
  const INITIAL_YUAN = 2_000;

  beforeAll(async () => {
    database = await createTestDatabase("switchyard-channels-scale-", { postgres: true });
    const started = await Promise.all(Array.from({ length: 6 }, () => startFakeUpstream()));
    const [http5xx, code, timeout, healthy, fallback, marker] = started as [FakeUpstream, FakeUpstream, FakeUpstream, FakeUpstream, FakeUpstream, FakeUpstream];
    fakes = { http5xx, code, timeout, healthy, fallback, marker };
    http5xx.onSubmit({ kind: "http_error", status: 503 });
    code.onSubmit({ kind: "business_error", code: 4001 });
    timeout.onSubmit({ kind: "hang" });
    env = {
      ...database.env,
      ...(hasRedis ? { REDIS_URL: "redis://127.0.0.1:6379", REDIS_KEY_PREFIX: `sy-chscale-${randomBytes(4).toString("hex")}:` } : {}),
      HOST: "127.0.0.1",
      SUBGRAPH_SECRET: randomBytes(32).toString("hex"),
      ADMIN_TOKEN,
      CHANNEL_KEY_SECRET: randomBytes(24).toString("hex"),
      GENERATION_UPSTREAM_URL: fallback.url,
      GENERATION_UPSTREAM_KEY: "fallback-key",
      UPSTREAM_TIMEOUT_MS: "500",
      // The three failing channels fill the attempts: a submission that tries them all is refunded.
      CHANNEL_MAX_ATTEMPTS: "3",
      CHANNEL_FAILURE_THRESHOLD: "3",
      CHANNEL_PROBE_BASE_MS: "600000", // no probe brings a channel back during the run
      TASK_POLL_INTERVAL_MS: "300",
      TASK_DEADLINE_SECONDS: "120",
      LOG_LEVEL: "warn",
    };
    const migrated = await runCli(["migrate"], env);
    expect(migrated.code, migrated.stderr).toBe(0);
    const created = await runCli(["keys", "create", "--name", "channels-scale", "--balance", String(INITIAL_YUAN), "--json"], env);
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout);
    const add = async (name: keyof typeof fakes, priority: number) => {
      const run = await runCli(
        [
          "channels",
          "add",
          "--name",
          name,
          "--base-url",
          fakes[name].url,
          "--api-key",
          `${name}-key`,
          "--models",
          "52",
          "--priority",
          String(priority),
          "--json",
        ],
        env,
      );
      expect(run.code, run.stderr).toBe(0);
      ids[name] = JSON.parse(run.stdout).id;
    };
    for (const name of ["http5xx", "code", "timeout"] as const) await add(name, 10);
    await add("healthy", 5);

    const ports = {
      generation1: await freePort(),
      generation2: await freePort(),
      cloud: await freePort(),
      router1: await freePort(),
      router2: await freePort(),
    };
    const launch = async (name: keyof typeof processes, args: string[], extra: Record<string, string>, ready: RegExp) => {
      processes[name] = startCli(["start", ...args], { ...env, ...extra });
      await processes[name]!.waitFor(ready, 60_000);
    };
    await launch("generation1", ["generation"], { GENERATION_PORT: String(ports.generation1) }, /Generation subgraph:\s+http/);
    await launch("generation2", ["generation"], { GENERATION_PORT: String(ports.generation2) }, /Generation subgraph:\s+http/);
    await launch("cloud", ["cloud"], { CLOUD_PORT: String(ports.cloud) }, /Cloud subgraph:\s+http/);
    // Router N reaches generation process N only: which process took a submission is known.
    for (const [n, gen] of [
      [1, "generation1"],
      [2, "generation2"],
    ] as const) {
      const port = n === 1 ? ports.router1 : ports.router2;
      await launch(
        `router${n}`,
        ["router"],
        { PORT: String(port), GENERATION_URL: `http://127.0.0.1:${ports[gen]}/graphql`, CLOUD_URL: `http://127.0.0.1:${ports.cloud}/graphql` },
        /Switchyard router:\s+http/,
      );
      routers[gen] = `http://127.0.0.1:${port}`;
    }
    db = openDb({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
  }, 180_000);

  afterAll(async () => {
    await Promise.all(Object.values(processes).map((p) => p!.stop("SIGTERM")));
    await db?.destroy();
    for (const fake of Object.values(fakes ?? {})) await fake.close();
    await database?.drop();
  }, 60_000);

  const adminGraphql = async (gen: Gen, query: string) => {
    const response = await fetch(`${routers[gen]}/graphql`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ query }),
    });
    const body = await response.json();
    expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
    return body.data;
  };
  /** The channels whose fakes received a submission carrying `taskId` (our reference). */
  const triedBy = (taskId: string) =>
    (Object.keys(fakes) as (keyof typeof fakes)[]).filter((name) => fakes[name].requests.some((r) => r.method === "POST" && r.idempotencyKey === taskId));
  const acceptedBy = (taskId: string) =>
    (Object.keys(fakes) as (keyof typeof fakes)[]).find((name) => fakes[name].accepted.some((a) => a.clientReference === taskId));
  /** The process that disabled a channel, from its own warning line. */
  const disabledBy = (channelId: string) =>
    GENS.find((gen) =>
      processes[gen]!.output()
        .split("\n")
        .some((line) => line.includes("channel auto-disabled") && line.includes(channelId)),
    );

  it("fails over across both processes, disables failing channels for both, honours an admin disable, polls the accepting channel, moves money once", async () => {
    const sent: Sent[] = [];
    const fence = { generation1: { autoDisabled: false, adminDisabled: false }, generation2: { autoDisabled: false, adminDisabled: false } };
    let counter = 0;
    const submit = async (gen: Gen, model: number): Promise<Sent> => {
      const afterFence = { ...fence[gen] };
      const prompt = `channels scale ${gen} #${++counter}`;
      const response = await fetch(`${routers[gen]}/api/v1/video/generations`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model_id: model, prompt, seconds: 5 }),
      });
      const body = await response.json();
      const one: Sent = { gen, model, prompt, status: response.status, taskId: body?.data?.task_id, afterFence };
      // Refused by every channel tried: 502, or 504 when the last one timed out (README "Channels");
      // the task is found by its prompt below.
      if (response.status !== 200) expect([502, 504], JSON.stringify(body)).toContain(response.status);
      sent.push(one);
      return one;
    };

    // Model-52 load through both processes for the whole run, until each passed both fences and took AFTER_FENCE more.
    let stopLoad = false;
    const afterLast = { generation1: 0, generation2: 0 };
    const load = Promise.all(
      GENS.flatMap((gen) =>
        Array.from({ length: CONCURRENCY }, async () => {
          while (!stopLoad) {
            const one = await submit(gen, 52);
            if (one.afterFence.adminDisabled) afterLast[gen] += 1;
            // Fence 2: a model-52 task on the fallback means this process's list shows `healthy` disabled.
            if (fence[gen].autoDisabled && one.taskId && acceptedBy(one.taskId) === "fallback") fence[gen].adminDisabled = true;
          }
        }),
      ),
    );

    // Phase 1: the failing channels are disabled by whichever process counts the third failure in a row.
    const failing = ["http5xx", "code", "timeout"].map((name) => ids[name]!);
    await waitUntil(
      () => db("channels").whereIn("id", failing).select("id", "status"),
      (rows) => rows.every((r) => r.status === "AUTO_DISABLED"),
      60_000,
    );

    // Fence 1: an operator adds a provider for model 39 only. A process whose model-39 submission
    // lands there has reloaded its list after every failing channel was disabled.
    const added = await adminGraphql(
      "generation1",
      `mutation { adminAddChannel(input: { name: "marker", baseUrl: "${fakes.marker.url}", apiKey: "marker-key", models: [39], priority: 20 }) { channel { id } } }`,
    );
    ids.marker = added.adminAddChannel.channel.id;
    for (const gen of GENS) {
      await waitUntil(
        async () => {
          const one = await submit(gen, 39);
          return one.taskId !== undefined && acceptedBy(one.taskId) === "marker";
        },
        Boolean,
        30_000,
      );
      fence[gen].autoDisabled = true;
    }

    // Phase 2: the healthy channel is disabled through admin GraphQL on generation1 mid-run.
    await waitUntil(
      async () => sent.filter((s) => s.afterFence.autoDisabled && s.model === 52).length,
      (n) => n >= 2 * AFTER_FENCE,
      60_000,
    );
    await adminGraphql("generation1", `mutation { adminSetChannelStatus(input: { id: "${ids.healthy}", enabled: false }) { channel { status } } }`);
    const healthyDisabledAt = sent.length;
    await waitUntil(
      async () => afterLast,
      (n) => n.generation1 >= AFTER_FENCE && n.generation2 >= AFTER_FENCE,
      60_000,
    );
    stopLoad = true;
    await load;

    // Every request was answered; the refused ones (all three failing channels tried) with 502.
    const tasks = await db("tasks")
      .where("account_id", key.account_id)
      .select("id", "status", "price", "refunded", "channel_id", "channel_attempts", "result", "prompt");
    const byPrompt = new Map(tasks.map((t) => [t.prompt, t]));
    expect(tasks).toHaveLength(sent.length);
    for (const s of sent) s.taskId ??= byPrompt.get(s.prompt)?.id;
    for (const s of sent) expect(s.taskId, JSON.stringify(s)).toMatch(/\S/);

    // Shared health: after a process's fence, none of its submissions reached a channel the other
    // process (or the operator) took out; before it, only within the cache window.
    const stale: Record<string, Record<Gen, number>> = {};
    for (const s of sent) {
      const tried = triedBy(s.taskId!);
      if (s.afterFence.autoDisabled)
        expect(
          tried.filter((n) => ["http5xx", "code", "timeout"].includes(n)),
          JSON.stringify(s),
        ).toEqual([]);
      if (s.afterFence.adminDisabled) expect(tried, JSON.stringify(s)).not.toContain("healthy");
      if (s.model === 39) expect(tried.filter((n) => n !== "marker" && n !== "fallback")).toEqual([]);
    }
    const disablers: Record<string, Gen | undefined> = {};
    for (const name of ["http5xx", "code", "timeout"]) {
      disablers[name] = disabledBy(ids[name]!);
      expect(disablers[name], `${name}: no process logged disabling it`).toBeDefined();
      // Exactly one process disabled it (compare-and-swap), the other only saw the row.
      expect(
        GENS.filter((gen) =>
          processes[gen]!.output()
            .split("\n")
            .some((l) => l.includes("channel auto-disabled") && l.includes(ids[name]!)),
        ),
      ).toHaveLength(1);
    }
    const healthyLate = sent.slice(healthyDisabledAt).filter((s) => triedBy(s.taskId!).includes("healthy"));
    stale.healthy = {
      generation1: healthyLate.filter((s) => s.gen === "generation1").length,
      generation2: healthyLate.filter((s) => s.gen === "generation2").length,
    };

    // Polling asks the accepting channel: each fake reports its own result for the tasks it accepted; some fail later.
    const laterFailures = new Set<string>();
    for (const name of ["healthy", "fallback", "marker"] as const) {
      for (const [i, a] of fakes[name].accepted.entries()) {
        if (name === "fallback" && i % 4 === 3) {
          laterFailures.add(a.clientReference!);
          fakes[name].setTask(a.taskId, { status: 2, error: "provider failed it" });
        } else fakes[name].setTask(a.taskId, { status: 1, result: `https://${name}.example/${a.taskId}.mp4` });
      }
    }
    const settled = await waitUntil(
      () =>
        db("tasks").where("account_id", key.account_id).select("id", "status", "price", "refunded", "channel_id", "channel_attempts", "result", "submit_state"),
      (rows) => rows.every((t) => t.status === 1 || t.status === 2),
      120_000,
    );
    for (const name of ["http5xx", "code", "timeout"] as const)
      expect(fakes[name].requests.filter((r) => r.method === "GET" && r.path.startsWith("/api/v1/tasks/"))).toEqual([]);

    // Money: every task either succeeded on the channel that accepted it, or was refunded exactly once.
    const perChannel: Record<string, number> = {};
    const refunds = { atSubmission: 0, later: 0 };
    let charged = 0;
    for (const t of settled) {
      const entries = await db("ledger_entries").where({ task_id: t.id, kind: "refund" });
      const accepting = acceptedBy(t.id);
      if (t.status === 1) {
        expect(entries, t.id).toHaveLength(0);
        expect(accepting, t.id).toBeDefined();
        expect(t.channel_id ?? "chn_default").toBe(ids[accepting!]);
        expect(t.result).toMatch(new RegExp(`^https://${accepting}\\.example/`));
        perChannel[accepting!] = (perChannel[accepting!] ?? 0) + 1;
        charged += Number(t.price);
      } else {
        expect(entries, t.id).toHaveLength(1);
        expect(Number(entries[0].amount)).toBe(Number(t.price));
        expect(Number(t.refunded)).toBe(Number(t.price));
        if (accepting) {
          expect(laterFailures.has(t.id)).toBe(true);
          refunds.later += 1;
        } else {
          // Refused by every channel tried: the three failing ones.
          expect(triedBy(t.id).sort()).toEqual(["code", "http5xx", "timeout"]);
          expect(
            JSON.parse(t.channel_attempts)
              .map((a: any) => a.outcome)
              .sort(),
          ).toEqual(["code", "http", "timeout"]);
          refunds.atSubmission += 1;
        }
      }
    }
    expect(refunds.atSubmission).toBeGreaterThan(0);
    expect(refunds.later).toBe(laterFailures.size);
    for (const gen of GENS) expect(sent.filter((s) => s.gen === gen && s.status === 200).length).toBeGreaterThan(2 * AFTER_FENCE);
    const account = await db("accounts").where("id", key.account_id).first("balance");
    expect(Number(account.balance)).toBe(INITIAL_YUAN * 1000 - charged);
    const verified = await runCli(["verify"], env);
    expect(verified.stdout + verified.stderr).toMatch(/no discrepancies/);
    expect(verified.code).toBe(0);

    const rows = await db("channels").select("id", "name", "status", "submissions", "successes", "failures");
    console.log(
      JSON.stringify({
        channels_scale_out: {
          redis: hasRedis,
          submissions: sent.length,
          per_process: Object.fromEntries(GENS.map((gen) => [gen, sent.filter((s) => s.gen === gen).length])),
          succeeded_per_channel: perChannel,
          refunded_at_submission: refunds.atSubmission,
          refunded_after_provider_failure: refunds.later,
          auto_disabled_by: disablers,
          healthy_tasks_after_admin_disable_within_window: stale.healthy,
          channel_rows: Object.fromEntries(
            rows.map((r) => [r.name, { status: r.status, submissions: Number(r.submissions), successes: Number(r.successes), failures: Number(r.failures) }]),
          ),
          verify_exit: verified.code,
        },
      }),
    );
  }, 300_000);
});
