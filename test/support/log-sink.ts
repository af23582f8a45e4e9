/**
 * A pino destination for tests: the lines a stack logs, and a way to wait for one
 * (`createLogger(config, sink.stream)`, bin/stack.ts).
 */
import { Writable } from "node:stream";

/** A pino destination whose lines a test can wait for. */
export function lineSink() {
  const lines: string[] = [];
  const waiting = new Set<() => void>();
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      for (const check of waiting) check();
      done();
    },
  });
  /**
   * Resolves with the first line (parsed by `parse`) that `match` accepts, now or when it is
   * written; rejects with the lines seen after `timeoutMs`.
   */
  function waitFor<T>(parse: (line: string) => T | null, match: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.delete(check);
        reject(new Error(`no matching log line in ${timeoutMs} ms; lines:\n${lines.join("\n")}`));
      }, timeoutMs);
      const check = () => {
        for (const line of lines) {
          const value = parse(line);
          if (value !== null && match(value)) {
            waiting.delete(check);
            clearTimeout(timer);
            return resolve(value);
          }
        }
      };
      waiting.add(check);
      check();
    });
  }
  return { stream, lines, waitFor };
}

/** A JSON log line parsed, or null for a line that is not JSON. */
export const json = (line: string): Record<string, any> | null => {
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
};
