/**
 * Per-channel metrics (docs/architecture.md §2 `/metrics`; README "Channels"), read from the
 * `channels` table and the open tasks on scrape, so every process sharing the database reports
 * the same figures (aggregate with `max`):
 * - `switchyard_channel_submissions{channel}`, `..._successes`, `..._failures`: attempts so far;
 * - `switchyard_channel_success_ratio{channel}`: successes / submissions (absent when none);
 * - `switchyard_channel_submit_latency_ms_avg{channel}`: mean submit latency;
 * - `switchyard_channel_open_tasks{channel}`: tasks it accepted that are not final;
 * - `switchyard_channel_up{channel}`: 1 ENABLED, 0 DISABLED or AUTO_DISABLED.
 */
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import type { Db } from "../../db/index.ts";
import { METRIC_PREFIX, onScrape } from "../../observability/metrics.ts";
import { listChannels, openTasksByChannel } from "./store.ts";

/** Registers the channel gauges in `registry`. */
export function watchChannels(registry: Registry, db: Db, logger: Logger): void {
  const snapshot = onScrape(async () => ({ channels: await listChannels(db), open: await openTasksByChannel(db) }), logger, "channels");
  const gauge = (name: string, help: string, value: (c: Awaited<ReturnType<typeof listChannels>>[number], open: number) => number | null) =>
    new Gauge({
      name: `${METRIC_PREFIX}channel_${name}`,
      help,
      labelNames: ["channel"] as const,
      registers: [registry],
      async collect() {
        const s = await snapshot();
        if (!s) return;
        this.reset();
        for (const c of s.channels) {
          const v = value(c, s.open.get(c.id) ?? 0);
          if (v !== null) this.set({ channel: c.id }, v);
        }
      },
    });
  gauge("submissions", "Submissions tried on the channel", (c) => c.submissions);
  gauge("successes", "Submissions the channel accepted", (c) => c.successes);
  gauge("failures", "Submissions the channel refused", (c) => c.failures);
  gauge("success_ratio", "Accepted / tried submissions of the channel", (c) => (c.submissions > 0 ? c.successes / c.submissions : null));
  gauge("submit_latency_ms_avg", "Mean submit latency of the channel in milliseconds", (c) => (c.submissions > 0 ? c.latencyMsTotal / c.submissions : null));
  gauge("open_tasks", "Tasks the channel accepted that are not final", (_c, open) => open);
  gauge("up", "1 when the channel takes new tasks", (c) => (c.status === "ENABLED" ? 1 : 0));
}
