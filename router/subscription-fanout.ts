/**
 * One upstream subscription per audience (docs/architecture.md §6; issue 15 item 5): graphql-ws
 * operations that would receive exactly the same events share one run through the gateway, and
 * the router copies each event to every one of them. Without this, each client subscription held
 * its own chain (gateway plan, in-process subgraph, resolver, pub/sub listener): about 40 KB.
 *
 * Two operations share only when everything their checks and their events depend on is the same:
 * the `Authorization` value (so the key, its scopes, which never change, and its revocation), the
 * client's address (the key's allow-list), `Accept-Language` (error messages), and the operation's
 * text, variables, name and extensions (so its cost and scope verdicts). The first one runs through
 * the gateway with every check; the others join its stream only once it is running (a refused
 * operation answers its error alone, never joins). A key disabled ends the upstream stream with
 * `key_disabled` for all of them, and router/revocation.ts closes their sockets.
 *
 * Only subscriptions that send nothing but events as they happen can share: a late joiner
 * misses nothing a fresh run would have sent. `taskStatusChanged` first sends the task's current
 * state, so it never shares.
 */
import { Kind, parse, type OperationDefinitionNode } from "graphql";

/** Root fields of `Subscription` whose stream has no initial value (schema/supergraph.graphql). */
export const SHAREABLE_SUBSCRIPTION_FIELDS: ReadonlySet<string> = new Set(["tasks", "orderEvents"]);

/** Longer operation texts are not considered for sharing (the gateway's limits judge them). */
const MAX_SHAREABLE_QUERY_LENGTH = 2_000;

/** The GraphQL parameters of one graphql-ws `subscribe`. */
export interface OperationParams {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
  extensions?: unknown;
}

/** Whether each query text may share (bounded: a client cannot grow it past this many texts). */
const shareableByText = new Map<string, string | null>();
const MAX_REMEMBERED_TEXTS = 200;

/**
 * The name of a subscription operation every root field of which is in
 * {@link SHAREABLE_SUBSCRIPTION_FIELDS} ("" when anonymous); null when the text is not such an
 * operation (or not valid GraphQL: the gateway answers that).
 */
function shareableOperationName(query: string, operationName: string | undefined): string | null {
  const remembered = shareableByText.get(`${operationName ?? ""}\n${query}`);
  if (remembered !== undefined) return remembered;
  let name: string | null = null;
  try {
    const document = parse(query, { noLocation: true, maxTokens: 200 });
    const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    const operation =
      operationName === undefined ? (operations.length === 1 ? operations[0] : undefined) : operations.find((o) => o.name?.value === operationName);
    const plain = document.definitions.length === operations.length; // no fragments to follow
    if (
      plain &&
      operation?.operation === "subscription" &&
      operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && !s.directives?.length && SHAREABLE_SUBSCRIPTION_FIELDS.has(s.name.value))
    ) {
      name = operation.name?.value ?? "";
    }
  } catch {
    name = null;
  }
  if (shareableByText.size >= MAX_REMEMBERED_TEXTS) shareableByText.clear();
  shareableByText.set(`${operationName ?? ""}\n${query}`, name);
  return name;
}

/**
 * What a subscription may share by: null when it must run on its own.
 * @param params the operation as the client sent it
 * @param facts the facts the router passes to the subgraphs for it (router/websocket.ts)
 * @returns `{ key, operationName }`: operations with equal keys receive the same events
 */
export function shareKeyOf(
  params: OperationParams,
  facts: { authorization?: string; locale?: string; clientIp: string },
): { key: string; operationName: string } | null {
  if (typeof params.query !== "string" || params.query.length > MAX_SHAREABLE_QUERY_LENGTH || !facts.authorization) return null;
  if (params.operationName != null && typeof params.operationName !== "string") return null;
  const operationName = shareableOperationName(params.query, params.operationName ?? undefined);
  if (operationName === null) return null;
  const key = JSON.stringify([
    facts.authorization,
    facts.clientIp,
    facts.locale ?? "",
    params.query,
    params.operationName ?? null,
    params.variables ?? null,
    params.extensions ?? null,
  ]);
  return { key, operationName };
}

const DONE: IteratorResult<never> = Object.freeze({ value: undefined as never, done: true });

