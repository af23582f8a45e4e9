/**
 * Background loops for worker steps (provisioning, usage alerts, statement exports, channel
 * probes, the recovery sweep): one step at a time, never overlapping, errors reported and retried
 * at the next tick.
 */
import type { Logger } from "pino";

/** A running loop. */
export interface Loop {
  /** Stops scheduling and waits for the running step. */
  stop(): Promise<void>;
}

/** Settings of {@link startPacedLoop}; times in milliseconds. */
export interface PacedLoopOptions {
  /** Delay before the first step. */
  firstDelayMs: number;
  /** The longest pause between two steps; also the pause after a step that failed. */
  maxDelayMs: number;
  /** Reports a step that threw (the loop goes on). */
  onError: (error: unknown) => void;
}

/** A running loop that can be asked for a step now. */
export interface PacedLoop extends Loop {
  /** Asks for a step as soon as possible: at once when idle, else right after the running one. */
  wake(): void;
}

/**
 * Runs `step` after `firstDelayMs`, then again after the delay each step returns (at most
 * `maxDelayMs`; after a failure, `maxDelayMs`; at once when woken meanwhile). Steps never overlap.
 * @param step does the work; returns milliseconds until the next step
 * @param options first delay, longest delay, error report
 * @returns the loop, to wake and to stop
 */
export function startPacedLoop(step: () => Promise<number>, options: PacedLoopOptions): PacedLoop {
  let stopped = false;
  let running = false;
  let wakeRequested = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  const schedule = (delay: number) => {
    if (stopped || running) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(tick, delay);
    timer.unref?.();
  };
  const tick = () => {
    timer = undefined;
    if (stopped) return;
    running = true;
    wakeRequested = false;
    current = step()
      .then(
        (next) => Math.min(next, options.maxDelayMs),
        (error) => {
          options.onError(error);
          return options.maxDelayMs;
        },
      )
      .then((next) => {
        running = false;
        schedule(wakeRequested ? 0 : next);
      });
  };
  schedule(options.firstDelayMs);
  return {
    wake() {
      if (running) wakeRequested = true;
      else schedule(0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await current.catch(() => undefined);
    },
  };
}

/**
 * Runs `step` every `intervalMs` milliseconds (the first after min(intervalMs, 50)).
 * @param name for logs
 * @param step returns how much work it did; a step that did some runs again at once
 * @returns the loop, to stop
 */
export function startLoop(name: string, intervalMs: number, step: () => Promise<number | unknown>, logger: Logger): Loop {
  return startPacedLoop(
    async () => {
      const done = await step();
      return typeof done === "number" && done > 0 ? 0 : intervalMs;
    },
    {
      firstDelayMs: Math.min(intervalMs, 50),
      maxDelayMs: intervalMs,
      onError: (err) => logger.error({ err, loop: name }, "worker step failed"),
    },
  );
}
