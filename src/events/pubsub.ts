/**
 * Pub/sub (docs/architecture.md §2 pub/sub, §6 events): the dispatcher publishes every outbox row to the topic
 * of its account, `account:<accountId>`, and GraphQL subscriptions listen there and filter by
 * task, order or key. In-process here (one `EventEmitter`); the Redis implementation of the same
 * interface (`redis-pubsub.ts`) takes over when `REDIS_URL` is set, so events reach every instance.
 */
import { EventEmitter } from "node:events";

/** A publish/subscribe channel between the dispatcher and subscription resolvers. */
export interface PubSub {
  /**
   * Publishes an event to every current subscriber of a topic.
   * @param topic e.g. {@link accountTopic}(accountId)
   * @param event a JSON-serialisable value (a Redis implementation sends it as JSON)
   * @returns once handed over; handlers' own work is not awaited
   */
  publish(topic: string, event: unknown): Promise<void>;
  /**
   * Subscribes to a topic.
   * @param handler called for each event; an exception it throws is logged to stderr, not propagated
   * @returns a function that unsubscribes (idempotent)
   */
  subscribe(topic: string, handler: (event: unknown) => void): () => void;
  /**
   * Resolves once the subscriptions to a topic made so far receive events (for Redis: the
   * SUBSCRIBE was acknowledged; in-process: at once). A subscriber that reads a current state
   * after subscribing waits for this first, so no event between the two is missed.
   */
  whenSubscribed?(topic: string): Promise<void>;
}

/**
 * An outbox row as published on `account:<accountId>` (docs/architecture.md §6). `payload` is the row's JSON
 * payload, parsed; `createdAt` is ISO 8601 (the time of the state change).
 */
export interface OutboxMessage {
  /** The outbox row id (increasing). */
  id: number;
  /** e.g. `task.status_changed`, `order.paid`. */
  topic: string;
  accountId: string;
  /** The task or order id. */
  aggregateId: string;
  payload: Record<string, unknown>;
  createdAt: string;
  /** The key that caused the event (tasks are visible only to it), when known. */
  keyId: string | null;
  /** The request that caused the event, when known. */
  requestId: string | null;
}

/**
 * The pub/sub topic of an account's events.
 * @returns `account:<accountId>`
 */
export function accountTopic(accountId: string): string {
  return `account:${accountId}`;
}

/**
 * Creates the in-process pub/sub: one EventEmitter without a listener limit (every open
 * subscription is a listener, so there is no meaningful maximum and no warning).
 * Handlers run synchronously inside `publish`, in subscription order; one handler's exception
 * does not stop the others.
 * @returns a {@link PubSub}
 */
export function createInProcessPubSub(): PubSub {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    async publish(topic, event) {
      emitter.emit(topic, event);
    },
    subscribe(topic, handler) {
      const listener = (event: unknown) => {
        try {
          handler(event);
        } catch (error) {
          console.error(`pubsub handler for ${topic} threw`, error);
        }
      };
      emitter.on(topic, listener);
      let active = true;
      return () => {
        if (!active) return;
        active = false;
        emitter.off(topic, listener);
      };
    },
  };
}

/** A subscription as an async iterator that can be closed. */
export interface EventStream<T> extends AsyncIterableIterator<T> {
  /** Unsubscribes and ends the iteration. */
  close(): void;
  /** Settles when the subscription receives events ({@link PubSub.whenSubscribed}); never rejects. */
  ready: Promise<void>;
}

/**
 * Subscribes to a topic and returns the matching events as an async iterator. Subscribes at once,
 * so events published after this call are buffered until read (no event is missed between
 * subscribing and reading a current state).
 * @param filter keeps only the events it returns true for
 * @returns an {@link EventStream}; `close()` (or `return()`) unsubscribes
 */
export function eventStream<T = OutboxMessage>(pubsub: PubSub, topic: string, filter: (event: T) => boolean): EventStream<T> {
  const buffer: T[] = [];
  let waiting: ((result: IteratorResult<T>) => void) | null = null;
  let closed = false;
  const unsubscribe = pubsub.subscribe(topic, (raw) => {
    const event = raw as T;
    if (closed || !filter(event)) return;
    if (waiting) {
      const resolve = waiting;
      waiting = null;
      resolve({ value: event, done: false });
    } else buffer.push(event);
  });
  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    buffer.length = 0;
    if (waiting) {
      const resolve = waiting;
      waiting = null;
      resolve({ value: undefined as never, done: true });
    }
  };
  return {
    close,
    ready: pubsub.whenSubscribed?.(topic).catch(() => undefined) ?? Promise.resolve(),
    next() {
      if (buffer.length) return Promise.resolve({ value: buffer.shift()!, done: false });
      if (closed) return Promise.resolve({ value: undefined as never, done: true });
      return new Promise((resolve) => (waiting = resolve));
    },
    return() {
      close();
      return Promise.resolve({ value: undefined as never, done: true });
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
