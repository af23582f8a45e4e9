/**
 * Pub/sub across processes (docs/architecture.md §2 pub/sub; scale-out issue item 2): the {@link PubSub} of
 * `pubsub.ts` over Redis, so an event the dispatcher of one instance publishes reaches the
 * GraphQL subscriptions of every instance.
 *
 * Two connections per process: a command connection that publishes (and that the rate limiter
 * shares for its counters) and a subscriber connection (a connection in subscriber mode can run no
 * other command). A topic is SUBSCRIBEd when its first local handler arrives and UNSUBSCRIBEd when
 * its last one leaves; one Redis message is handed to every local handler of the topic. Payloads
 * are JSON. Order per topic is kept: one publisher connection sends PUBLISH commands in call order,
 * Redis delivers a channel's messages in that order, and the subscriber connection hands them to
 * handlers in that order. ioredis reconnects by itself and re-subscribes every channel after a
 * reconnect; events published while a subscriber connection is down are lost (Redis pub/sub keeps
 * nothing), which subscriptions survive because each one reads the current state when it starts.
 * Channel and key names start with `keyPrefix`, so several deployments or test runs can share
 * one Redis.
 */
import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
import { createInProcessPubSub, type PubSub } from "./pubsub.ts";

/** The default prefix of Redis channel and key names. */
export const DEFAULT_REDIS_KEY_PREFIX = "switchyard:";

/** A {@link PubSub} that holds resources. */
export interface ClosablePubSub extends PubSub {
  /**
   * Checks that the backing store answers (a PING for Redis, nothing in-process), so a wrong
   * `REDIS_URL` fails the start instead of every later publish.
   * @throws Error when Redis cannot be reached
   */
  connect(): Promise<void>;
  /** Closes the connections after their pending replies (idempotent). */
  close(): Promise<void>;
  /** The command connection when Redis backs this pub/sub (shared with the rate limiter); undefined in-process. */
  readonly redis?: Redis;
  /** The prefix of Redis channel and key names; undefined in-process. */
  readonly keyPrefix?: string;
}

/** A Redis-backed {@link ClosablePubSub}. */
export interface RedisPubSub extends ClosablePubSub {
  readonly redis: Redis;
  readonly keyPrefix: string;
  whenSubscribed(topic: string): Promise<void>;
}

/** Options of {@link createRedisPubSub}. */
export interface RedisPubSubOptions {
  /** Prefix of channel names (and, for users of {@link RedisPubSub.redis}, of key names); default `switchyard:`. */
  keyPrefix?: string;
  /** Where connection errors and bad messages are logged (default: stderr). */
  logger?: Pick<Logger, "warn" | "error">;
}

/**
 * Both connections connect lazily (a router-only process that never publishes or subscribes opens
 * none). The command connection gives up on a command after two reconnect attempts or five seconds,
 * so a Redis outage fails a publish (the dispatcher retries the outbox row) or a rate-limit check
 * quickly instead of holding a database transaction or a request; the subscriber connection waits
 * for Redis as long as it takes.
 */
const COMMAND_OPTIONS: RedisOptions = { lazyConnect: true, maxRetriesPerRequest: 2, commandTimeout: 5_000 };
const SUBSCRIBER_OPTIONS: RedisOptions = { lazyConnect: true, maxRetriesPerRequest: null, autoResubscribe: true };

/** Closes an ioredis connection: QUIT after pending replies (a plain disconnect if that takes over a second), resolved once it has ended. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === "end") return;
  if (client.status === "wait") {
    client.disconnect(); // never connected (lazy)
    return;
  }
  const ended = new Promise<void>((resolve) => client.once("end", () => resolve()));
  const within = (ms: number) => {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
  };
  client.quit().catch(() => client.disconnect());
  await within(1_000);
  if ((client.status as string) !== "end") {
    client.disconnect();
    await within(1_000);
  }
}

/** The connections and subscriptions of one Redis pub/sub (built by {@link createRedisPubSub}). */
export interface RedisPubSubState {
  /** The command connection: PUBLISH (and the rate limiter's counters). */
  publisher: Redis;
  /** The connection in subscriber mode. */
  subscriber: Redis;
  keyPrefix: string;
  log?: Pick<Logger, "warn" | "error">;
  /** Local handlers of each subscribed channel; `ready` settles when Redis acknowledged the SUBSCRIBE. */
  channels: Map<string, { handlers: Set<{ handler: (event: unknown) => void }>; ready: Promise<void> }>;
  /** Set once by {@link closeRedisPubSub}. */
  closed: boolean;
}

/**
 * The Redis channel of a topic.
 * @returns `<keyPrefix>events:<topic>`
 */
export function channelOf(state: Pick<RedisPubSubState, "keyPrefix">, topic: string): string {
  return `${state.keyPrefix}events:${topic}`;
}

/**
 * Hands one Redis message to every local handler of its channel, in order. A message that is not
 * JSON is logged and dropped; a handler that throws is logged and the others still run.
 * @param state the pub/sub
 * @param channel the Redis channel
 * @param text the message as sent (JSON)
 */
