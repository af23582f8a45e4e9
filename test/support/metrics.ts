/**
 * Reading `/metrics` in tests: the Prometheus text format parsed into samples, and Prometheus's
 * own tools (Debian's `prometheus` package: `promtool`, `prometheus`), which the tests need and
 * do not skip without: a missing tool fails them, naming the package.
 */
import { spawnSync } from "node:child_process";

/** One sample of the exposition: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (comments skipped, label values unescaped). */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, raw] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[name!] = raw!.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the sample with exactly these labels (0 when absent: a counter not yet incremented). */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels);
  const found = samples.find((s) => s.name === name && Object.keys(s.labels).length === wanted.length && wanted.every(([k, v]) => s.labels[k] === v));
  return found?.value ?? 0;
}

/**
 * The path of a tool of Debian's `prometheus` package.
 * @param name `promtool` or `prometheus`
 * @throws Error naming the package when the tool is not on PATH (.ci/run installs it)
 */
export function prometheusTool(name: "promtool" | "prometheus"): string {
  const found = spawnSync(name, ["--version"], { encoding: "utf8" });
  if (found.error || found.status !== 0) {
    throw new Error(`${name} is not installed: the metrics checks need Debian's prometheus package (apt-get install prometheus; .ci/run installs it)`);
  }
  return name;
}

/**
 * Runs promtool.
 * @param args for example `["check", "metrics"]`
 * @param input what it reads on stdin
 * @returns its exit status and everything it printed (stdout and stderr)
 */
export function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const run = spawnSync(prometheusTool("promtool"), args, { input, encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}`.trim() };
}
