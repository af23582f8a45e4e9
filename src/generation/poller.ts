/**
 * The task poller (docs/architecture.md §5): refreshes open tasks from the upstream in batches with bounded
 * concurrency and settles them through {@link GenerationService.applyUpstreamState}.
 */
import pLimit from "p-limit";
import type { Logger } from "pino";
import { claimBatch, nowIso, type Db } from "../db/index.ts";
import { toTaskRecord, type GenerationService, type TaskRow } from "./tasks/index.ts";
import { UpstreamError, type GenerationUpstream } from "./upstream/types.ts";

/** Settings of the poller. */
export interface PollerOptions {
  db: Db;
  service: GenerationService;
  upstream: GenerationUpstream;
  logger: Logger;
  /** Milliseconds between rounds, and before a task is asked again. */
  intervalMs: number;
  /** Tasks per round. */
  batchSize: number;
  /** Upstream calls in flight at once. */
  concurrency: number;
  /**
   * How long a claimed task is leased to this poller (default {@link DEFAULT_POLL_LEASE_MS}, at
   * least `intervalMs`): other pollers skip it until then; a poller that died frees it after this.
   */
  leaseMs?: number;
}

/** Default lease of a claimed task: one upstream timeout at the default settings. */
export const DEFAULT_POLL_LEASE_MS = 30_000;

/** A running poller. */
export interface Poller {
  /** Runs one round now. @returns the number of tasks that changed */
  pollOnce(): Promise<number>;
  /** Stops scheduling rounds and waits for the current one. */
  stop(): Promise<void>;
}

/**
 * Starts polling. Rounds never overlap; a round that finds a full batch is followed at once by
 * the next one so a backlog drains without waiting an interval.
 */
export function startPoller(options: PollerOptions): Poller {
  const limit = pLimit(options.concurrency);
  const leaseMs = Math.max(options.leaseMs ?? DEFAULT_POLL_LEASE_MS, options.intervalMs);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<number> = Promise.resolve(0);

  async function round(): Promise<{ changed: number; full: boolean }> {
    // Lease the batch (next_poll_at pushed forward) so other pollers skip it; settling it sets
    // next_poll_at again, and applyUpstreamState's compare-and-swap stays the guard.
    const now = nowIso();
    const rows = await claimBatch<TaskRow>(
      options.db,
      "tasks",
      (q) => q.whereIn("status", [0, 3, 4]).andWhere("submit_state", "sent").andWhere("next_poll_at", "<=", now),
      [{ column: "next_poll_at" }],
      options.batchSize,
      { next_poll_at: new Date(Date.now() + leaseMs).toISOString() },
    );
    const results = await Promise.all(
      rows.map((row) =>
        limit(async () => {
          try {
            const state = await options.upstream.fetchStatus(row.upstream_task_id!, row.channel_id);
            return (await options.service.applyUpstreamState(toTaskRecord(row), state, options.intervalMs)) ? 1 : 0;
          } catch (error) {
            // The upstream could not be asked now: try again next round.
            options.logger.warn({ task_id: row.id, err: (error as Error).message }, "task poll failed");
            // A provider's Retry-After (429, 503) is obeyed: no sooner than it asked.
            const wait = Math.max(options.intervalMs, error instanceof UpstreamError ? (error.retryAfterMs ?? 0) : 0);
            await options
              .db("tasks")
              .where({ id: row.id })
              .update({ next_poll_at: new Date(Date.now() + wait).toISOString() });
            return 0;
          }
        }),
      ),
    );
    return { changed: results.reduce<number>((a, b) => a + b, 0), full: rows.length === options.batchSize };
  }

  async function pollOnce(): Promise<number> {
    const { changed } = await round();
    return changed;
  }

  function schedule(delay: number) {
    if (stopped) return;
    timer = setTimeout(() => {
      current = round()
        .then(({ changed, full }) => {
          schedule(full ? 0 : options.intervalMs);
          return changed;
        })
        .catch((error) => {
          options.logger.error({ err: error }, "poll round failed");
          schedule(options.intervalMs);
          return 0;
        });
    }, delay);
    timer.unref?.();
  }
  schedule(Math.min(options.intervalMs, 50));

  return {
    pollOnce,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current.catch(() => 0);
    },
  };
}
