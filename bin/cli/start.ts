/**
 * `switchyard start [ROLES] [--demo]`: starts the stack, owns the termination signals, drains on
 * shutdown and prints the banner (docs/architecture.md §2, README "Running"); seeds the demo data
 * when `config.seedDemo` says so (README "Demo data").
 */
import type { Knex } from "knex";
import type { Config } from "../../src/config.ts";
import { parseYuan } from "../../src/money.ts";
import type { Stack } from "../stack.ts";
import { ALL_ROLES, type Role } from "../roles.ts";
import { UsageError } from "./shared.ts";

/**
 * The roles of a `[ROLES]` argument (comma-separated; undefined when absent: every role).
 * @throws UsageError on an unknown role
 */
export function parseRoles(roleArg: string | undefined): Role[] | undefined {
  const roles = roleArg ? (roleArg.split(",").map((r) => r.trim()) as Role[]) : undefined;
  const unknown = roles?.filter((r) => !ALL_ROLES.includes(r));
  if (unknown?.length) throw new UsageError(`unknown role: ${unknown.join(", ")}`);
  return roles;
}

/**
 * Starts the roles named in `roleArg` (comma-separated; all when absent) and keeps running.
 * @throws UsageError on an unknown role; the stack's start errors (a port in use is described in one line)
 */
export async function start(config: Config, roleArg: string | undefined): Promise<void> {
  const roles = parseRoles(roleArg);
  // Graceful shutdown: stop accepting, drain requests in flight (SHUTDOWN_TIMEOUT_MS), close
  // WebSockets with 1001, stop the loops, then close the database; exit 0. Should closing hang,
  // the process exits 1 a little after the drain deadline; a second signal exits at once.
  // The signals are ours before anything starts: a SIGTERM arriving while the stack starts, or
  // just after the ready line is printed, shuts down once the start has finished (a library's
  // own listener, added meanwhile, would otherwise take it and leave the process running).
  let stack: Stack | undefined;
  let signalledWhileStarting: string | undefined;
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing || signalledWhileStarting) {
      stack?.logger.warn({ signal }, "second signal: exiting without waiting");
      process.exit(1);
    }
    if (!stack) {
      signalledWhileStarting = signal; // shut down once the start finishes (below)
      return;
    }
    closing = true;
    stack.logger.info({ signal }, "shutting down");
    setTimeout(() => {
      stack?.logger.error("shutdown did not finish in time; exiting");
      process.exit(1);
    }, config.shutdownTimeoutMs + 15_000).unref();
    await stack.close();
    stack.logger.info("stopped");
    process.exit(0);
  };
  ownTerminationSignals((signal) => void shutdown(signal));
  // Loaded on demand: the gateway and servers are heavy, and key commands need none of them.
  const { startStack, createLogger } = await import("../stack.ts");
  // Log lines and the banner share one ordered stream on stdout, so they never interleave.
  const pino = (await import("pino")).default;
  const stdout = pino.destination({ dest: 1, sync: false });
  const logger = createLogger(config, stdout);
  const started = await startStack(config, roles, logger).catch(async (error) => {
    const { describeListenError } = await import("../ports.ts");
    throw describeListenError(error, config, roles ?? ALL_ROLES) ?? error;
  });
  stack = started;
  if (signalledWhileStarting) {
    const signal = signalledWhileStarting;
    signalledWhileStarting = undefined;
    return shutdown(signal);
  }
  // A real process also reports its CPU, memory, event-loop lag and GC on /metrics.
  if (started.metrics) (await import("../../src/observability/metrics.ts")).collectProcessMetrics(started.metrics);
  let demoKey: { key: string; id: string } | undefined;
  let noKeyYet = false;
  if (started.db) {
    const { databaseDescription } = await import("../../src/db/index.ts");
    process.stderr.write(`database: ${databaseDescription(started.db)}\n`);
    // A demo key only on a database without any key: a restart, or a database an operator
    // already gave keys, gets none (README "Demo data").
    const [{ n }] = await started.db("api_keys").count({ n: "*" });
    if (Number(n) === 0 && config.seedDemo) {
      const { createKey } = await import("../../src/auth/keys.ts");
      const { audited } = await import("../../src/audit/log.ts");
      const { newestEntryOf } = await import("../../src/ledger/entries.ts");
      // Its opening balance is a money write: audited as the system's (`switchyard verify`).
      demoKey = await audited(
        started.db,
        { operatorId: null, actor: "system", role: null, requestId: null },
        {
          action: "demo.key",
          objectType: "api_key",
          objectIdOf: (k: { id: string }) => k.id,
          after: (k: { id: string; account_id: string }) => ({ id: k.id, account_id: k.account_id }),
          ledgerEntryOf: (k: { entry: number | null }) => k.entry,
        },
        async (trx: Knex.Transaction) => {
          const made = await createKey(trx, { name: "demo", balance: parseYuan("100") });
          return { ...made, entry: Number((await newestEntryOf(trx, made.account_id))?.id ?? 0) || null };
        },
      );
    } else noKeyYet = Number(n) === 0;
  }
  const lines = [""];
  if (started.url)
    lines.push(
      `Switchyard router:   ${started.url}  (GraphQL ${started.url}/graphql, REST ${started.url}/api/v1, health ${started.url}/health, ready ${started.url}/readyz)`,
    );
  if (started.url)
    lines.push(
      `Web pages:           ${started.url}/ (start here: links everything)  ${started.url}/test  ${started.url}/client  ${started.url}/admin (console)  ${started.url}/docs (API reference)`,
    );
  if (started.generationUrl) lines.push(`Generation subgraph: ${started.generationUrl}`);
  if (started.cloudUrl) lines.push(`Cloud subgraph:      ${started.cloudUrl}`);
  // The demo key is a secret: never a log line. In development it is part of the banner on
  // stdout (README "Two commands"); in production stdout is the log stream a collector reads, so
  // the key goes to stderr, beside the `database:` line, for the operator who asked for it.
  const demoLine = demoKey && `Demo API key (100.00 CNY, shown once): ${demoKey.key} (id ${demoKey.id})`;
  if (demoLine && config.nodeEnv !== "production") lines.push(demoLine);
  if (closing) return; // a signal came while counting keys: shutdown() is already under way
  stdout.write(`${lines.join("\n")}\n\n`);
  if (demoLine && config.nodeEnv === "production") process.stderr.write(`${demoLine}\n`);
  if (noKeyYet) process.stderr.write('no API key yet: `switchyard keys create --name NAME --balance YUAN` makes one (README "First key and catalog")\n');
  started.logger.info({ event: "ready", url: started.url, generation_url: started.generationUrl, cloud_url: started.cloudUrl }, "ready");
}

/**
 * Makes `handler` the only listener of SIGTERM and SIGINT, now and later. Libraries that react to
 * those signals on their own — the gateway runtime disposes its subgraph executors, Apollo Server
 * stops itself — would cut the requests in flight before the graceful shutdown drains them.
 */
function ownTerminationSignals(handler: (signal: NodeJS.Signals) => void): void {
  const signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT"];
  const ours = new Set<(...args: unknown[]) => void>();
  for (const signal of signals) for (const listener of process.listeners(signal)) process.off(signal, listener);
  process.on("newListener", (event, listener) => {
    if (signals.includes(event as NodeJS.Signals) && !ours.has(listener)) queueMicrotask(() => process.off(event as NodeJS.Signals, listener));
  });
  for (const signal of signals) {
    const listener = () => handler(signal);
    ours.add(listener);
    process.on(signal, listener);
  }
}
