/**
 * The router's half of key revocation (security issue "Trust at the edges", item 5; the whole
 * path is described in src/auth/revocation.ts): which key each graphql-ws connection and SSE
 * stream belongs to, and ending all of them when the dispatcher announces on the `keys` topic that
 * the key was disabled. With `REDIS_URL` that topic is in Redis, so every router hears it. The
 * router imports no business module (docs/architecture.md §1.2): bin/stack.ts hands it the feed
 * of disabled keys (src/events/key-topics.ts `watchDisabledKeys`).
 */
import type http from "node:http";
import type { Logger } from "pino";
import { completeEventStream } from "./http/event-stream.ts";
import { graphqlErrorResult } from "./http/graphql-error.ts";

/**
 * Where the router hears of disabled keys: called once with a listener, which it calls with the id
 * of each disabled key, from any process.
 * @returns stops listening
 */
export type DisabledKeyFeed = (listener: (keyId: string) => void) => () => void;

/** The long-lived connections of this router by key, and the ending of a disabled key's. */
export interface Revocations {
  /**
   * Registers a connection of a key.
   * @param end ends the connection (called at most once, when the key is disabled)
   * @returns a function that forgets the connection (call it when it closes; idempotent)
   */
  track(keyId: string, end: () => void): () => void;
  /**
   * Ends every registered connection of a key and forgets them.
   * @returns how many were ended
   */
  revoke(keyId: string): number;
  /** Stops listening for revocations (the router is closing). */
  close(): void;
}

/**
 * Creates the registry and listens for disabled keys.
 * @param disabledKeys the feed of disabled keys (the `keys` topic of the process's pub/sub; with
 *   `REDIS_URL` this opens the router's subscriber connection); none: revocations reach it only
 *   through {@link Revocations.revoke}
 * @param logger where a failing `end` is logged
 * @returns a {@link Revocations}
 */
export function createRevocations(disabledKeys: DisabledKeyFeed | undefined, logger: Pick<Logger, "warn" | "info">): Revocations {
  const byKey = new Map<string, Set<() => void>>();
  const revocations: Revocations = {
    track(keyId, end) {
      let ends = byKey.get(keyId);
      if (!ends) {
        ends = new Set();
        byKey.set(keyId, ends);
      }
      const own = ends;
      let entry: (() => void) | null = () => end();
      own.add(entry);
      return () => {
        if (!entry) return;
        own.delete(entry);
        entry = null;
        if (own.size === 0 && byKey.get(keyId) === own) byKey.delete(keyId);
      };
    },
    revoke(keyId) {
      const ends = byKey.get(keyId);
      if (!ends) return 0;
      byKey.delete(keyId);
      for (const end of ends) {
        try {
          end();
        } catch (err) {
          logger.warn({ err, key_id: keyId }, "ending a revoked connection failed");
        }
      }
      logger.info({ key_id: keyId, connections: ends.size }, "key disabled: its connections ended");
      return ends.size;
    },
    close: () => unsubscribe(),
  };
  const unsubscribe = disabledKeys?.((keyId) => revocations.revoke(keyId)) ?? (() => {});
  return revocations;
}

/** Requests waiting to learn their key (SSE streams), keyed by the node request object. */
const keyListeners = new WeakMap<object, (keyId: string) => void>();

/**
 * Asks to be told which key a request's subscription runs under, once the router's key check
 * (router/graph/useSubscriptionKeyCheck.ts) identified it. For SSE streams, whose key is known
 * only inside the gateway.
 * @param req the node request
 * @param listener called at most once with the key id
 */
export function onRequestKey(req: object, listener: (keyId: string) => void): void {
  keyListeners.set(req, listener);
}

/**
 * Tells the listener of a request (see {@link onRequestKey}) its key id; nothing when none listens.
 * @param req the node request of the operation's context (undefined when not served over node http)
 */
export function requestKeyIdentified(req: object | undefined, keyId: string): void {
  if (!req) return;
  const listener = keyListeners.get(req);
  if (!listener) return;
  keyListeners.delete(req);
  listener(keyId);
}

/** The last `next` of an SSE stream whose key was disabled: the `key_disabled` error. */
export const KEY_DISABLED_RESULT = graphqlErrorResult("key_disabled");

/**
 * Ends the SSE response of a disabled key: the `key_disabled` error and `complete` when the stream
 * has started, then the connection is closed (router/http/event-stream.ts).
 * @param res the response of an SSE subscription (`Accept: text/event-stream`)
 */
export function endEventStream(res: http.ServerResponse): void {
  completeEventStream(res, [KEY_DISABLED_RESULT]);
}
