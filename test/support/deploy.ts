/**
 * The scale-out deployment of README "Running at scale", for tests: Debian's nginx with
 * deploy/nginx.conf (its ports moved to free ones) in front of two routers, two generation and
 * two cloud processes, each a real `switchyard start <role>` on one PostgreSQL database and Redis.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startCli, type RunningProcess } from "./process.ts";

/** deploy/nginx.conf, the file users run. */
export const NGINX_CONF = fileURLToPath(new URL("../../deploy/nginx.conf", import.meta.url));

/** The fixed ports deploy/nginx.conf names, by what listens there. */
const CONF_PORTS = {
  public: 8080,
  generationBalancer: 8081,
  cloudBalancer: 8082,
  router1: 4000,
  router2: 4010,
  generation1: 4001,
  generation2: 4011,
  cloud1: 4002,
  cloud2: 4012,
} as const;

/** A role process of the deployment. */
export type ProcessName = "router1" | "router2" | "generation1" | "generation2" | "cloud1" | "cloud2";

/** A running deployment. */
export interface Deployment {
  /** nginx's public entry (balances the routers). */
  url: string;
  /** Each router's own base URL, bypassing nginx. */
  routers: [string, string];
  ports: Record<keyof typeof CONF_PORTS, number>;
  processes: Record<ProcessName, RunningProcess>;
  /** The environment every role process got. */
  env: Record<string, string>;
  /** Kills a process with SIGKILL and waits until it is gone. */
  kill(name: ProcessName): Promise<void>;
  /** Starts a stopped process again on its port and waits until it serves. */
  restart(name: ProcessName): Promise<void>;
  /** What nginx wrote to stderr (errors, upstream failures). */
  nginxLog(): string;
  close(): Promise<void>;
}

/** A free TCP port on loopback (the OS's choice, released again for the process that takes it). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * deploy/nginx.conf with each of its fixed ports replaced.
 * @throws Error when the file names a port this helper does not know (the file and the test drifted)
 */
export function renderNginxConf(ports: Record<keyof typeof CONF_PORTS, number>): string {
  const byConfPort = new Map<number, number>(Object.entries(CONF_PORTS).map(([name, port]) => [port, ports[name as keyof typeof CONF_PORTS]]));
  return fs.readFileSync(NGINX_CONF, "utf8").replace(/127\.0\.0\.1:(\d+)/g, (_, port: string) => {
    const moved = byConfPort.get(Number(port));
    if (moved === undefined) throw new Error(`deploy/nginx.conf names port ${port}, unknown to test/support/deploy.ts`);
    return `127.0.0.1:${moved}`;
  });
}

async function waitForHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${status})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Starts the deployment: generation and cloud processes first (the first of them migrates the
 * database), then nginx, then the routers, which reach the subgraphs through nginx's balancers.
 * @param env environment for every role process (DATABASE_URL, REDIS_URL, upstream, timings)
 * @returns the deployment once nginx's `/health` answers 200
 */
export async function startDeployment(env: Record<string, string>): Promise<Deployment> {
  const ports = {} as Record<keyof typeof CONF_PORTS, number>;
  for (const name of Object.keys(CONF_PORTS) as (keyof typeof CONF_PORTS)[]) ports[name] = await freePort();
  const prefix = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-nginx-"));
  fs.mkdirSync(path.join(prefix, "tmp"));
  // nginx's workers run as `nobody` when the master is root: they must reach the prefix.
  fs.chmodSync(prefix, 0o755);
  fs.writeFileSync(path.join(prefix, "nginx.conf"), renderNginxConf(ports));

  const roleEnv: Record<ProcessName, Record<string, string>> = {
    generation1: { GENERATION_PORT: String(ports.generation1) },
    generation2: { GENERATION_PORT: String(ports.generation2) },
    cloud1: { CLOUD_PORT: String(ports.cloud1) },
    cloud2: { CLOUD_PORT: String(ports.cloud2) },
    router1: { PORT: String(ports.router1) },
    router2: { PORT: String(ports.router2) },
  };
  const base: Record<string, string> = {
    HOST: "127.0.0.1",
    GENERATION_URL: `http://127.0.0.1:${ports.generationBalancer}/graphql`,
    CLOUD_URL: `http://127.0.0.1:${ports.cloudBalancer}/graphql`,
    PUBLIC_URL: `http://127.0.0.1:${ports.public}`,
    TRUST_PROXY: "loopback",
    // Every process of the deployment shares one (README "Running at scale").
    SUBGRAPH_SECRET: randomBytes(32).toString("hex"),
    ...env,
  };
  const roleOf = (name: ProcessName) => name.replace(/\d$/, "");
  const readyLine: Record<string, RegExp> = {
    router: /Switchyard router:\s+http/,
    generation: /Generation subgraph:\s+http/,
    cloud: /Cloud subgraph:\s+http/,
  };
  const processes = {} as Record<ProcessName, RunningProcess>;
  const launch = async (name: ProcessName) => {
    const proc = startCli(["start", roleOf(name)], { ...base, ...roleEnv[name] });
    processes[name] = proc;
    await proc.waitFor(readyLine[roleOf(name)]!, 60_000);
  };

  let nginx: ChildProcess | undefined;
  let nginxOut = "";
  const deployment: Deployment = {
    url: `http://127.0.0.1:${ports.public}`,
    routers: [`http://127.0.0.1:${ports.router1}`, `http://127.0.0.1:${ports.router2}`],
    ports,
    processes,
    env: base,
    async kill(name) {
      await processes[name].stop("SIGKILL");
    },
    async restart(name) {
      await launch(name);
    },
    nginxLog: () => nginxOut,
    async close() {
      await Promise.all(Object.values(processes).map((p) => p.stop("SIGTERM")));
      if (nginx && nginx.exitCode === null) {
        const exited = new Promise((resolve) => nginx!.once("exit", resolve));
        nginx.kill("SIGQUIT");
        await exited;
      }
      fs.rmSync(prefix, { recursive: true, force: true });
    },
  };
  try {
    await launch("generation1");
    await launch("cloud1");
    await Promise.all((["generation2", "cloud2"] as const).map(launch));
    nginx = spawn("nginx", ["-p", prefix, "-c", path.join(prefix, "nginx.conf"), "-e", "stderr", "-g", "daemon off;"], { stdio: ["ignore", "ignore", "pipe"] });
    nginx.stderr!.on("data", (d) => (nginxOut += d));
    await Promise.all((["router1", "router2"] as const).map(launch));
    await waitForHttp(`${deployment.url}/health`);
  } catch (error) {
    await deployment.close();
    throw error;
  }
  return deployment;
}
