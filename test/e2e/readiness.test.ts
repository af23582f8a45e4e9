import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/deploy.ts";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres.ts";
import { startCli, type RunningProcess } from "../support/process.ts";

/** GET `url`: status and JSON body (status 0 when nothing answers). */
async function probe(url: string): Promise<{ status: number; body: any }> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    return { status: response.status, body: await response.json() };
  } catch {
    return { status: 0, body: null };
  }
}

/** Probes `url` until its status is `status` (as an orchestrator does, every 200 ms), within `timeoutMs`. */
async function until(url: string, status: number, timeoutMs = 30_000): Promise<{ status: number; body: any }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await probe(url);
    if (answer.status === status) return answer;
    if (Date.now() > deadline) throw new Error(`${url} answered ${answer.status} ${JSON.stringify(answer.body)}, not ${status}, for ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The JSON log lines of a process with this message. */
function logLines(proc: RunningProcess, msg: string): any[] {
  return proc
    .output()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line))
    .filter((line) => line.msg === msg);
}

describe("/readyz follows PostgreSQL and the subgraphs, as an orchestrator probing a split deployment sees it", { timeout: 240_000 }, () => {
  let pg: PrivatePostgres;
  let subgraphs: RunningProcess;
  let router: RunningProcess;
  let dataDir: string;
  const ports = { router: 0, generation: 0, cloud: 0 };
  let subgraphEnv: Record<string, string>;
  const startSubgraphs = async () => {
    subgraphs = startCli(["start", "generation,cloud"], subgraphEnv);
    await subgraphs.waitFor(/Cloud subgraph:\s+http/, 90_000);
  };

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    await pg.createDatabase("switchyard");
    for (const name of Object.keys(ports) as (keyof typeof ports)[]) ports[name] = await freePort();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-readyz-"));
    const shared = {
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      SUBGRAPH_SECRET: randomBytes(32).toString("hex"),
      REDIS_URL: "redis://127.0.0.1:6379",
      REDIS_KEY_PREFIX: `sy-readyz-${randomBytes(4).toString("hex")}:`,
      LOG_FORMAT: "json",
      LOG_LEVEL: "info",
    };
    const url = new URL(pg.url("switchyard"));
    url.password = "hunter2"; // trust authentication: accepted and ignored; it must never be shown
    subgraphEnv = { ...shared, DATABASE_URL: url.toString(), GENERATION_PORT: String(ports.generation), CLOUD_PORT: String(ports.cloud) };
    await startSubgraphs();
    router = startCli(["start", "router"], {
      ...shared,
      PORT: String(ports.router),
      GENERATION_URL: `http://127.0.0.1:${ports.generation}/graphql`,
      CLOUD_URL: `http://127.0.0.1:${ports.cloud}/graphql`,
    });
    await router.waitFor(/Switchyard router:\s+http/, 90_000);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([router?.stop(), subgraphs?.stop()]);
    await pg?.destroy();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const routerUrl = () => `http://127.0.0.1:${ports.router}`;
  const generationUrl = () => `http://127.0.0.1:${ports.generation}`;

  it("is ready everywhere once started: the router checks Redis and its subgraphs, a subgraph port its database, migrations, dispatcher and Redis", async () => {
    const atRouter = await until(`${routerUrl()}/readyz`, 200);
    expect(atRouter.body).toEqual({
      status: "ok",
      checks: { redis: { status: "ok" }, "subgraph:generation": { status: "ok" }, "subgraph:cloud": { status: "ok" } },
    });
    const atSubgraph = await until(`${generationUrl()}/readyz`, 200);
    expect(atSubgraph.body).toEqual({
      status: "ok",
      checks: { database: { status: "ok" }, migrations: { status: "ok" }, outbox_dispatcher: { status: "ok" }, redis: { status: "ok" } },
    });
  });

  it("answers 503 naming the database while PostgreSQL is stopped, keeps /livez 200, and is ready again once it is back", async () => {
    await pg.stop();
    const down = await until(`${generationUrl()}/readyz`, 503);
    expect(down.body.status).toBe("unavailable");
    expect(down.body.checks.database.status).toBe("failed");
    expect(down.body.checks.redis).toEqual({ status: "ok" });
    expect(JSON.stringify(down.body)).not.toMatch(/hunter2|127\.0\.0\.1|postgres:\/\//);
    expect((await probe(`${generationUrl()}/livez`)).status).toBe(200);
    // The router alone has no database: it stays ready.
    expect((await probe(`${routerUrl()}/readyz`)).status).toBe(200);

    await pg.start();
    const up = await until(`${generationUrl()}/readyz`, 200);
    expect(up.body.checks.database).toEqual({ status: "ok" });
  });

  it("answers 503 at the router naming each subgraph while their process is stopped, logs one warn per subgraph per transition, and recovers on restart", async () => {
    await subgraphs.stop("SIGTERM");
    const down = await until(`${routerUrl()}/readyz`, 503);
    expect(down.body.checks["subgraph:generation"]).toEqual({ status: "failed", error: "connection refused" });
    expect(down.body.checks["subgraph:cloud"]).toEqual({ status: "failed", error: "connection refused" });
    expect(down.body.checks.redis).toEqual({ status: "ok" });
    expect((await probe(`${routerUrl()}/livez`)).status).toBe(200);
    expect((await probe(`${routerUrl()}/health`)).body).toEqual({
      status: "unavailable",
      subgraphs: { generation: "unavailable", cloud: "unavailable" },
      models: [],
    });
    // More probes while down (each after the 1 s report cache) add no log line.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await probe(`${routerUrl()}/readyz`)).status).toBe(503);
    const unavailable = logLines(router, "subgraph unavailable");
    expect(unavailable.map((l) => [l.level, l.subgraph, l.reason]).sort()).toEqual([
      [40, "cloud", "connection refused"],
      [40, "generation", "connection refused"],
    ]);

    await startSubgraphs();
    await until(`${routerUrl()}/readyz`, 200);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await probe(`${routerUrl()}/readyz`)).status).toBe(200);
    const back = logLines(router, "subgraph available again");
    expect(back.map((l) => [l.level, l.subgraph]).sort()).toEqual([
      [40, "cloud"],
      [40, "generation"],
    ]);
    expect(logLines(router, "subgraph unavailable")).toHaveLength(2);
  });
});
