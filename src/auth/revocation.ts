/**
 * Key revocation (security issue "Trust at the edges", item 5): disabling a key ends its open
 * subscriptions on every router within a second, and no subgraph delivers it another event.
 *
 * How the word travels (one path whatever disabled the key, the CLI in its own process or the
 * admin mutation):
 * 1. `setKeyStatus(db, id, "disabled")` (src/auth/keys.ts) writes the outbox row
 *    `key.disabled` (src/events/key-topics.ts) in the same transaction as the status change.
 * 2. The dispatcher (src/events/dispatcher/publish.ts) publishes it like every row on the key's account topic
 *    and also on the `keys` topic: at once when the write happened in its own process, else on its
 *    next round (it polls the outbox at least every 500 ms). With `REDIS_URL` the publish reaches
 *    every process.
 * 3. Every router listens on the `keys` topic (bin/stack.ts hands router/revocation.ts `watchDisabledKeys`) and closes the key's
 *    graphql-ws sockets with 4403 and ends its SSE streams.
 * 4. Defence in depth in the subgraphs: a subscription stream of the key ends with `key_disabled`
 *    when the row reaches its account topic, and before each event the key is read again
 *    ({@link revocationFor}), so a late or lost message never lets an event through.
 */
import { AppError } from "../errors.ts";
import type { Db } from "../db/index.ts";
import type { OutboxMessage } from "../events/pubsub.ts";
import { disabledKeyOf } from "../events/key-topics.ts";

export { KEY_DISABLED_EVENT, KEYS_TOPIC, disabledKeyOf } from "../events/key-topics.ts";

/** Whether an event says that `keyId` was disabled (subscription filters let these through). */
export function revokesKey(event: OutboxMessage, keyId: string): boolean {
  return disabledKeyOf(event) === keyId;
}

/**
 * Status reads shared by every subscription of one key that receives one event (thousands of
 * subscriptions of a key cost one read per event, not one each), per database; forgotten after a
 * second. An event published after the disable committed always reads the new status.
 */
const statusReads = new WeakMap<Db, Map<string, Promise<boolean>>>();

function keyIsActive(db: Db, keyId: string, eventId: number): Promise<boolean> {
  let reads = statusReads.get(db);
  if (!reads) {
    reads = new Map();
    statusReads.set(db, reads);
  }
  const memo = `${eventId}:${keyId}`;
  let read = reads.get(memo);
  if (!read) {
    read = db("api_keys")
      .where("id", keyId)
      .first("status")
      .then((row) => row?.status === "active");
    const own = reads;
    own.set(memo, read);
    setTimeout(() => own.delete(memo), 1000).unref();
  }
  return read;
}

/**
 * Checks, before a subscription delivers an event to a key, that the key may still receive it.
 * @param db the database of the key
 * @param keyId the subscriber's key
 * @param event the event about to be delivered (a {@link KEY_DISABLED_EVENT} of this key included)
 * @returns null when the key is active, else the AppError `key_disabled` (403) to deliver instead:
 *   a resolver yields it as its field's value (graphql-js makes a returned Error a field error,
 *   formatted with its code like any other) and ends the stream
 */
export async function revocationFor(db: Db, keyId: string, event: OutboxMessage): Promise<AppError | null> {
  return revokesKey(event, keyId) || !(await keyIsActive(db, keyId, event.id)) ? new AppError("key_disabled") : null;
}
