/**
 * The pub/sub words of key revocation (src/auth/revocation.ts tells the whole path): the outbox
 * topic of a disabled key, the topic every router listens on, and reading a message of it. Here,
 * below auth/, so the dispatcher routes the row without importing auth/ (docs/architecture.md §1.2).
 */
import type { OutboxMessage, PubSub } from "./pubsub.ts";

/** Outbox topic of a disabled key: `aggregateId` and `payload.key_id` are the key id. */
export const KEY_DISABLED_EVENT = "key.disabled";

/** Pub/sub topic on which the dispatcher also publishes {@link KEY_DISABLED_EVENT} rows, for routers. */
export const KEYS_TOPIC = "keys";

/**
 * The pub/sub topics of one outbox row: its account's topic, and {@link KEYS_TOPIC} too for a
 * {@link KEY_DISABLED_EVENT}.
 * @param accountTopic the row's account topic (`account:<accountId>`)
 */
export function topicsOfRow(topic: string, accountTopic: string): string[] {
  return topic === KEY_DISABLED_EVENT ? [accountTopic, KEYS_TOPIC] : [accountTopic];
}

/**
 * The key a published message disables.
 * @param message anything received on a pub/sub topic
 * @returns the key id when it is a {@link KEY_DISABLED_EVENT}, else null
 */
export function disabledKeyOf(message: unknown): string | null {
  const event = message as Partial<OutboxMessage> | null;
  return event && event.topic === KEY_DISABLED_EVENT && typeof event.aggregateId === "string" ? event.aggregateId : null;
}

/**
 * Listens for disabled keys on {@link KEYS_TOPIC} (bin/stack.ts hands this to the router, which
 * imports no business module).
 * @param pubsub the process's pub/sub (Redis with `REDIS_URL`: every process's disables arrive)
 * @param listener called with the id of each disabled key
 * @returns stops listening
 */
export function watchDisabledKeys(pubsub: PubSub, listener: (keyId: string) => void): () => void {
  return pubsub.subscribe(KEYS_TOPIC, (message) => {
    const keyId = disabledKeyOf(message);
    if (keyId) listener(keyId);
  });
}
