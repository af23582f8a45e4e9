/**
 * The background loops (src/loop.ts) the dispatcher, the recovery sweep and the workers run on:
 * steps never overlap, a step asked for during another runs right after it, a failure is reported
 * and the loop goes on, and `stop` waits for the running step. Every wait is on a step's own
 * promise, never on a clock.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import { startLoop, startPacedLoop } from "../../src/loop.ts";

/** A promise and its resolver. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const HOUR = 60 * 60 * 1000;

describe("startPacedLoop", () => {
  it("runs a step asked for during another right after it, never two at once", async () => {
    const firstStarted = deferred();
    const releaseFirst = deferred();
    const secondRan = deferred();
    let running = 0;
    let overlapped = false;
    let steps = 0;
    const loop = startPacedLoop(
      async () => {
        running += 1;
        overlapped ||= running > 1;
        steps += 1;
        if (steps === 1) {
          firstStarted.resolve();
          await releaseFirst.promise;
        } else secondRan.resolve();
        running -= 1;
        return HOUR; // without the wake, the next step would wait an hour
      },
      { firstDelayMs: 0, maxDelayMs: HOUR, onError: () => undefined },
    );
    await firstStarted.promise;
    loop.wake();
    loop.wake();
    releaseFirst.resolve();
    await secondRan.promise;
    await loop.stop();
    expect(steps).toBe(2);
    expect(overlapped).toBe(false);
  });

  it("runs a step at once when woken while idle", async () => {
    const ran = [deferred(), deferred()];
    let steps = 0;
    const loop = startPacedLoop(
      async () => {
        ran[steps]?.resolve();
        steps += 1;
        return HOUR;
      },
      { firstDelayMs: 0, maxDelayMs: HOUR, onError: () => undefined },
    );
    await ran[0].promise;
    // The step's promise chain ends within this turn of the event loop: after it, the loop is idle.
    await new Promise((resolve) => setImmediate(resolve));
    loop.wake();
    await ran[1].promise;
    await loop.stop();
    expect(steps).toBe(2);
  });

  it("reports a step that throws and runs the next one after maxDelayMs", async () => {
    const reported = deferred<unknown>();
    const secondRan = deferred();
    let steps = 0;
    const loop = startPacedLoop(
      async () => {
        steps += 1;
        if (steps === 1) throw new Error("database unavailable");
        secondRan.resolve();
        return HOUR;
      },
      { firstDelayMs: 0, maxDelayMs: 1, onError: (error) => reported.resolve(error) },
    );
    expect(((await reported.promise) as Error).message).toBe("database unavailable");
    await secondRan.promise;
    await loop.stop();
    expect(steps).toBe(2);
  });

  it("waits in stop for the running step", async () => {
    const started = deferred();
    const release = deferred();
    let steps = 0;
    let finished = false;
    const loop = startPacedLoop(
      async () => {
        steps += 1;
        started.resolve();
        await release.promise;
        finished = true;
        return 0; // would run again at once
      },
      { firstDelayMs: 0, maxDelayMs: HOUR, onError: () => undefined },
    );
    await started.promise;
    const stopped = loop.stop();
    loop.wake();
    release.resolve();
    await stopped;
    expect(finished).toBe(true);
    expect(steps).toBe(1);
  });
});

describe("startLoop", () => {
  it("runs the step again at once after a step that did work, and logs a failing step with the loop's name", async () => {
    const logged = deferred<{ loop?: string; msg?: string }>();
    const logger = pino({ level: "error" }, { write: (line: string) => logged.resolve(JSON.parse(line)) });
    let steps = 0;
    const loop = startLoop(
      "exports",
      HOUR, // a second step an hour later would time the test out
      async () => {
        steps += 1;
        if (steps === 1) return 5; // did work: again at once
        throw new Error("disk full");
      },
      logger,
    );
    expect(await logged.promise).toMatchObject({ loop: "exports", msg: "worker step failed" });
    await loop.stop();
    expect(steps).toBe(2);
  });
});
