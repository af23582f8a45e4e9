/**
 * A background loop for worker steps (provisioning, usage alerts, statement exports, callbacks):
 * one step at a time, never overlapping, errors logged and retried at the next tick.
 */
import type { Logger } from "pino";

/** A running loop. */
export interface Loop {
  /** Stops scheduling and waits for the running step. */
  stop(): Promise<void>;
}

/**
 * Runs `step` every `intervalMs` milliseconds.
 * @param name for logs
 * @param step returns how much work it did; a step that did some runs again at once
 */
export function startLoop(name: string, intervalMs: number, step: () => Promise<number | unknown>, logger: Logger): Loop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = step()
        .then((done) => schedule(typeof done === "number" && done > 0 ? 0 : intervalMs))
        .catch((err) => {
          logger.error({ err, loop: name }, "worker step failed");
          schedule(intervalMs);
        });
    }, delay);
    timer.unref?.();
  };
  schedule(Math.min(intervalMs, 50));
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running.catch(() => undefined);
    },
  };
}
