/**
 * Runs the real `bin/switchyard` CLI as a child process for end-to-end tests.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Path of the CLI. */
export const CLI = fileURLToPath(new URL("../../bin/switchyard", import.meta.url));

/**
 * Runs a CLI command to completion.
 * @param options `input`: written to its stdin, which is then closed (default: no stdin)
 * @returns exit code, stdout and stderr
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  options: { input?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(CLI, args, { env: { ...process.env, LOG_LEVEL: "warn", ...env }, stdio: ["pipe", "pipe", "pipe"] });
    // No input: stdin closed at once, as a command run with </dev/null.
    child.stdin.end(options.input ?? "");
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** A long-running CLI process and what it printed so far. */
export interface RunningProcess {
  child: ChildProcess;
  /** stdout and stderr so far, interleaved as they arrived. */
  output(): string;
  /** stdout alone so far. */
  stdout(): string;
  /** stderr alone so far. */
  stderr(): string;
  /** Resolves with the first match of `pattern` in the output (rejects when the process exits first). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts a long-running CLI command (for example `start`). */
export function startCli(args: string[], env: Record<string, string>): RunningProcess {
  const child = spawn(CLI, args, { env: { ...process.env, LOG_LEVEL: "warn", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let stdout = "";
  let stderr = "";
  const listeners = new Set<() => void>();
  child.stdout!.on("data", (d) => {
    out += d;
    stdout += d;
    for (const l of listeners) l();
  });
  child.stderr!.on("data", (d) => {
    out += d;
    stderr += d;
    for (const l of listeners) l();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    output: () => out,
    stdout: () => stdout,
    stderr: () => stderr,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = out.match(pattern);
          if (match) {
            cleanup();
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern}; output:\n${out}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        exited.then((code) => {
          if (listeners.has(check)) {
            cleanup();
            reject(new Error(`process exited (${code}) before ${pattern}; output:\n${out}`));
          }
        });
        check();
      });
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
