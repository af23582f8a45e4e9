/**
 * The whole stack (bin/stack.ts: router and both subgraphs) in the profiling script's own process,
 * on free ports, for the scripts that read the server's own counters (bench/profile-sql.ts,
 * bench/profile-alloc.ts). `npm run bench` starts real processes instead (bench/server.ts).
 */
import { startStack } from "../bin/stack.ts";
import { loadConfig } from "../src/config.ts";
import type { BenchDatabase } from "./server.ts";

/**
 * Starts the stack on `database` with production settings, silent logs and a Redis key prefix
 * of its own (`REDIS_URL` from the environment is honoured).
 * @param label names the Redis key prefix (`bench-<label>-<pid>:`)
 * @returns the running stack; `close()` stops it
 */
export async function startBenchStack(database: BenchDatabase, label: string): Promise<Awaited<ReturnType<typeof startStack>>> {
  const config = loadConfig({
    ...process.env,
    ...database.env,
    NODE_ENV: "production",
    PORT: "0",
    GENERATION_PORT: "0",
    CLOUD_PORT: "0",
    LOG_LEVEL: "silent",
    REDIS_KEY_PREFIX: `bench-${label}-${process.pid}:`,
  });
  return startStack(config);
}
