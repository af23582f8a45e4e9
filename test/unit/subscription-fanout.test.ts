/**
 * The router's shared subscriptions (router/subscription-fanout.ts): which operations may share,
 * and one upstream stream per share key whose events reach every client from when it joined.
 */
import { describe, expect, it } from "vitest";
import { createFanOut, shareKeyOf } from "../../router/subscription-fanout.ts";

const FACTS = { authorization: "Bearer sy_a", clientIp: "10.0.0.1", locale: "en" };

/**
 * Upstream streams the test pushes events into, ending at once on `return()` as the gateway's
 * do; counts how often one was started and ended.
 */
function upstreams() {
  const state = { started: 0, ended: 0, push: (_value: unknown) => {}, finish: () => {} };
  const run = () => {
    state.started++;
    const queue: unknown[] = [];
    let waiting: ((step: IteratorResult<unknown>) => void) | null = null;
    let done = false;
    const settle = (step: IteratorResult<unknown>) => {
      const resolve = waiting;
      waiting = null;
      resolve?.(step);
    };
    state.push = (value) => (waiting ? settle({ value, done: false }) : queue.push(value));
    state.finish = () => {
      done = true;
      if (!queue.length) settle({ value: undefined, done: true });
    };
    const stream: AsyncIterableIterator<unknown> = {
      next: () =>
        queue.length
          ? Promise.resolve({ value: queue.shift(), done: false })
          : done
            ? Promise.resolve({ value: undefined, done: true })
            : new Promise((resolve) => (waiting = resolve)),
      return: () => {
        state.ended++;
        done = true;
        settle({ value: undefined, done: true });
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]: () => stream,
    };
    return stream;
  };
  return { state, run };
}

const take = async (stream: unknown) => (stream as AsyncIterator<unknown>).next();

describe("shareKeyOf", () => {
  it("shares `tasks` and `orderEvents` subscriptions, never `taskStatusChanged` (its first event is the current state), a query, or an operation it cannot parse", () => {
    expect(shareKeyOf({ query: "subscription { tasks { id } }" }, FACTS)).not.toBeNull();
    expect(shareKeyOf({ query: "subscription Orders($o: ID) { orderEvents(orderId: $o) { event } }", variables: { o: "1" } }, FACTS)).toMatchObject({
      operationName: "Orders",
    });
    expect(shareKeyOf({ query: 'subscription { taskStatusChanged(taskId: "t") { id } }' }, FACTS)).toBeNull();
    expect(shareKeyOf({ query: 'subscription { tasks { id } taskStatusChanged(taskId: "t") { id } }' }, FACTS)).toBeNull();
    expect(shareKeyOf({ query: "query { tasks { totalCount } }" }, FACTS)).toBeNull();
    expect(shareKeyOf({ query: "subscription { tasks { ...F } } fragment F on Task { id }" }, FACTS)).toBeNull();
    expect(shareKeyOf({ query: "subscription { tasks { id }" }, FACTS)).toBeNull();
    expect(shareKeyOf({ query: "subscription { tasks { id } }" }, { ...FACTS, authorization: undefined })).toBeNull();
  });

  it("gives the same key only to operations with the same key, address, locale, text and variables", () => {
    const base = { query: "subscription($o: ID) { orderEvents(orderId: $o) { event } }", variables: { o: "1" } };
    const key = shareKeyOf(base, FACTS)!.key;
    expect(shareKeyOf({ ...base }, { ...FACTS })!.key).toBe(key);
    expect(shareKeyOf(base, { ...FACTS, authorization: "Bearer sy_b" })!.key).not.toBe(key);
    expect(shareKeyOf(base, { ...FACTS, clientIp: "10.0.0.2" })!.key).not.toBe(key);
    expect(shareKeyOf(base, { ...FACTS, locale: "zh" })!.key).not.toBe(key);
    expect(shareKeyOf({ ...base, variables: { o: "2" } }, FACTS)!.key).not.toBe(key);
    expect(shareKeyOf({ ...base, query: base.query.replace("event", "event requestId") }, FACTS)!.key).not.toBe(key);
  });
});