export function dispatchMessage(state: RedisPubSubState, channel: string, text: string): void {
  const entry = state.channels.get(channel);
  if (!entry) return; // unsubscribed meanwhile
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch (err) {
    if (state.log) state.log.error({ err, channel }, "pubsub message is not JSON; dropped");
    else console.error(`pubsub message on ${channel} is not JSON; dropped`, err);
    return;
  }
  for (const subscription of [...entry.handlers]) {
    try {
      subscription.handler(event);
    } catch (error) {
      console.error(`pubsub handler for ${channel} threw`, error);
    }
  }
}

/**
 * Checks that Redis answers (a PING on the command connection).
 * @throws Error `Redis (REDIS_URL) does not answer: ...` (the URL is not repeated: it may hold a password)
 */
export async function connectRedisPubSub(state: RedisPubSubState): Promise<void> {
  try {
    await state.publisher.ping();
  } catch (error) {
    throw new Error(`Redis (REDIS_URL) does not answer: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Publishes an event, as JSON, on the topic's channel.
 * @throws Error `pubsub is closed` after {@link closeRedisPubSub}; the command connection's error when Redis is down
 */
export async function publishRedis(state: RedisPubSubState, topic: string, event: unknown): Promise<void> {
  if (state.closed) throw new Error("pubsub is closed");
  await state.publisher.publish(channelOf(state, topic), JSON.stringify(event));
}

/**
 * Adds a local handler of a topic; the first one of a channel SUBSCRIBEs it (a failure is logged).
 * @returns the unsubscribe function (idempotent); the last handler's leaving UNSUBSCRIBEs the channel
 */
export function subscribeRedis(state: RedisPubSubState, topic: string, handler: (event: unknown) => void): () => void {
  const { channels, subscriber, log } = state;
  const channel = channelOf(state, topic);
  let entry = channels.get(channel);
  if (!entry) {
    const ready = state.closed ? Promise.reject(new Error("pubsub is closed")) : subscriber.subscribe(channel).then(() => undefined);
    ready.catch((err) => {
      if (!state.closed) log ? log.error({ err, channel }, "redis SUBSCRIBE failed") : console.error(`redis SUBSCRIBE ${channel} failed`, err);
    });
    entry = { handlers: new Set(), ready };
    channels.set(channel, entry);
  }
  const own = entry;
  const subscription = { handler };
  own.handlers.add(subscription);
  let active = true;
  return () => {
    if (!active) return;
    active = false;
    own.handlers.delete(subscription);
    if (own.handlers.size === 0 && channels.get(channel) === own) {
      channels.delete(channel);
      // A later SUBSCRIBE of the same channel is sent after this on the same connection, so it wins.
      if (!state.closed) subscriber.unsubscribe(channel).catch(() => undefined);
    }
  };
}

/**
 * Closes both connections after their pending replies (idempotent).
 */
export async function closeRedisPubSub(state: RedisPubSubState): Promise<void> {
  if (state.closed) return;
  state.closed = true;
  state.channels.clear();
  await Promise.all([closeRedis(state.subscriber), closeRedis(state.publisher)]);
}

/**
 * Creates the Redis pub/sub: two lazy connections, their error logging, and the operations above
 * bound to them.
 * @param url `REDIS_URL`, e.g. `redis://127.0.0.1:6379`
 * @param options `keyPrefix` (default `switchyard:`), `logger`
 * @returns a {@link RedisPubSub}; `close()` closes both connections
 */
export function createRedisPubSub(url: string, options: RedisPubSubOptions = {}): RedisPubSub {
  const log = options.logger;
  const state: RedisPubSubState = {
    publisher: new Redis(url, COMMAND_OPTIONS),
    subscriber: new Redis(url, SUBSCRIBER_OPTIONS),
    keyPrefix: options.keyPrefix ?? DEFAULT_REDIS_KEY_PREFIX,
    log,
    channels: new Map(),
    closed: false,
  };
  for (const [name, client] of [
    ["command", state.publisher],
    ["subscriber", state.subscriber],
  ] as const) {
    // Without a listener ioredis prints every failed reconnect as an unhandled error event.
    client.on("error", (err) => (log ? log.warn({ err, connection: name }, "redis connection error") : console.error(`redis ${name} connection error`, err)));
  }
  state.subscriber.on("message", (channel: string, text: string) => dispatchMessage(state, channel, text));
  return {
    redis: state.publisher,
    keyPrefix: state.keyPrefix,
    connect: () => connectRedisPubSub(state),
    publish: (topic, event) => publishRedis(state, topic, event),
    subscribe: (topic, handler) => subscribeRedis(state, topic, handler),
    whenSubscribed: (topic) => state.channels.get(channelOf(state, topic))?.ready.catch(() => undefined) ?? Promise.resolve(),
    close: () => closeRedisPubSub(state),
  };
}

/**
 * Picks the pub/sub of the process: Redis when `REDIS_URL` is set (events reach every instance),
 * else the in-process one.
 * @param config `redisUrl` and `redisKeyPrefix` of the settings
 * @param logger where Redis connection errors are logged
 * @returns a {@link ClosablePubSub}; its `redis` is the command connection when Redis backs it
 */
export function createPubSub(config: { redisUrl?: string; redisKeyPrefix?: string }, logger?: Pick<Logger, "warn" | "error">): ClosablePubSub {
  if (config.redisUrl) return createRedisPubSub(config.redisUrl, { keyPrefix: config.redisKeyPrefix, logger });
  const pubsub = createInProcessPubSub();
  return { ...pubsub, async connect() {}, async close() {} };
}
