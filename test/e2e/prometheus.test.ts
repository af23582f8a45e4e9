/**
 * Metrics as operators run them (issue 23 §5; README "Observability"), checked with Prometheus's
 * own tools from Debian's `prometheus` package, against real `switchyard start` processes of
 * every kind (a router, a generation and a cloud process on one PostgreSQL database, a fake
 * provider behind them):
 * - `promtool check metrics` finds no problem in any process's `/metrics` (counters end in
 *   `_total`, base units, help texts, no abbreviated units);
 * - deploy/grafana/switchyard.json queries only metrics the processes expose, and every query
 *   runs on a real Prometheus scraping them;
 * - deploy/prometheus/alerts.yml passes `promtool check rules` and its unit tests
 *   (alerts.test.yml), and evaluates without error on that Prometheus over exposed metrics only.
 * The tools are required: without them the tests fail (.ci/run installs the package).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { freePort } from "../support/deploy.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { parseExposition, prometheusTool, promtool } from "../support/metrics.ts";
import { runCli, startCli, type RunningProcess } from "../support/process.ts";
import { waitUntil } from "../support/stack.ts";

const DASHBOARD = fileURLToPath(new URL("../../deploy/grafana/switchyard.json", import.meta.url));
const ALERTS = fileURLToPath(new URL("../../deploy/prometheus/alerts.yml", import.meta.url));
const ALERT_TESTS = fileURLToPath(new URL("../../deploy/prometheus/alerts.test.yml", import.meta.url));
const VIDEO_BODY = { prompt: "a red fox", model_id: 69, seconds: 5, resolution: "480P" };

/** The process kinds of a split deployment, and the banner line each prints once it serves. */
const KINDS = {
  generation: /Generation subgraph:\s+(http\S+)/,
  cloud: /Cloud subgraph:\s+(http\S+)/,
  router: /Switchyard router:\s+(http\S+)/,
} as const;
type Kind = keyof typeof KINDS;

/** Metric names in a PromQL expression: ours and the process metrics, never functions or labels. */
function metricNames(expr: string): string[] {
  const withoutStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...new Set(withoutStrings.match(/\b(?:switchyard|process|nodejs)_[a-z0-9_]+\b/g) ?? [])];
}

/** A Grafana query with the dashboard's variables replaced as Grafana would (job `switchyard`). */
function asPromQL(expr: string): string {
  return expr.replaceAll("$__rate_interval", "15s").replaceAll("$__range", "1h").replaceAll("$job", "switchyard");
}

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: { refId: string; expr: string }[];
}

