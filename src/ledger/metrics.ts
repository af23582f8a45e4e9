/**
 * The ledger's metrics (docs/architecture.md §2 `/metrics`, §3), read from the database on scrape only:
 * - `switchyard_ledger_entries_total{kind}`: ledger entries by kind (topup, debit, refund, adjustment);
 * - `switchyard_ledger_milliyuan_total{kind,direction}`: their amounts in milli-yuan, credits and
 *   debits apart, so each series only grows: the ledger is append-only.
 * Whole-database figures: processes sharing one database report the same values (aggregate
 * them with `max`, not `sum`).
 */
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import type { Db } from "../db/index.ts";
import { METRIC_PREFIX, onScrape } from "../observability/metrics.ts";

/** Registers the ledger counters in `registry`. */
export function watchLedger(registry: Registry, db: Db, logger: Logger): void {
  const ledger = onScrape(
    async () => {
      const rows: { kind: string; entries: number | string; credited: number | string | null; debited: number | string | null }[] = await db("ledger_entries")
        .select("kind")
        .count({ entries: "*" })
        .select(db.raw("sum(case when amount > 0 then amount else 0 end) as credited"))
        .select(db.raw("sum(case when amount < 0 then -amount else 0 end) as debited"))
        .groupBy("kind");
      return rows;
    },
    logger,
    "ledger",
  );
  new Counter({
    name: `${METRIC_PREFIX}ledger_entries_total`,
    help: "Ledger entries by kind",
    labelNames: ["kind"] as const,
    registers: [registry],
    async collect() {
      const rows = await ledger();
      if (!rows) return;
      // Absolute figures from the database: replace, not add (no await between the two).
      this.reset();
      for (const row of rows) this.inc({ kind: row.kind }, Number(row.entries));
    },
  });
  new Counter({
    name: `${METRIC_PREFIX}ledger_milliyuan_total`,
    help: "Ledger amounts in milli-yuan by kind and direction (credit, debit)",
    labelNames: ["kind", "direction"] as const,
    registers: [registry],
    async collect() {
      const rows = await ledger();
      if (!rows) return;
      this.reset();
      for (const row of rows) {
        const credited = Number(row.credited ?? 0);
        const debited = Number(row.debited ?? 0);
        if (credited > 0) this.inc({ kind: row.kind, direction: "credit" }, credited);
        if (debited > 0) this.inc({ kind: row.kind, direction: "debit" }, debited);
      }
    },
  });
}