/**
 * A reader of a shared stream: told of each event and, once, of the upstream's end. Besides the
 * iterator below ({@link Member}), router/websocket.ts attaches a sink that writes graphql-ws
 * frames straight onto the socket.
 */
export interface Subscriber {
  /** One event of the upstream (the same object for every subscriber). */
  push(value: unknown): void;
  /** The upstream ended (`error` set: it failed); called at most once, never after {@link SharedStream.leave}. */
  finish(failure: { error: unknown } | null): void;
}

/** A running shared stream, as a subscriber attached to it sees it. */
export interface SharedStream {
  /** Stops sending events to `subscriber`; the last one to leave ends the upstream run. */
  leave(subscriber: Subscriber): void;
}

/**
 * One client's view of a shared stream: the events since it joined, queued while its socket is
 * busy. Methods on the prototype: a member is one small object.
 */
class Member implements AsyncIterableIterator<unknown>, Subscriber {
  private queue: unknown[] | null = null;
  private waiting: { resolve: (step: IteratorResult<unknown>) => void; reject: (error: unknown) => void } | null = null;
  private ended = false;
  private failure: { error: unknown } | null = null;
  constructor(
    private readonly group: Group,
    /** Called once when this client's stream ends (completed, failed or returned). */
    private left: (() => void) | null,
  ) {}

  private end() {
    const left = this.left;
    this.left = null;
    left?.();
  }

  push(value: unknown) {
    if (this.ended) return;
    if (this.waiting) {
      const { resolve } = this.waiting;
      this.waiting = null;
      resolve({ value, done: false });
    } else {
      this.queue ??= [];
      this.queue.push(value);
    }
  }

  /** The upstream ended (`error` set: it failed); queued events are still delivered first. */
  finish(failure: { error: unknown } | null) {
    this.failure = failure;
    this.ended = true;
    if (!this.waiting) return;
    const { resolve, reject } = this.waiting;
    this.waiting = null;
    this.end();
    if (failure) reject(failure.error);
    else resolve(DONE);
  }

