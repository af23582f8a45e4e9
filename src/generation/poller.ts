/**
 * The task poller (docs/architecture.md §5): refreshes open tasks from the upstream in batches with bounded
 * concurrency and settles them through {@link GenerationService.applyUpstreamState}.
 */
import pLimit, { type LimitFunction } from "p-limit";
import type { Logger } from "pino";
import { claimBatch, nowIso, type Db } from "../db/index.ts";
import { startPacedLoop } from "../loop.ts";
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

/** What one round needs: the poller's settings, its concurrency limit and its lease (milliseconds). */
export interface PollDeps {
  options: PollerOptions;
  limit: LimitFunction;
  leaseMs: number;
}

/**
 * One round of the poller: leases up to `batchSize` open tasks due for a look, asks the upstream
 * about each (at most `concurrency` at once) and settles what changed through
 * {@link GenerationService.applyUpstreamState}; a task the upstream could not answer for is asked
 * again after the interval, or the provider's Retry-After when longer.
 * @returns the number of tasks that changed, and whether the batch was full (a backlog)
 */
export async function pollRound(deps: PollDeps): Promise<{ changed: number; full: boolean }> {
  const { options, limit, leaseMs } = deps;
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

/**
 * Starts polling on a paced loop (src/loop.ts): rounds never overlap; a round that finds a full
 * batch is followed at once by the next one so a backlog drains without waiting an interval.
 * @param options database, service, upstream, logger, interval (milliseconds), batch, concurrency, lease
 * @returns the poller, to run a round now and to stop
 */
export function startPoller(options: PollerOptions): Poller {
  const deps: PollDeps = {
    options,
    limit: pLimit(options.concurrency),
    leaseMs: Math.max(options.leaseMs ?? DEFAULT_POLL_LEASE_MS, options.intervalMs),
  };

  const loop = startPacedLoop(
    async () => {
      const { full } = await pollRound(deps);
      // A full batch means a backlog: the next round at once, so it drains without waiting an interval.
      return full ? 0 : options.intervalMs;
    },
    {
      firstDelayMs: Math.min(options.intervalMs, 50),
      maxDelayMs: options.intervalMs,
      onError: (error) => options.logger.error({ err: error }, "poll round failed"),
    },
  );

  return {
    async pollOnce() {
      const { changed } = await pollRound(deps);
      return changed;
    },
    stop: () => loop.stop(),
  };
}
