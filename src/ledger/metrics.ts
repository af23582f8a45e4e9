/**
 * The ledger's metrics (docs/architecture.md §2.13; README "Observability"), read from the database on scrape only:
 * - `switchyard_ledger_entries_total{kind}`: ledger entries by kind (topup, debit, refund, adjustment);
 * - `switchyard_ledger_milliyuan_total{kind,direction}`: their amounts in milli-yuan, credits and
 *   debits apart, so each series only grows: the ledger is append-only;
 * - `switchyard_ledger_imbalance_milliyuan`: the stored balances (accounts and cloud customers)
 *   minus the sum of every ledger entry, 0 while the books hold. It is the one `verify` rule cheap
 *   enough for every scrape (the full `switchyard verify` reads every task and order): money
 *   that moved without an entry, or an entry without its balance change, shows here.
 * Whole-database figures: processes sharing one database report the same values (aggregate
 * them with `max`, not `sum`).
 */
import type { Logger } from "pino";
import { Gauge, type Registry } from "prom-client";
import type { Db } from "../db/index.ts";
import { METRIC_PREFIX, onScrape, storedCounter, type StoredSeries } from "../observability/metrics.ts";

/** The stored balances, both kinds of wallet (src/ledger/index.ts `wallet`), as one SQL expression. */
const BALANCES = "(select coalesce(sum(balance), 0) from accounts) + (select coalesce(sum(balance), 0) from customers)";

interface LedgerSnapshot {
  byKind: { kind: string; entries: number; credited: number; debited: number }[];
  /** Stored balances minus the entries' sum, in milli-yuan. */
  imbalance: number;
}

/** Registers the ledger counters and the imbalance gauge in `registry`. */
export function watchLedger(registry: Registry, db: Db, logger: Logger): void {
  const ledger = onScrape(
    async (): Promise<LedgerSnapshot> => {
      // One statement, so the balances and the entries come from one snapshot (a transfer
      // committing between two queries would look like an imbalance).
      const rows: { kind: string; entries: number | string; credited: number | string | null; debited: number | string | null; balances: number | string }[] =
        await db("ledger_entries")
          .select("kind")
          .count({ entries: "*" })
          .select(db.raw("sum(case when amount > 0 then amount else 0 end) as credited"))
          .select(db.raw("sum(case when amount < 0 then -amount else 0 end) as debited"))
          .select(db.raw(`${BALANCES} as balances`))
          .groupBy("kind");
      const byKind = rows.map((row) => ({
        kind: row.kind,
        entries: Number(row.entries),
        credited: Number(row.credited ?? 0),
        debited: Number(row.debited ?? 0),
      }));
      // No entry at all: the balances alone (every one should be 0).
      const balances = rows.length ? Number(rows[0]!.balances) : Number((await db.select(db.raw(`${BALANCES} as balances`)).first()).balances);
      const entries = byKind.reduce((sum, row) => sum + row.credited - row.debited, 0);
      return { byKind, imbalance: balances - entries };
    },
    logger,
    "ledger",
  );
  const series =
    <L extends string>(pick: (snapshot: LedgerSnapshot) => StoredSeries<L>[]) =>
    async () => {
      const snapshot = await ledger();
      return snapshot && pick(snapshot);
    };
  storedCounter(
    registry,
    { name: `${METRIC_PREFIX}ledger_entries_total`, help: "Ledger entries by kind", labelNames: ["kind"] as const },
    series((s) => s.byKind.map((row) => [{ kind: row.kind }, row.entries])),
  );
  storedCounter(
    registry,
    {
      name: `${METRIC_PREFIX}ledger_milliyuan_total`,
      help: "Ledger amounts in milli-yuan by kind and direction (credit, debit)",
      labelNames: ["kind", "direction"] as const,
    },
    // Only the directions a kind has moved money in: no series of a debit's credits.
    series((s) =>
      s.byKind
        .flatMap((row): StoredSeries<"kind" | "direction">[] => [
          [{ kind: row.kind, direction: "credit" }, row.credited],
          [{ kind: row.kind, direction: "debit" }, row.debited],
        ])
        .filter(([, amount]) => amount > 0),
    ),
  );
  new Gauge({
    name: `${METRIC_PREFIX}ledger_imbalance_milliyuan`,
    help: "Stored balances minus the sum of all ledger entries in milli-yuan; anything but 0 means the books do not hold",
    registers: [registry],
    async collect() {
      const snapshot = await ledger();
      if (snapshot) this.set(snapshot.imbalance);
    },
  });
}
