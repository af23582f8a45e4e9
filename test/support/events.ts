/**
 * Waiting on events instead of polling (issue 22 step 7; after graphql-ws's test servers, which
 * wait for `connect`, `operation` and `complete` events rather than looking every few ms).
 *
 * A test starts waiting *before* it acts (`const seen = waitForEvent(...); act(); await seen`),
 * so an event that comes at once is not missed. The timeout only turns a hang into a failure that
 * says what was seen: nothing is asserted about time.
 */
import type { EventEmitter } from "node:events";
import type { OutboxMessage, PubSub } from "../../src/events/pubsub.ts";

/** Where events come from: the stack's pub/sub (topics such as `account:<id>`) or a Node emitter (event names). */
export type EventSource = Pick<PubSub, "subscribe" | "whenSubscribed"> | EventEmitter;

/** The default wait before a test fails: long enough for a loaded CI machine. */
export const EVENT_TIMEOUT_MS = 10_000;

function isEmitter(source: EventSource): source is EventEmitter {
  return typeof (source as EventEmitter).on === "function" && typeof (source as EventEmitter).off === "function";
}

/**
 * Listens on a topic (pub/sub) or an event name (emitter).
 * @returns stops listening
 */
export function listen(source: EventSource, topic: string, handler: (event: unknown) => void): () => void {
  if (isEmitter(source)) {
    // An emitter may pass several arguments ('request' passes req and res): the first is the event.
    const onEvent = (event: unknown) => handler(event);
    source.on(topic, onEvent);
    return () => source.off(topic, onEvent);
  }
  return source.subscribe(topic, handler);
}

const describe = (event: unknown): string => {
  try {
    return JSON.stringify(event)?.slice(0, 300) ?? String(event);
  } catch {
    return String(event);
  }
};

/**
 * Resolves with the first event on `topic` that `match` accepts.
 * @param source the pub/sub or emitter
 * @param topic a pub/sub topic (`accountTopic(accountId)`) or an emitter's event name (`listening`, `request`)
 * @param match which event is awaited (default: any)
 * @param timeoutMs when to give up
 * @throws Error naming the topic and the last events seen, after `timeoutMs`
 */
export function waitForEvent<T = unknown>(
  source: EventSource,
  topic: string,
  match: (event: T) => boolean = () => true,
  timeoutMs = EVENT_TIMEOUT_MS,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const seen: unknown[] = [];
    const stop = listen(source, topic, (event) => {
      if (match(event as T)) {
        finish();
        resolve(event as T);
      } else if (seen.push(event) > 5) seen.shift();
    });
    const timer = setTimeout(() => {
      finish();
      reject(new Error(`no matching "${topic}" event in ${timeoutMs} ms; last seen: ${seen.map(describe).join(", ") || "none"}`));
    }, timeoutMs);
    function finish() {
      clearTimeout(timer);
      stop();
    }
  });
}

/**
 * Reads a state now and again after each event on `topic`, until `done` holds: for a state that
 * only a read shows (a REST answer, a row) but that changes only when an event says so.
 * @param probe reads the state (never two at once: an event during a read causes one more read)
 * @param done whether the state is reached
 * @returns the state that satisfied `done`
 * @throws Error with the last state read, after `timeoutMs`
 */
export async function waitForState<T>(
  source: EventSource,
  topic: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = EVENT_TIMEOUT_MS,
): Promise<T> {
  let wake: () => void = () => {};
  let pending = false;
  const stop = listen(source, topic, () => {
    pending = true;
    wake();
  });
  try {
    if (!isEmitter(source)) await source.whenSubscribed?.(topic);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      pending = false;
      const value = await probe();
      if (done(value)) return value;
      if (!pending) {
        const left = deadline - Date.now();
        const woken = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), Math.max(0, left));
          wake = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
        wake = () => {};
        if (!woken) {
          const last = await probe();
          if (done(last)) return last;
          throw new Error(`state not reached in ${timeoutMs} ms (no further "${topic}" event); last value: ${describe(last)}`);
        }
      }
    }
  } finally {
    stop();
  }
}

/**
 * Matches an outbox message (as published on `account:<accountId>`) by topic and aggregate.
 * @param topic the outbox topic (`task.status_changed`, `order.paid`, ...)
 * @param aggregateId the task or order id (any when omitted)
 */
export function outboxEvent(topic: string, aggregateId?: string): (event: OutboxMessage) => boolean {
  return (event) => event?.topic === topic && (aggregateId === undefined || event.aggregateId === aggregateId);
}
