/**
 * The dispatcher's background loop (docs/architecture.md §6): rounds never overlap; a round that
 * found a full batch, or was asked for during a round ({@link RoundLoop.wake}), is followed at
 * once by the next; errors are logged and retried next round, never thrown by the loop.
 */
import type { Logger } from "pino";

/** Settings of {@link startRoundLoop}; times in milliseconds. */
export interface RoundLoopOptions<T> {
  /** Pause between rounds; 0 or less runs no background loop (only {@link RoundLoop.run}). */
  intervalMs: number;
  logger: Logger;
  /** One round: what it did, and whether a batch was full (more work waits). */
  round: () => Promise<{ result: T; full: boolean }>;
  /** Called when a background round starts and ends (the readiness heartbeat). */
  beat: () => void;
}

/** A running loop. */
export interface RoundLoop<T> {
  /** Runs one round now (beside the background loop); `stop` waits for it too. */
  run(): Promise<T>;
  /** Asks for a background round as soon as possible (after the running one). */
  wake(): void;
  /** Stops the background loop and waits for every round in progress. */
  stop(): Promise<void>;
  /** Whether {@link RoundLoop.stop} was called. */
  stopped(): boolean;
}

/**
 * Starts the loop: the first background round after min(intervalMs, 50) ms.
 * @param options interval, logger, the round, the heartbeat
 * @returns run, wake, stop
 */
export function startRoundLoop<T>(options: RoundLoopOptions<T>): RoundLoop<T> {
  const { intervalMs, logger } = options;
  const inFlight = new Set<Promise<unknown>>();
  let lastFull = false;
  let stopped = false;
  let looping = false;
  let wakeRequested = false;
  let timer: NodeJS.Timeout | undefined;

  function run(): Promise<T> {
    const promise = options.round().then(({ result, full }) => {
      lastFull = full;
      return result;
    });
    inFlight.add(promise);
    const forget = () => inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  function schedule(delay: number): void {
    if (stopped || intervalMs <= 0 || looping) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(tick, delay);
    timer.unref?.();
  }

  async function tick(): Promise<void> {
    timer = undefined;
    if (stopped) return;
    looping = true;
    wakeRequested = false;
    options.beat();
    try {
      await run();
    } catch (error) {
      logger.error({ err: error }, "dispatcher round failed");
      lastFull = false;
    } finally {
      looping = false;
      options.beat();
    }
    schedule(lastFull || wakeRequested ? 0 : intervalMs);
  }

  schedule(Math.min(Math.max(intervalMs, 0), 50));

  return {
    run,
    wake() {
      if (looping) wakeRequested = true;
      else schedule(0);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    stopped: () => stopped,
  };
}
