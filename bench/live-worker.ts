/**
 * A subscriber process of the live scenario (bench/live.ts forks two): holds thousands of
 * graphql-ws subscriptions (`subscription { tasks { ... } }`) on plain `ws` sockets, speaking the
 * few messages of the graphql-transport-ws protocol itself so this process stays light, and
 * records when each event arrives. Driven by the parent over IPC (messages below).
 */
import WebSocket from "ws";

const QUERY = "subscription { tasks { id statusCode updatedAt } }";

/** One subscription: the key it uses and what it received. */
interface Subscriber {
  keyIndex: number;
  socket?: WebSocket;
  acked: boolean;
  closed: boolean;
  errors: number;
  /** Every event received, by `taskId:statusCode:updatedAt` (a duplicate is counted apart). */
  seen: Set<string>;
  duplicates: number;
  /** Task id → arrival (ms since the epoch) of the first event of that task. */
  firstAt: Map<string, number>;
  /** Task ids whose terminal event (status 1 or 2) arrived. */
  terminal: Set<string>;
}

/** Parent → worker messages. */
export type ToWorker =
  | { type: "open"; wsUrl: string; subscribers: { keyIndex: number; key: string }[]; concurrency: number }
  | { type: "unconfirmed" }
  | { type: "mark"; at: number }
  | { type: "pending"; tasks: { id: string; keyIndex: number }[] }
  | { type: "report"; tasks: { id: string; keyIndex: number; sentAt: number }[] }
  | { type: "close" };

/** Worker → parent messages (one answer per request, in order). */
export type FromWorker =
  | { type: "opened"; acked: number; failed: number }
  | { type: "unconfirmed"; keyIndexes: number[] }
  | { type: "marked" }
  | { type: "pending"; count: number }
  | { type: "report"; report: WorkerReport }
  | { type: "closed" };

/** What one worker measured after the mark. */
export interface WorkerReport {
  subscribers: number;
  /** Arrival − the event's `updatedAt` (the change's time on the server), ms, one per delivery. */
  deliveryMs: number[];
  /** Arrival of a task's first event − when its submission was sent, ms, one per subscriber and task. */
  firstEventMs: number[];
  delivered: number;
  /** Deliveries a subscriber did not get that another subscriber of the same key got. */
  missed: number;
  duplicates: number;
  /** Sockets that closed or reported an error while the run went on. */
  broken: number;
}

const now = () => performance.timeOrigin + performance.now();
const subscribers: Subscriber[] = [];
let markAt = Infinity;
const send = (message: FromWorker) => process.send!(message);

function open(wsUrl: string, sub: Subscriber, key: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new WebSocket(wsUrl, "graphql-transport-ws");
    sub.socket = socket;
    const timer = setTimeout(() => resolve(false), 30_000);
    socket.on("open", () => socket.send(JSON.stringify({ type: "connection_init", payload: { Authorization: `Bearer ${key}` } })));
    socket.on("message", (data) => {
      const message = JSON.parse(data.toString());
      switch (message.type) {
        case "connection_ack":
          sub.acked = true;
          socket.send(JSON.stringify({ id: "1", type: "subscribe", payload: { query: QUERY } }));
          clearTimeout(timer);
          resolve(true);
          return;
        case "ping":
          socket.send(JSON.stringify({ type: "pong" }));
          return;
        case "next":
          onEvent(sub, message.payload);
          return;
        case "error":
        case "complete":
          sub.errors++;
          return;
      }
    });
    socket.on("error", () => {
      sub.errors++;
      clearTimeout(timer);
      resolve(false);
    });
    socket.on("close", () => {
      sub.closed = true;
      clearTimeout(timer);
      resolve(false);
    });
  });
}

/** A `next` payload of the tasks subscription (`data` missing on an error result). */
type TaskEvent = { data?: { tasks?: { id: string; statusCode: number; updatedAt: string } | null } } | null;

function onEvent(sub: Subscriber, payload: TaskEvent) {
  const at = now();
  const task = payload?.data?.tasks;
  if (!task) {
    sub.errors++;
    return;
  }
  const changedAt = Date.parse(task.updatedAt);
  if (task.statusCode === 1 || task.statusCode === 2) sub.terminal.add(task.id);
  if (changedAt < markAt) {
    sub.seen.add("warm-up"); // confirms the subscription is live; not measured
    return;
  }
  const id = `${task.id}:${task.statusCode}:${task.updatedAt}`;
  if (sub.seen.has(id)) sub.duplicates++;
  sub.seen.add(id);
  deliveries.push(at - changedAt);
  if (!sub.firstAt.has(task.id)) sub.firstAt.set(task.id, at);
}
const deliveries: number[] = [];

async function openAll(wsUrl: string, list: { keyIndex: number; key: string }[], concurrency: number) {
  let next = 0;
  let acked = 0;
  let failed = 0;
  async function lane() {
    while (next < list.length) {
      const { keyIndex, key } = list[next++]!;
      const sub: Subscriber = { keyIndex, acked: false, closed: false, errors: 0, seen: new Set(), duplicates: 0, firstAt: new Map(), terminal: new Set() };
      subscribers.push(sub);
      if (await open(wsUrl, sub, key)) acked++;
      else failed++;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));
  send({ type: "opened", acked, failed });
}

function report(tasks: { id: string; keyIndex: number; sentAt: number }[]): WorkerReport {
  const firstEventMs: number[] = [];
  const sentAt = new Map(tasks.map((t) => [t.id, t.sentAt]));
  const unionByKey = new Map<number, Set<string>>();
  for (const sub of subscribers) {
    const union = unionByKey.get(sub.keyIndex) ?? new Set<string>();
    for (const id of sub.seen) if (id !== "warm-up") union.add(id);
    unionByKey.set(sub.keyIndex, union);
    for (const [taskId, at] of sub.firstAt) {
      const sent = sentAt.get(taskId);
      if (sent !== undefined) firstEventMs.push(at - sent);
    }
  }
  let delivered = 0;
  let missed = 0;
  for (const sub of subscribers) {
    const own = [...sub.seen].filter((id) => id !== "warm-up").length;
    delivered += own;
    missed += unionByKey.get(sub.keyIndex)!.size - own;
  }
  return {
    subscribers: subscribers.length,
    deliveryMs: deliveries,
    firstEventMs,
    delivered,
    missed,
    duplicates: subscribers.reduce((n, s) => n + s.duplicates, 0),
    broken: subscribers.filter((s) => s.closed || s.errors > 0).length,
  };
}

process.on("message", (message: ToWorker) => {
  switch (message.type) {
    case "open":
      void openAll(message.wsUrl, message.subscribers, message.concurrency);
      return;
    case "unconfirmed":
      send({ type: "unconfirmed", keyIndexes: [...new Set(subscribers.filter((s) => s.seen.size === 0).map((s) => s.keyIndex))] });
      return;
    case "mark":
      markAt = message.at;
      send({ type: "marked" });
      return;
    case "pending": {
      const byKey = new Map<number, Subscriber[]>();
      for (const sub of subscribers) byKey.set(sub.keyIndex, [...(byKey.get(sub.keyIndex) ?? []), sub]);
      const count = message.tasks.filter((t) => byKey.get(t.keyIndex)?.some((s) => !s.terminal.has(t.id) && !s.closed)).length;
      send({ type: "pending", count });
      return;
    }
    case "report":
      send({ type: "report", report: report(message.tasks) });
      return;
    case "close":
      for (const sub of subscribers) sub.socket?.terminate();
      send({ type: "closed" });
      setImmediate(() => process.exit(0));
      return;
  }
});