describe("createFanOut", () => {
  const share = { key: "k", operationName: "" };

  it("runs one upstream stream for every client of a share key and gives each the events from when it joined", async () => {
    const { state, run } = upstreams();
    const fanOut = createFanOut();
    const first = await fanOut.subscribe(share, run);
    state.push(1);
    expect(await take(first)).toEqual({ value: 1, done: false });
    const second = await fanOut.subscribe(share, run);
    state.push(2);
    expect(await take(first)).toEqual({ value: 2, done: false });
    expect(await take(second)).toEqual({ value: 2, done: false });
    expect(state.started).toBe(1);
    expect(fanOut.size).toBe(1);
  });

  it("keeps the upstream stream while any client is left and ends it with the last one", async () => {
    const { state, run } = upstreams();
    const fanOut = createFanOut();
    const first = (await fanOut.subscribe(share, run)) as AsyncIterator<unknown>;
    const second = (await fanOut.subscribe(share, run)) as AsyncIterator<unknown>;
    await first.return!();
    state.push("after");
    expect(await second.next()).toEqual({ value: "after", done: false });
    await second.return!();
    await expect.poll(() => state.ended).toBe(1);
    expect(fanOut.size).toBe(0);
    // The next client starts a fresh upstream stream.
    await fanOut.subscribe(share, run);
    expect(state.started).toBe(2);
  });

  it("ends every client when the upstream stream ends, after the events already queued", async () => {
    const { state, run } = upstreams();
    const fanOut = createFanOut();
    const first = await fanOut.subscribe(share, run);
    const second = await fanOut.subscribe(share, run);
    state.push("last words");
    state.finish();
    for (const stream of [first, second]) {
      expect(await take(stream)).toEqual({ value: "last words", done: false });
      expect(await take(stream)).toEqual({ value: undefined, done: true });
    }
    expect(fanOut.size).toBe(0);
  });

  it("answers a refused operation to its client alone: the next one runs (and is checked) again", async () => {
    let runs = 0;
    const fanOut = createFanOut();
    const refused = { errors: [{ message: "Forbidden" }] };
    const start = () => {
      runs++;
      return refused;
    };
    expect(await fanOut.subscribe(share, start)).toBe(refused);
    expect(await fanOut.subscribe(share, start)).toBe(refused);
    expect(runs).toBe(2);
  });

  it("lets clients arriving while the first one starts wait for it instead of starting their own", async () => {
    const { state, run } = upstreams();
    const fanOut = createFanOut();
    let release!: () => void;
    const slow = () => new Promise((resolve) => (release = () => resolve(run())));
    const pending = [fanOut.subscribe(share, slow), fanOut.subscribe(share, slow), fanOut.subscribe(share, slow)];
    release();
    const streams = await Promise.all(pending);
    state.push("one");
    for (const stream of streams) expect(await take(stream)).toEqual({ value: "one", done: false });
    expect(state.started).toBe(1);
  });

  it("tells the observer of every client stream, and once when each ends", async () => {
    const { state, run } = upstreams();
    const seen: string[] = [];
    const fanOut = createFanOut((name, joined) => {
      seen.push(`open ${name} ${joined}`);
      return () => seen.push("end");
    });
    const first = (await fanOut.subscribe({ key: "k", operationName: "Watch" }, run)) as AsyncIterator<unknown>;
    const second = await fanOut.subscribe({ key: "k", operationName: "Watch" }, run);
    await first.return!();
    await first.return!();
    state.finish();
    expect(await take(second)).toEqual({ value: undefined, done: true });
    expect(seen).toEqual(["open Watch false", "open Watch true", "end", "end"]);
  });
});

describe("attaching a subscriber to a shared stream without running the operation", () => {
  const share = { key: "k", operationName: "Tasks" };
  /** A subscriber recording what it is told, as router/websocket.ts's sink. */
  const recorder = () => {
    const seen: unknown[] = [];
    const ends: ({ error: unknown } | null)[] = [];
    return {
      seen,
      ends,
      left: null as (() => void) | null,
      push: (v: unknown) => void seen.push(v),
      finish: (f: { error: unknown } | null) => void ends.push(f),
    };
  };

  it("attaches to a running stream, gives it the events from then on, and ends it with the upstream", async () => {
    const { state, run } = upstreams();
    const fanOut = createFanOut();
    const first = await fanOut.subscribe(share, run);
    const sink = recorder();
    expect(fanOut.attach(share, sink)).not.toBeNull();
    state.push(1);
    expect(await take(first)).toEqual({ value: 1, done: false });
    expect(sink.seen).toEqual([1]);
    state.finish();
    await expect.poll(() => sink.ends).toEqual([null]);
    expect(state.started).toBe(1);
  });

  it("attaches to nothing when no stream of the key runs, and waits for one that is starting", async () => {
    const { state, run } = upstreams();
    const fanOut = createFanOut();
    expect(fanOut.attach(share, recorder())).toBeNull();
    let release!: () => void;
    const starting = fanOut.subscribe(share, () => new Promise((resolve) => (release = () => resolve(run()))));
    const sink = recorder();
    const attached = fanOut.attach(share, sink);
    expect(attached).toBeInstanceOf(Promise);
    release();
    await starting;
    expect(await attached).not.toBeNull();
    state.push("first event");
    await expect.poll(() => sink.seen).toEqual(["first event"]);
  });

  it("attaches to nothing when the pending start is refused: the caller runs (and checks) its own", async () => {
    const fanOut = createFanOut();
    let refuse!: () => void;
    const starting = fanOut.subscribe(share, () => new Promise((resolve) => (refuse = () => resolve({ errors: [{ message: "Forbidden" }] }))));
    const attached = fanOut.attach(share, recorder());
    refuse();
    await starting;
    expect(await attached).toBeNull();
  });

  it("ends the upstream when the last attached subscriber leaves, and tells the observer once per subscriber", async () => {
    const { state, run } = upstreams();
    const ended: string[] = [];
    const fanOut = createFanOut((name, joined) => () => void ended.push(`${name}:${joined}`));
    const first = (await fanOut.subscribe(share, run)) as AsyncIterator<unknown>;
    const sink = recorder();
    const stream = fanOut.attach(share, sink) as { leave(s: unknown): void };
    await first.return!();
    expect(state.ended).toBe(0);
    sink.left?.();
    stream.leave(sink);
    stream.leave(sink); // twice: no effect
    await expect.poll(() => state.ended).toBe(1);
    expect(ended.sort()).toEqual(["Tasks:false", "Tasks:true"]);
    expect(fanOut.size).toBe(0);
  });
});
