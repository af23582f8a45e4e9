/**
 * The bench's output (bench/README.md "Reading the results"): the results document written to
 * bench/results/<date>.json, its ratios and targets, and the markdown table printed and kept in
 * bench/README.md between the results markers.
 */
import fs from "node:fs";
import type { LoadResult } from "./load.ts";
import { round } from "./load.ts";
import type { LiveResult } from "./live.ts";

/** The write scenario: throughput plus the money checks after it. */
export interface WriteResult {
  load: LoadResult;
  /** 2xx submissions the client saw, warm-up included. */
  accepted: number;
  /** Tasks the key has in the database afterwards (≥ accepted: answers cut off when the load stopped). */
  tasksInDb: number;
  /** Price of one submission and the key's balances, yuan strings as the API shows them. */
  price: string;
  initialBalance: string;
  balance: string;
  spent: string;
  /** balance = initial − spent and spent = tasks × price, exactly (integer milli-yuan). */
  ledgerExact: boolean;
  /** `switchyard verify` exit code (0 = every balance and task invariant holds) and its output. */
  verifyExit: number | null;
  verifyOutput: string;
  database: "sqlite" | "postgres";
  /** The server processes a submission passes through (as {@link Row.processes}). */
  processes?: string;
  failed: boolean;
}

/** One load row of the table. */
export interface Row {
  scenario: string;
  variant: string;
  scale: number;
  result: LoadResult | null;
  /** Why the row has no trustworthy numbers (a failed preflight, errors). */
  note?: string;
  /**
   * The server processes a request of this row passes through, in words (`1: router + subgraphs`,
   * `2: Apollo Gateway | subgraphs`): how many cores the setup can use (bench/README.md "Reading
   * the results").
   */
  processes?: string;
  /** Server CPU ms per request of each process of a multi-process row, by role (sums to `result.cpuMsPerRequest`). */
  cpuByRole?: Record<string, number>;
}

/** The whole results document. */
export interface Results {
  date: string;
  wallSeconds: number;
  environment: Record<string, unknown>;
  data: Record<string, { tasks: number; orders: number }>;
  rows: Row[];
  write?: WriteResult;
  live?: LiveResult;
  ratios: Record<string, number | null>;
  targets: Target[];
}

/** A target of issue 7 and whether this run met it. */
export interface Target {
  name: string;
  target: string;
  measured: string;
  /** null: not measured in this run (scenario not selected or failed). */
  met: boolean | null;
}

const ok = (r: LoadResult | null | undefined): r is LoadResult => !!r && !r.failed;

function findRow(rows: Row[], scenario: string, variant: string, scale?: number): Row | undefined {
  return rows.find((r) => r.scenario === scenario && r.variant === variant && (scale === undefined || r.scale === scale));
}

function find(rows: Row[], scenario: string, variant: string, scale?: number): LoadResult | null {
  return findRow(rows, scenario, variant, scale)?.result ?? null;
}

/** The Grafbase row's signing proxy (bench/signing-proxy.ts): a bench-only process, see bench/README.md. */
const SIGNING_PROXY = "signing proxy";

/**
 * A row's CPU ms per request without its bench-only signing proxy: what the stack would cost with
 * subgraphs that need no signature from it (the stricter partner for our router's targets).
 */
function cpuWithoutProxy(row: Row | undefined): number | null {
  const cpu = row?.result?.cpuMsPerRequest;
  if (!cpu) return null;
  return round(cpu - (row.cpuByRole?.[SIGNING_PROXY] ?? 0), 2);
}

function ratio(a: number | undefined, b: number | undefined): number | null {
  return a !== undefined && b !== undefined && b > 0 ? round(a / b, 2) : null;
}

/**
 * Computes the ratios and checks the targets.
 * @param rows the load rows; `write`, `live` when run
 * @returns ratios (null where a partner is missing or failed) and targets
 */
