/**
 * The event stream of one subscription of a key, ended when the key is disabled (src/auth/revocation.ts;
 * docs/architecture.md §6): every subscription resolver of both subgraphs reads its events here.
 */
import type { AppError } from "../../src/errors.ts";
import type { Caller } from "../../src/auth/caller.ts";
import type { Db } from "../../src/db/index.ts";
import { revocationFor, revokesKey } from "../../src/auth/revocation.ts";
import { accountTopic, eventStream, type OutboxMessage, type PubSub } from "../../src/events/pubsub.ts";

/** The events of a key's subscription; iterate once. */
export interface KeyEventStream extends AsyncIterable<OutboxMessage> {
  /** Settles once the subscription is in place (with Redis, SUBSCRIBE acknowledged). */
  ready: Promise<void>;
  /**
   * Set when iteration ended because the key was disabled: the `key_disabled` error (403) the
   * resolver yields as its field's last value (graphql-js makes a returned Error a field error).
   */
  readonly revoked: AppError | null;
  /** Unsubscribes; ends the iteration. */
  close(): void;
}

/**
 * Subscribes to the events of the caller's account that `wanted` accepts, and ends the stream when
 * the key is disabled: the event disabling it passes any filter, and before each event the key's
 * status is read again ({@link revocationFor}), so a late or lost message never lets one through.
 * @param pubsub the process's pub/sub
 * @param db the database of the key
 * @param caller the subscriber's key and account
 * @param wanted which events of the account this subscription delivers
 * @returns the stream; after its iteration ends, `revoked` tells whether the key was disabled
 */
export function keyEventStream(pubsub: PubSub, db: Db, caller: Pick<Caller, "accountId" | "keyId">, wanted: (event: OutboxMessage) => boolean): KeyEventStream {
  const stream = eventStream<OutboxMessage>(pubsub, accountTopic(caller.accountId), (e) => wanted(e) || revokesKey(e, caller.keyId));
  const result = {
    ready: stream.ready,
    revoked: null as AppError | null,
    close: () => stream.close(),
    async *[Symbol.asyncIterator]() {
      for await (const event of stream) {
        const revoked = await revocationFor(db, caller.keyId, event);
        if (revoked) {
          result.revoked = revoked;
          return;
        }
        yield event;
      }
    },
  };
  return result;
}
