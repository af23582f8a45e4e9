/**
 * test/support/events.ts: the waits the other tests rely on resolve on the event they name, and
 * fail (instead of hanging) when it never comes.
 */
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { createInProcessPubSub } from "../../src/events/pubsub.ts";
import { outboxEvent, waitForEvent, waitForState } from "../support/events.ts";

describe("waitForEvent", () => {
  it("resolves with the first event the match accepts, skipping the others", async () => {
    const pubsub = createInProcessPubSub();
    const seen = waitForEvent(pubsub, "account:a", outboxEvent("task.status_changed", "t2"));
    await pubsub.publish("account:a", { topic: "task.status_changed", aggregateId: "t1" });
    await pubsub.publish("account:a", { topic: "task.status_changed", aggregateId: "t2", payload: { status: 1 } });
    expect(await seen).toMatchObject({ aggregateId: "t2", payload: { status: 1 } });
  });

  it("waits on an emitter's event name and stops listening once it resolves", async () => {
    const emitter = new EventEmitter();
    const seen = waitForEvent<number>(emitter, "tick", (n) => n > 1);
    emitter.emit("tick", 1);
    emitter.emit("tick", 2);
    expect(await seen).toBe(2);
    expect(emitter.listenerCount("tick")).toBe(0);
  });

  it("fails naming the topic and what it saw when no event matches", async () => {
    const emitter = new EventEmitter();
    const seen = waitForEvent(emitter, "tick", () => false, 50);
    emitter.emit("tick", { n: 1 });
    await expect(seen).rejects.toThrow(/no matching "tick" event in 50 ms; last seen: \{"n":1\}/);
    expect(emitter.listenerCount("tick")).toBe(0);
  });
});

describe("waitForState", () => {
  it("reads again after each event until the state is reached", async () => {
    const emitter = new EventEmitter();
    let state = 0;
    let reads = 0;
    const reached = waitForState(
      emitter,
      "changed",
      async () => {
        reads += 1;
        return state;
      },
      (value) => value === 2,
    );
    for (const next of [1, 2]) {
      await new Promise((resolve) => setImmediate(resolve));
      state = next;
      emitter.emit("changed");
    }
    expect(await reached).toBe(2);
    expect(reads).toBe(3);
  });

  it("returns at once when the state is already reached, and fails with the last value when no event brings it", async () => {
    const emitter = new EventEmitter();
    expect(
      await waitForState(
        emitter,
        "changed",
        async () => "done",
        (v) => v === "done",
      ),
    ).toBe("done");
    await expect(
      waitForState(
        emitter,
        "changed",
        async () => "pending",
        (v) => v === "done",
        50,
      ),
    ).rejects.toThrow(/last value: "pending"/);
    expect(emitter.listenerCount("changed")).toBe(0);
  });
});