/** Every query of the dashboard: its panels' targets and its variables' queries. */
function dashboardQueries(): { where: string; expr: string }[] {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, "utf8"));
  const panels: Panel[] = dashboard.panels;
  const queries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel ${p.id} "${p.title}" ${t.refId}`, expr: t.expr })));
  for (const variable of dashboard.templating.list) {
    if (variable.type === "query") queries.push({ where: `variable ${variable.name}`, expr: variable.query.query ?? variable.query });
  }
  return queries;
}

describe("Prometheus's tools on real processes of every kind", () => {
  let database: TestDatabase;
  let fake: FakeUpstream;
  const processes: Partial<Record<Kind, { proc: RunningProcess; url: string }>> = {};
  let prometheus: ChildProcess | undefined;
  let prometheusDir: string | undefined;
  let prometheusUrl = "";
  /** Each process's `/metrics` after the traffic. */
  const exposition: Partial<Record<Kind, string>> = {};

  const scrape = async (kind: Kind) => {
    const response = await fetch(`${new URL(processes[kind]!.url).origin}/metrics`);
    expect(response.status).toBe(200);
    return response.text();
  };

  beforeAll(async () => {
    prometheusTool("promtool");
    prometheusTool("prometheus");
    fake = await startFakeUpstream();
    database = await createTestDatabase("switchyard-prometheus-", { postgres: true });
    const cloudPort = await freePort();
    const env = {
      ...database.env,
      HOST: "127.0.0.1",
      PORT: "0",
      GENERATION_PORT: "0",
      CLOUD_PORT: String(cloudPort),
      GENERATION_UPSTREAM_URL: fake.url,
      SUBGRAPH_SECRET: randomBytes(32).toString("hex"),
      TASK_POLL_INTERVAL_MS: "50",
      UPSTREAM_TIMEOUT_MS: "2000",
    };
    // The generation process migrates the database first; then the cloud process and the router
    // (told where both subgraphs listen) start side by side.
    const launch = async (kind: Kind, extra: Record<string, string> = {}) => {
      const proc = startCli(["start", kind], { ...env, ...extra });
      processes[kind] = { proc, url: "" };
      processes[kind].url = (await proc.waitFor(KINDS[kind], 120_000))[1]!;
    };
    await launch("generation");
    await Promise.all([launch("cloud"), launch("router", { GENERATION_URL: processes.generation!.url, CLOUD_URL: `http://127.0.0.1:${cloudPort}/graphql` })]);

    // Traffic through the router, so that every metric has series: a task that succeeds, one
    // every channel refuses (an upstream error, a refund), a GraphQL query.
    const created = await runCli(["keys", "create", "--name", "prometheus", "--balance", "100", "--json"], database.env);
    expect(created.code).toBe(0);
    const key: string = JSON.parse(created.stdout).key;
    const router = processes.router!.url;
    const submit = () =>
      fetch(`${router}/api/v1/video/generations`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify(VIDEO_BODY),
      });
    const accepted = await submit();
    expect(accepted.status).toBe(200);
    const taskId: string = (await accepted.json()).data.task_id;
    fake.setTask(fake.accepted.find((a) => a.clientReference === taskId)!.taskId, { status: 1, result: "https://media.example.com/fox.mp4" });
    fake.onSubmit({ kind: "http_error", status: 500 });
    expect((await submit()).status).toBe(502);
    fake.onSubmit({ kind: "accept" });
    const query = await fetch(`${router}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: "query Balance { viewer { balance { amount } } }" }),
    });
    expect(query.status).toBe(200);
    await waitUntil(
      async () => (await (await fetch(`${router}/api/v1/tasks/${taskId}`, { headers: { authorization: `Bearer ${key}` } })).json()).data?.status,
      (status) => status === 1,
    );
    for (const kind of Object.keys(KINDS) as Kind[]) exposition[kind] = await scrape(kind);
  }, 300_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus!.once("exit", resolve));
      prometheus.kill("SIGTERM");
      await exited;
    }
    if (prometheusDir) fs.rmSync(prometheusDir, { recursive: true, force: true });
    await Promise.all(Object.values(processes).map((p) => p.proc.stop("SIGTERM")));
    await fake?.close();
    await database?.drop();
  }, 60_000);

  /** Every sample name the processes expose (histograms: their `_bucket`, `_sum`, `_count`). */
  const exposed = () => new Set(Object.values(exposition).flatMap((text) => parseExposition(text!).map((s) => s.name)));

  it.each(Object.keys(KINDS) as Kind[])("promtool check metrics finds no problem in the %s process's /metrics", (kind) => {
    const text = exposition[kind]!;
    expect(promtool(["check", "metrics"], text)).toEqual({ status: 0, output: "" });
    // promtool lints only families with samples: every one of ours has some after the traffic.
    const sampled = new Set(parseExposition(text).map((s) => s.name.replace(/_(bucket|sum|count)$/, "")));
    const ours = [...text.matchAll(/^# TYPE (switchyard_\S+) \S+$/gm)].map((m) => m[1]!);
    expect(ours).toContain("switchyard_build_info");
    expect(ours.filter((name) => !sampled.has(name))).toEqual([]);
  });

  it("the dashboard is valid JSON whose every query parses and uses only metrics the processes expose", () => {
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(20);
    const names = exposed();
    const missing = queries.flatMap(({ where, expr }) => {
      const used = metricNames(expr);
      if (used.length === 0) return [`${where}: no Switchyard or process metric in ${expr}`];
      return used.filter((name) => !names.has(name)).map((name) => `${where}: ${name}`);
    });
    expect(missing).toEqual([]);
    // promtool parses each query as the expression of a recording rule (variables replaced).
    const rulesFile = path.join(os.tmpdir(), `switchyard-dashboard-${process.pid}.yml`);
    const asRules = queries
      .filter(({ expr }) => !expr.startsWith("label_values("))
      .map(({ expr }, i) => `      - record: dashboard_query_${i}\n        expr: ${JSON.stringify(asPromQL(expr))}`);
    fs.writeFileSync(rulesFile, `groups:\n  - name: dashboard\n    rules:\n${asRules.join("\n")}\n`);
    try {
      const checked = promtool(["check", "rules", rulesFile]);
      expect(checked.output).toMatch(/SUCCESS/);
      expect(checked.status).toBe(0);
    } finally {
      fs.rmSync(rulesFile, { force: true });
    }
  });

  it("the alert rules pass promtool check rules and their unit tests", () => {
    expect(promtool(["check", "rules", ALERTS])).toEqual({ status: 0, output: expect.stringMatching(/SUCCESS: 8 rules found/) });
    expect(promtool(["test", "rules", ALERT_TESTS])).toEqual({ status: 0, output: expect.stringMatching(/SUCCESS/) });
  });

  it("a real Prometheus scraping the processes answers every dashboard query with series and evaluates every alert rule", async () => {
    const port = await freePort();
    prometheusDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-prometheus-"));
    const targets = Object.values(processes).map((p) => new URL(p.url).host);
    fs.writeFileSync(
      path.join(prometheusDir, "prometheus.yml"),
      [
        "global: { scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 1s }",
        `rule_files: [${JSON.stringify(ALERTS)}]`,
        "scrape_configs:",
        "  - job_name: switchyard",
        `    static_configs: [{ targets: ${JSON.stringify(targets)} }]`,
        "",
      ].join("\n"),
    );
    let log = "";
    prometheus = spawn(
      prometheusTool("prometheus"),
      [
        `--config.file=${path.join(prometheusDir, "prometheus.yml")}`,
        `--storage.tsdb.path=${path.join(prometheusDir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    prometheus.stdout!.on("data", (d) => (log += d));
    prometheus.stderr!.on("data", (d) => (log += d));
    prometheusUrl = `http://127.0.0.1:${port}`;
    // null until Prometheus answers (it says 503 while starting).
    const api = async (pathAndQuery: string) => {
      const response = await fetch(`${prometheusUrl}${pathAndQuery}`).catch(() => null);
      if (!response || response.status === 503) return null;
      return (await response.json()) as { status: string; error?: string; data: any };
    };
    // Every target scraped (the rates need two scrapes of each).
    await waitUntil(
      () => api(`/api/v1/query?query=${encodeURIComponent('count_over_time(up{job="switchyard"}[1m]) >= 3')}`),
      (answer) => answer?.data?.result?.length === targets.length,
      60_000,
    ).catch((error) => {
      throw new Error(`${error.message}\nprometheus log:\n${log}`);
    });

    for (const { where, expr } of dashboardQueries()) {
      if (expr.startsWith("label_values(")) {
        const jobs = await api("/api/v1/label/job/values");
        expect(jobs?.data).toContain("switchyard");
        continue;
      }
      // A scrape that timed out on a busy machine marks its series stale until the next one:
      // wait for series rather than fail on one late scrape.
      const answer = await waitUntil(
        () => api(`/api/v1/query?query=${encodeURIComponent(asPromQL(expr))}`),
        (a) => a?.status === "error" || (a?.data?.result?.length ?? 0) > 0,
        20_000,
      ).catch((error) => ({ status: "no series", error: error.message }));
      expect({ where, status: answer?.status, error: answer?.error }).toEqual({ where, status: "success", error: undefined });
    }

    type Rule = { name: string; query: string; health: string; lastError?: string };
    const rules = await waitUntil(
      async (): Promise<Rule[]> => ((await api("/api/v1/rules"))?.data?.groups ?? []).flatMap((g: { rules: Rule[] }) => g.rules),
      (list) => list.length === 8 && list.every((r) => r.health !== "unknown"),
      30_000,
    );
    const names = exposed();
    expect(
      rules.map((r) => ({
        name: r.name,
        health: r.health,
        lastError: r.lastError ?? "",
        // `up` is Prometheus's own series of each scrape; everything else must be exposed.
        uses: metricNames(r.query).length > 0 || /\bup\{/.test(r.query),
        missing: metricNames(r.query).filter((name) => !names.has(name)),
      })),
    ).toEqual(rules.map((r) => ({ name: r.name, health: "ok", lastError: "", uses: true, missing: [] })));
  }, 120_000);
});