  next(): Promise<IteratorResult<unknown>> {
    if (this.queue?.length) return Promise.resolve({ value: this.queue.shift(), done: false });
    if (this.ended) {
      const failure = this.failure;
      this.failure = null;
      this.end();
      return failure ? Promise.reject(failure.error) : Promise.resolve(DONE);
    }
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  return(): Promise<IteratorResult<unknown>> {
    this.end();
    if (!this.ended) {
      this.ended = true;
      this.group.leave(this);
    }
    this.queue = null;
    this.failure = null;
    if (this.waiting) {
      const { resolve } = this.waiting;
      this.waiting = null;
      resolve(DONE);
    }
    return Promise.resolve(DONE);
  }

  throw(): Promise<IteratorResult<unknown>> {
    return this.return();
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}

/** One upstream stream and the clients reading it. */
class Group implements SharedStream {
  readonly members = new Set<Subscriber>();
  private closed = false;
  constructor(
    private readonly upstream: AsyncIterator<unknown>,
    private readonly forget: () => void,
  ) {}

  join(left: (() => void) | null): Member {
    const member = new Member(this, left);
    this.members.add(member);
    return member;
  }

  /** Running: not ended and not yet left by its last member. */
  get running(): boolean {
    return !this.closed;
  }

  leave(member: Subscriber) {
    if (!this.members.delete(member)) return;
    if (this.members.size > 0 || this.closed) return;
    this.closed = true;
    this.forget();
    // Ends the upstream subscription (in-process: the subgraph's pub/sub listener).
    void Promise.resolve(this.upstream.return?.()).catch(() => undefined);
  }

  /** Copies every upstream event to the members until the upstream ends or nobody is left. */
  async pump() {
    let failure: { error: unknown } | null = null;
    try {
      for (;;) {
        const step = await this.upstream.next();
        if (step.done || this.closed) break;
        for (const member of this.members) member.push(step.value);
      }
    } catch (error) {
      failure = { error };
    }
    if (!this.closed) {
      this.closed = true;
      this.forget();
    }
    for (const member of this.members) member.finish(failure);
    this.members.clear();
  }
}

/**
 * Told of every client stream of a shared subscription (router/metrics.ts counts them as open
 * subscriptions; the gateway counts the upstream run not at all, see {@link SHARED_UPSTREAM}).
 * @param joined false for the client whose operation started the upstream run
 * @returns called once when that client's stream ends
 */
export type SharedObserver = (operationName: string, joined: boolean) => () => void;

/**
 * Set (true) on the context of an operation the router runs as a shared upstream stream: its
 * clients are counted by the {@link SharedObserver}, not by the gateway's plugins.
 */
export const SHARED_UPSTREAM = "switchyardSharedUpstream";

/** The shared upstream subscriptions of one router. */
export interface FanOut {
  /**
   * Runs a subscription, or joins the running one of the same share key.
   * @param share from {@link shareKeyOf}; null: runs on its own
   * @param run starts the operation through the gateway (with every check)
   * @returns what `run` returns when it is refused (an error result) or runs on its own, else
   *   this client's stream of the shared one's events from now on
   */
  subscribe(share: { key: string; operationName: string } | null, run: () => unknown): Promise<unknown>;
  /**
   * Attaches a subscriber to the shared stream of `share` when one runs or is starting, without
   * running anything: the caller runs the operation itself when none is.
   * @param subscriber told of every event from now on; its `left` is set to the observer's
   *   callback (call it once when the client's stream ends)
   * @returns the stream (at once when running, or once a pending start is through); null when
   *   none runs or the pending start was refused
   */
  attach(
    share: { key: string; operationName: string },
    subscriber: Subscriber & { left: (() => void) | null },
  ): SharedStream | null | Promise<SharedStream | null>;
  /** Upstream streams running now. */
  readonly size: number;
}

/**
 * Creates the registry of shared subscriptions.
 * @param observe told of each client stream of a shared subscription
 * @returns a {@link FanOut}
 */
export function createFanOut(observe?: SharedObserver): FanOut {
  // A pending start is a promise: operations arriving meanwhile wait for it instead of starting another.
  const groups = new Map<string, Group | Promise<Group | null>>();
  let running = 0;

  async function start(key: string, run: () => unknown): Promise<{ result: unknown; group: Group | null }> {
    let settle!: (group: Group | null) => void;
    groups.set(key, new Promise<Group | null>((resolve) => (settle = resolve)));
    let result: unknown;
    try {
      result = await run();
    } catch (error) {
      groups.delete(key);
      settle(null);
      throw error;
    }
    const iterator = asIterator(result);
    if (!iterator) {
      // Refused (an error result): answered to this client alone; the next one is checked again.
      groups.delete(key);
      settle(null);
      return { result, group: null };
    }
    running++;
    const group: Group = new Group(iterator, () => {
      running--;
      if (groups.get(key) === group) groups.delete(key);
    });
    groups.set(key, group);
    settle(group);
    void group.pump();
    return { result, group };
  }

  const member = (group: Group, operationName: string, joined: boolean) => {
    return group.join(observe ? observe(operationName, joined) : null);
  };

  const attachTo = (group: Group | null, share: { key: string; operationName: string }, subscriber: Subscriber & { left: (() => void) | null }) => {
    // Still running and still listed (it may have ended while the caller waited).
    if (!group?.running || groups.get(share.key) !== group) return null;
    group.members.add(subscriber);
    subscriber.left = observe ? observe(share.operationName, true) : null;
    return group;
  };

  return {
    attach(share, subscriber) {
      const existing = groups.get(share.key);
      if (existing instanceof Promise) return existing.then((group) => attachTo(group, share, subscriber));
      return attachTo(existing ?? null, share, subscriber);
    },
    async subscribe(share, run) {
      if (!share) return run();
      let existing = groups.get(share.key);
      if (existing instanceof Promise) existing = (await existing) ?? undefined;
      // Still running and still listed (it may have ended while this one waited).
      if (existing && groups.get(share.key) === existing) return member(existing, share.operationName, true);
      const { result, group } = await start(share.key, run);
      return group ? member(group, share.operationName, false) : result;
    },
    get size() {
      return running;
    },
  };
}

/** The async iterator of a stream result; null for a single result. */
function asIterator(result: unknown): AsyncIterator<unknown> | null {
  const iterable = result as { [Symbol.asyncIterator]?: () => AsyncIterator<unknown> } | null;
  return iterable && typeof iterable[Symbol.asyncIterator] === "function" ? iterable[Symbol.asyncIterator]!() : null;
}
