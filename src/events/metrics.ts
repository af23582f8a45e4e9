/**
 * The outbox's metrics (docs/architecture.md §2 `/metrics`, §6.2), read from the database on scrape only:
 * - `switchyard_outbox_pending`: outbox rows not yet published;
 * - `switchyard_outbox_lag_seconds`: age of the oldest of them (0 when none).
 * Whole-database figures: processes sharing one database report the same values (aggregate
 * them with `max`, not `sum`).
 */
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import type { Db } from "../db/index.ts";
import { METRIC_PREFIX, onScrape } from "../observability/metrics.ts";

/**
 * Registers the outbox gauges in `registry`.
 * @param now clock in milliseconds (tests)
 */
export function watchOutbox(registry: Registry, db: Db, logger: Logger, now: () => number = Date.now): void {
  const outbox = onScrape(
    async () => {
      const row = await db("outbox").whereNull("published_at").count({ pending: "*" }).min({ oldest: "created_at" }).first();
      return { pending: Number(row?.pending ?? 0), oldest: row?.oldest ? String(row.oldest) : null };
    },
    logger,
    "outbox",
  );
  new Gauge({
    name: `${METRIC_PREFIX}outbox_pending`,
    help: "Outbox rows not yet published",
    registers: [registry],
    async collect() {
      const snapshot = await outbox();
      if (snapshot) this.set(snapshot.pending);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}outbox_lag_seconds`,
    help: "Age of the oldest unpublished outbox row in seconds (0 when none)",
    registers: [registry],
    async collect() {
      const snapshot = await outbox();
      if (!snapshot) return;
      const created = snapshot.oldest ? Date.parse(snapshot.oldest) : NaN;
      this.set(Number.isFinite(created) ? Math.max(0, (now() - created) / 1000) : 0);
    },
  });
}