export function evaluate(
  rows: Row[],
  write: WriteResult | undefined,
  live: LiveResult | undefined,
): { ratios: Record<string, number | null>; targets: Target[] } {
  const scales = [...new Set(rows.map((r) => r.scale))].sort((a, b) => a - b);
  const base = scales[0];
  const top = scales[scales.length - 1];
  const direct = find(rows, "read", "direct subgraph", base);
  const router = find(rows, "read", "router", base);
  const rest = find(rows, "read", "REST shim", base);
  const join = find(rows, "join", "router", base);
  const apollo = find(rows, "join", "Apollo Gateway", base);
  const hive = find(rows, "join", "Hive Gateway (Rust planner)", base);
  const grafbaseRow = findRow(rows, "join", "Grafbase", base);
  const grafbase = grafbaseRow?.result ?? null;
  const persisted = find(rows, "join", "router, persisted document id", base);
  const both = (a: LoadResult | null, b: LoadResult | null) => ok(a) && ok(b);
  const ratios = {
    "read router / direct subgraph (req/s)": both(router, direct) ? ratio(router!.rps, direct!.rps) : null,
    "read REST shim / router (req/s)": both(rest, router) ? ratio(rest!.rps, router!.rps) : null,
    "join router / Apollo Gateway (req/s)": both(join, apollo) ? ratio(join!.rps, apollo!.rps) : null,
    "join router / Apollo Gateway (p99)": both(join, apollo) ? ratio(join!.p99, apollo!.p99) : null,
    // CPU per request of partners (Apollo's row counts its gateway process and our subgraphs):
    // steadier than req/s on a shared machine, and blind to how many cores each setup can use.
    "read router / direct subgraph (CPU ms per request)": both(router, direct) ? cpuRatio(router!, direct!) : null,
    "join router / Apollo Gateway (CPU ms per request)": both(join, apollo) ? cpuRatio(join!, apollo!) : null,
    "join router / Hive Gateway (CPU ms per request)": both(join, hive) ? cpuRatio(join!, hive!) : null,
    // Grafbase's stack without the bench-only signing proxy (the stricter partner), and with it.
    "join router / Grafbase without the signing proxy (CPU ms per request)":
      both(join, grafbase) && join!.cpuMsPerRequest && cpuWithoutProxy(grafbaseRow) ? ratio(join!.cpuMsPerRequest, cpuWithoutProxy(grafbaseRow)!) : null,
    "join router / Grafbase with the signing proxy (CPU ms per request)": both(join, grafbase) ? cpuRatio(join!, grafbase!) : null,
    "join router persisted id / document (CPU ms per request)": both(persisted, join) ? cpuRatio(persisted!, join!) : null,
  } as Record<string, number | null>;
  // Cost growth: every larger scale against the first, read and join through the router.
  for (const scale of scales.filter((s) => s !== base)) {
    for (const [scenario, first] of [
      ["read", router],
      ["join", join],
    ] as const) {
      const grown = find(rows, scenario, "router", scale);
      ratios[`${scenario} router p99 ${scale}x / ${base}x`] = both(grown, first) ? ratio(grown!.p99, first!.p99) : null;
      ratios[`${scenario} router req/s ${scale}x / ${base}x`] = both(grown, first) ? ratio(grown!.rps, first!.rps) : null;
    }
  }
  const show = (value: number | null, suffix = "x") => (value === null ? "not measured" : `${value}${suffix}`);
  const targets: Target[] = [];
  const r1 = ratios["read router / direct subgraph (req/s)"];
  const c1 = ratios["read router / direct subgraph (CPU ms per request)"];
  targets.push({
    name: "read: router vs direct subgraph",
    target: "≥ 0.6x req/s",
    measured: `${show(r1)}${c1 ? ` (CPU per request ${c1}x the direct one's)` : ""}`,
    met: r1 === null ? null : r1 >= 0.6,
  });
  const r2 = ratios["read REST shim / router (req/s)"];
  targets.push({ name: "read: REST shim vs router", target: "≥ 0.9x req/s", measured: show(r2), met: r2 === null ? null : r2 >= 0.9 });
  const r3 = ratios["join router / Apollo Gateway (req/s)"];
  const r3p = ratios["join router / Apollo Gateway (p99)"];
  targets.push({
    name: "join: router vs Apollo Gateway",
    target: "≥ 2.5x req/s, lower p99",
    measured:
      r3 === null
        ? "not measured"
        : `${r3}x req/s, p99 ${join!.p99} vs ${apollo!.p99} ms${ratios["join router / Apollo Gateway (CPU ms per request)"] ? ` (CPU per join ${ratios["join router / Apollo Gateway (CPU ms per request)"]}x Apollo's)` : ""}`,
    met: r3 === null || r3p === null ? null : r3 >= 2.5 && r3p < 1,
  });
  // Issue 25: the dashboard's CPU per request, whole stack against whole stack, in the same run.
  const badAnswers = (r: LoadResult | null) => (r ? r.non2xx + r.errors + r.mismatches : null);
  const joinBad = badAnswers(join);
  const c25a = ratios["join router / Apollo Gateway (CPU ms per request)"] ?? null;
  targets.push({
    name: "join CPU: router vs Apollo Gateway stack (issue 25)",
    target: "≤ 0.35x CPU per request, 0 bad answers",
    measured: c25a === null ? "not measured" : `${c25a}x (${join!.cpuMsPerRequest} vs ${apollo!.cpuMsPerRequest} ms), ${joinBad} bad answers`,
    met: c25a === null ? null : c25a <= 0.35 && joinBad === 0,
  });
  const c25g = ratios["join router / Grafbase without the signing proxy (CPU ms per request)"] ?? null;
  const c25gp = ratios["join router / Grafbase with the signing proxy (CPU ms per request)"] ?? null;
  targets.push({
    name: "join CPU: router vs Grafbase stack (issue 25)",
    target: "≤ 0.6x CPU per request (Grafbase + subgraphs, signing proxy left out), 0 bad answers",
    measured:
      c25g === null
        ? "not measured"
        : `${c25g}x (${join!.cpuMsPerRequest} vs ${cpuWithoutProxy(grafbaseRow)} ms; ${c25gp}x with the proxy's ${grafbaseRow?.cpuByRole?.[SIGNING_PROXY] ?? 0} ms), ${joinBad} bad answers`,
    met: c25g === null ? null : c25g <= 0.6 && joinBad === 0,
  });
  const c25h = ratios["join router / Hive Gateway (CPU ms per request)"] ?? null;
  targets.push({
    name: "join CPU: router vs Hive Gateway (Rust planner) stack",
    target: "shown (no target)",
    measured: c25h === null ? "not measured" : `${c25h}x (${join!.cpuMsPerRequest} vs ${hive!.cpuMsPerRequest} ms)`,
    met: null,
  });
  const c25p = ratios["join router persisted id / document (CPU ms per request)"] ?? null;
  targets.push({
    name: "join CPU: persisted document id vs full document, through the router",
    target: "shown (what persisted documents save)",
    measured: c25p === null ? "not measured" : `${c25p}x (${persisted!.cpuMsPerRequest} vs ${join!.cpuMsPerRequest} ms)`,
    met: null,
  });
  if (write) {
    const perSecond = write.load.rps;
    targets.push({
      name: `write: accepted submissions (${write.database})`,
      target: "≥ 1,000/s on SQLite, verify clean",
      measured: `${perSecond}/s, verify exit ${write.verifyExit}, ledger ${write.ledgerExact ? "exact" : "NOT exact"}`,
      met: write.database !== "sqlite" ? null : !write.failed && perSecond >= 1000 && write.verifyExit === 0 && write.ledgerExact,
    });
  } else {
    targets.push({ name: "write: accepted submissions", target: "≥ 1,000/s on SQLite, verify clean", measured: "not measured", met: null });
  }
  if (live) {
    targets.push({
      name: `live: ${live.subscribers} subscribers, delivery p99`,
      target: "< 100 ms",
      measured: `${live.delivery.p99} ms${live.failed ? " (FAILED: see live row)" : ""}`,
      met: live.failed ? false : live.delivery.p99 < 100,
    });
    const kb = live.rss.kbPerSubscriber;
    targets.push({
      name: "live: router RSS per subscriber",
      target: "< 30 KB",
      measured: kb === null ? "not measurable (RSS fell: a GC outweighed the subscribers)" : `${kb} KB`,
      met: kb === null ? null : live.failed ? false : kb < 30,
    });
  } else {
    targets.push({ name: "live: delivery p99 / RSS per subscriber", target: "< 100 ms / < 30 KB", measured: "not measured", met: null });
  }
  // The target spans 1x → 100x (issue 15); larger scales are shown, to see where cost bends.
  for (const scale of scales.filter((s) => s !== base && (s >= 100 || s === top))) {
    const g = (name: string) => ratios[`${name} ${scale}x / ${base}x`] ?? null;
    const [readP99, joinP99, readRps, joinRps] = [g("read router p99"), g("join router p99"), g("read router req/s"), g("join router req/s")];
    const measured =
      readP99 === null && joinP99 === null
        ? "not measured"
        : `p99 read ${show(readP99)}, join ${show(joinP99)}; req/s read ${show(readRps)}, join ${show(joinRps)}`;
    const all = [readP99, joinP99, readRps, joinRps];
    const targeted = scale <= 100;
    targets.push({
      name: `cost growth: read and join ${base}x → ${scale}x`,
      target: targeted ? "p99 within 1.2x, req/s ≥ 0.85x" : "shown (no target)",
      measured,
      met: !targeted || all.some((v) => v === null) ? null : readP99! <= 1.2 && joinP99! <= 1.2 && readRps! >= 0.85 && joinRps! >= 0.85,
    });
  }
  return { ratios, targets };
}

/** Ratio of two rows' server CPU per request, or null when either was not measured. */
function cpuRatio(a: LoadResult, b: LoadResult): number | null {
  return a.cpuMsPerRequest && b.cpuMsPerRequest ? ratio(a.cpuMsPerRequest, b.cpuMsPerRequest) : null;
}

/** Why a load row failed, in words. */
function failureText(r: LoadResult): string {
  if (r.non2xx + r.errors + r.mismatches === 0) return `no correct answer within ${r.seconds} s`;
  return `${r.non2xx} non-2xx, ${r.errors} errors, ${r.mismatches} bad bodies`;
}

/** A multi-process row's CPU by process, e.g. ` (Grafbase 0.61, signing proxy 0.4, Switchyard 4.1)`. */
const split = (row: Row) =>
  row.cpuByRole
    ? ` (${Object.entries(row.cpuByRole)
        .map(([role, ms]) => `${role} ${ms}`)
        .join(", ")})`
    : "";

const fmt = (n: number | null | undefined) => (n === undefined || Number.isNaN(n) ? "-" : String(n));
const mark = (met: boolean | null) => (met === null ? "–" : met ? "met" : "**missed**");

/** Renders the markdown tables of a results document (what is printed and kept in the README). */
export function renderTables(results: Results): string {
  const env = results.environment;
  const lines: string[] = [];
  lines.push(
    `Run ${results.date} · ${env.cpu} × ${env.cores} cores · node ${env.node} · ${env.database} · topology ${env.topology} · ` +
      `${env.connections} connections, ${env.durationSeconds} s per row after ${env.warmupSeconds} s warm-up · commit ${String(env.commit).slice(0, 10)} · ` +
      `wall ${results.wallSeconds} s · load average ${(env.loadAverage as { start: number; end: number }).start} → ${(env.loadAverage as { start: number; end: number }).end}`,
  );
  lines.push("");
  lines.push("| scenario | variant | processes | data | req/s | p50 ms | p99 ms | max ms | server CPU ms / request | failures |");
  lines.push("|---|---|---|---|---:|---:|---:|---:|---:|---|");
  for (const row of results.rows) {
    const r = row.result;
    const data = results.data[`${row.scale}x`];
    const dataText = data ? `${row.scale}x (${data.tasks} tasks, ${data.orders} orders)` : `${row.scale}x`;
    const failures = !r ? `**${row.note ?? "not run"}**` : r.failed ? `**${failureText(r)}**` : "0";
    lines.push(
      `| ${row.scenario} | ${row.variant} | ${row.processes ?? "–"} | ${dataText} | ${fmt(r?.rps)} | ${fmt(r?.p50)} | ${fmt(r?.p99)} | ${fmt(r?.max)} | ${r?.cpuMsPerRequest ?? "–"}${split(row)} | ${failures} |`,
    );
  }
  const w = results.write;
  if (w) {
    const failures = w.failed ? `**${w.load.failed ? failureText(w.load) : "money check failed (below)"}**` : "0";
    lines.push(
      `| write | REST submit (${w.database}) | ${w.processes ?? "–"} | empty | ${fmt(w.load.rps)} | ${fmt(w.load.p50)} | ${fmt(w.load.p99)} | ${fmt(w.load.max)} | ${w.load.cpuMsPerRequest ?? "–"} | ${failures} |`,
    );
  }
  lines.push("");
  if (w) {
    lines.push(
      `Write check: ${w.accepted} submissions accepted (client-seen 2xx, warm-up included), ${w.tasksInDb} tasks in the database, ` +
        `price ${w.price} each; balance ${w.balance} = ${w.initialBalance} − spent ${w.spent}: ${w.ledgerExact ? "exact" : "**NOT exact**"}; ` +
        `\`switchyard verify\` exit ${w.verifyExit}.`,
    );
    lines.push("");
  }
  const l = results.live;
  if (l) {
    lines.push(
      "| live | subscribed | tasks | deliveries | lost | delivery p50 / p99 / max ms | submit → first event p50 / p99 ms | router RSS before → subscribed → after | KB / subscriber |",
    );
    lines.push("|---|---:|---:|---:|---:|---|---|---|---:|");
    const rss = (kb: number) => `${Math.round(kb / 1024)} MB`;
    lines.push(
      `| ${l.failed ? "**FAILED** " : ""}graphql-ws \`tasks\` | ${l.subscribed}/${l.subscribers} | ${l.tasks} (${l.submitErrors} refused) | ${l.delivered} (${l.deliveriesPerSecond}/s) | ${l.missed + l.duplicates + l.brokenSockets + l.unfinished} | ` +
        `${l.delivery.p50} / ${l.delivery.p99} / ${l.delivery.max} | ${l.submitToFirstEvent.p50} / ${l.submitToFirstEvent.p99} | ` +
        `${rss(l.rss.beforeKb)} → ${rss(l.rss.subscribedKb)} → ${rss(l.rss.afterKb)} | ${fmt(l.rss.kbPerSubscriber)} |`,
    );
    lines.push("");
  }
  lines.push("| target | wanted | measured | |");
  lines.push("|---|---|---|---|");
  for (const t of results.targets) lines.push(`| ${t.name} | ${t.target} | ${t.measured} | ${mark(t.met)} |`);
  return lines.join("\n");
}

const START = "<!-- results:start -->";
const END = "<!-- results:end -->";

/**
 * Replaces the text between the results markers of a README with `tables`.
 * @throws Error when the markers are missing (the README is not rewritten blindly)
 */
export function replaceResults(readmePath: string, tables: string): void {
  const text = fs.readFileSync(readmePath, "utf8");
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${readmePath} has no ${START} … ${END} markers`);
  fs.writeFileSync(readmePath, `${text.slice(0, start + START.length)}\n${tables}\n${text.slice(end)}`);
}
