/**
 * Per-channel metrics (docs/architecture.md §2.13; README "Channels", "Observability"), label
 * `channel` (the channel id: rows an operator adds, so bounded):
 * - `switchyard_channel_submissions_total{channel,outcome}`: submission attempts so far, `accepted`
 *   or `failed`: the counters of the `channels` row, read on scrape, so every process sharing the
 *   database reports the same figures (aggregate with `max`);
 * - `switchyard_channel_submit_duration_seconds{channel,outcome}`: a histogram of each attempt's
 *   duration, observed by the process that made it (aggregate with `sum`);
 * - `switchyard_channel_open_tasks{channel}`: tasks it accepted that are not final;
 * - `switchyard_channel_up{channel}`: 1 ENABLED, 0 DISABLED or AUTO_DISABLED;
 * - `switchyard_channel_auto_disabled{channel}`: 1 while failures in a row keep it out (AUTO_DISABLED).
 * The gauges and the counter are read from the database on scrape.
 */
import type { Logger } from "pino";
import { Gauge, Histogram, type Registry } from "prom-client";
import type { Db } from "../../db/index.ts";
import { DURATION_BUCKETS, METRIC_PREFIX, onScrape, storedCounter } from "../../observability/metrics.ts";
import type { ChannelHealth } from "./health.ts";
import { listChannels, openTasksByChannel, type ChannelRecord } from "./store.ts";

/** What a generation process observes itself about its channels. */
export interface ChannelMetrics {
  /**
   * Records one submission attempt on a channel.
   * @param outcome `accepted`, or `failed` (the router moved on to the next channel)
   * @param seconds from the call to its answer or failure
   */
  observeSubmit(channelId: string, outcome: "accepted" | "failed", seconds: number): void;
  /**
   * Registers this process's write of its summed successes (src/generation/channels/health.ts),
   * run before each scrape reads the rows: a scrape then counts every submission this process
   * answered before it, not one a second later.
   */
  flushBeforeScrape(flush: () => Promise<void>): void;
}

/**
 * Registers the channel metrics in `registry`.
 * @returns the recorder of submission durations ({@link withSubmitMetrics})
 */
export function watchChannels(registry: Registry, db: Db, logger: Logger): ChannelMetrics {
  let flush: () => Promise<void> = async () => {};
  const snapshot = onScrape(
    async () => {
      await flush();
      return { channels: await listChannels(db), open: await openTasksByChannel(db) };
    },
    logger,
    "channels",
  );
  storedCounter(
    registry,
    {
      name: `${METRIC_PREFIX}channel_submissions_total`,
      help: "Submission attempts on the channel by outcome (accepted, failed), from the database",
      labelNames: ["channel", "outcome"] as const,
    },
    async () => {
      const s = await snapshot();
      return s?.channels.flatMap((c) => [
        [{ channel: c.id, outcome: "accepted" }, c.successes] as const,
        [{ channel: c.id, outcome: "failed" }, c.failures] as const,
      ]);
    },
  );
  const gauge = (name: string, help: string, value: (c: ChannelRecord, open: number) => number) =>
    new Gauge({
      name: `${METRIC_PREFIX}channel_${name}`,
      help,
      labelNames: ["channel"] as const,
      registers: [registry],
      async collect() {
        const s = await snapshot();
        if (!s) return;
        this.reset();
        for (const c of s.channels) this.set({ channel: c.id }, value(c, s.open.get(c.id) ?? 0));
      },
    });
  gauge("open_tasks", "Tasks the channel accepted that are not final", (_c, open) => open);
  gauge("up", "1 when the channel takes new tasks", (c) => (c.status === "ENABLED" ? 1 : 0));
  gauge("auto_disabled", "1 when failed submissions in a row took the channel out (AUTO_DISABLED) until a probe succeeds", (c) =>
    c.status === "AUTO_DISABLED" ? 1 : 0,
  );
  const duration = new Histogram({
    name: `${METRIC_PREFIX}channel_submit_duration_seconds`,
    help: "Duration of submission attempts on the channel by outcome (accepted, failed), observed by this process",
    labelNames: ["channel", "outcome"] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  return {
    observeSubmit: (channel, outcome, seconds) => duration.observe({ channel, outcome }, seconds),
    flushBeforeScrape: (write) => {
      flush = write;
    },
  };
}

/**
 * The health recorder, also observing each attempt's duration: the router reports every attempt
 * to the recorder (README "Channels" "Health"), so the metrics see exactly what health sees.
 * @returns a recorder that behaves as `health` does
 */
export function withSubmitMetrics(health: ChannelHealth, metrics: ChannelMetrics): ChannelHealth {
  return {
    ...health,
    success(channel, latencyMs) {
      metrics.observeSubmit(channel.id, "accepted", latencyMs / 1000);
      return health.success(channel, latencyMs);
    },
    failure(channel, reason, latencyMs) {
      metrics.observeSubmit(channel.id, "failed", latencyMs / 1000);
      return health.failure(channel, reason, latencyMs);
    },
  };
}
