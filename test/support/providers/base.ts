/**
 * What every fake provider of test/support/providers/ shares: a real HTTP server on loopback, a
 * record of the requests, the scripted answer of the next submission, a poll failure switch, and a
 * uniform handle the contract suite (test/integration/channel-types.test.ts) drives every type by.
 * Each type's module writes only its own request and answer shapes on top.
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/** How the next submission is answered. */
export type NextSubmit =
  | { kind: "accept" }
  /** 429 with `Retry-After: seconds` and the provider's documented rate-limit body. */
  | { kind: "rate_limit"; retryAfterSeconds: number }
  /** 5xx with the provider's error body. */
  | { kind: "server_error"; status: number }
  /** Never answered (a timeout). */
  | { kind: "hang" }
  /** The task is created, the answer never sent (a lost submission). */
  | { kind: "accept_silently" };

/** A task the fake holds. */
export interface FakeTask {
  id: string;
  /** Our task id, when the request carried it (Kling's `external_task_id`). */
  reference: string | null;
  /** The provider's state word (queued, submitted, succeed, ...). */
  state: string;
  kind: "video" | "image";
  /** The request body it was created from. */
  body: any;
  error?: string;
}

/** A recorded request. */
export interface RecordedRequest {
  method: string;
  path: string;
  body: any;
  authorization?: string;
}

/** The uniform handle of a fake provider. */
export interface FakeProvider {
  type: string;
  url: string;
  /** The credentials a channel of this fake must be configured with. */
  credentials: Record<string, string>;
  /** Credentials the fake refuses (a bad key). */
  wrongCredentials: Record<string, string>;
  requests: RecordedRequest[];
  tasks: Map<string, FakeTask>;
  /** The bytes served as every result. */
  content: Buffer;
  next(answer: NextSubmit): void;
  /** While set, every status read answers 429 with this Retry-After (seconds). */
  rateLimitPolls(retryAfterSeconds: number | null): void;
  /** Moves a task to running, succeeded or failed (with the provider's words). */
  settle(id: string, outcome: "running" | "succeeded" | { failed: string }): void;
  /** The provider's id of the newest task, as its own API names it. */
  lastTaskId(): string;
  /** Resolves once `count` requests match. */
  waitForRequests(predicate: (r: RecordedRequest) => boolean, count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** The pieces a type's module fills in. */
export interface FakeServerParts {
  /** Answers one request; `ctx` gives the shared state. Returns false for an unknown route (404). */
  handle(req: http.IncomingMessage, res: http.ServerResponse, body: any, ctx: FakeContext): boolean | Promise<boolean>;
}

/** Shared state handed to a type's handler. */
export interface FakeContext {
  url: string;
  tasks: Map<string, FakeTask>;
  content: Buffer;
  /** Takes the scripted answer of this submission (then `accept` again). */
  takeNext(): NextSubmit;
  /** Scripts the answer of the next submission. */
  setNext(answer: NextSubmit): void;
  pollRetryAfter: number | null;
  /** Held responses (hang, accept_silently), ended at close. */
  hold(res: http.ServerResponse): void;
  newId(): string;
}

/** Sends JSON. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** Starts the server of a fake. */
export async function startFakeServer(parts: FakeServerParts): Promise<{
  url: string;
  requests: RecordedRequest[];
  tasks: Map<string, FakeTask>;
  content: Buffer;
  ctx: FakeContext;
  waitForRequests: FakeProvider["waitForRequests"];
  close(): Promise<void>;
}> {
  const requests: RecordedRequest[] = [];
  const tasks = new Map<string, FakeTask>();
  const held = new Set<http.ServerResponse>();
  const received = new EventEmitter();
  let nextAnswer: NextSubmit = { kind: "accept" };
  let counter = 0;
  const content = Buffer.from(`fake-media-${Math.random().toString(36).slice(2)}`.repeat(64));
  const ctx: FakeContext = {
    url: "",
    tasks,
    content,
    pollRetryAfter: null,
    takeNext() {
      const answer = nextAnswer;
      nextAnswer = { kind: "accept" };
      return answer;
    },
    setNext(answer) {
      nextAnswer = answer;
    },
    hold: (res) => held.add(res),
    newId: () => `${Date.now()}${String(++counter).padStart(4, "0")}`,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: any = null;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
      const recorded = { method: req.method ?? "GET", path: req.url ?? "/", body, authorization: req.headers.authorization };
      requests.push(recorded);
      received.emit("request", recorded);
      try {
        if (!(await parts.handle(req, res, body, ctx))) sendJson(res, 404, { error: { message: "no such route" } });
      } catch (error) {
        sendJson(res, 500, { error: { message: String(error) } });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ctx.url = url;
  return {
    url,
    requests,
    tasks,
    content,
    ctx,
    waitForRequests(predicate, count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => requests.filter(predicate).length >= count;
        if (check()) return resolve();
        const timer = setTimeout(() => {
          received.off("request", listener);
          reject(new Error(`fewer than ${count} matching requests within ${timeoutMs} ms`));
        }, timeoutMs);
        const listener = () => {
          if (!check()) return;
          clearTimeout(timer);
          received.off("request", listener);
          resolve();
        };
        received.on("request", listener);
      });
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The provider's own state words that {@link FakeProvider.settle} moves a task to. */
export interface FakeStates {
  running: string;
  succeeded: string;
  failed: string;
}

/**
 * The uniform handle over a started fake server (every type's fake returns one): the type's own
 * credentials and state words over the shared recording, scripting and settling.
 */
export function fakeProviderOf(
  server: Awaited<ReturnType<typeof startFakeServer>>,
  own: { type: string; credentials: Record<string, string>; wrongCredentials: Record<string, string>; states: FakeStates },
): FakeProvider {
  return {
    type: own.type,
    url: server.url,
    credentials: own.credentials,
    wrongCredentials: own.wrongCredentials,
    requests: server.requests,
    tasks: server.tasks,
    content: server.content,
    next: (answer) => server.ctx.setNext(answer),
    rateLimitPolls: (seconds) => {
      server.ctx.pollRetryAfter = seconds;
    },
    settle(id, outcome) {
      const task = server.tasks.get(id)!;
      if (outcome === "running") task.state = own.states.running;
      else if (outcome === "succeeded") task.state = own.states.succeeded;
      else Object.assign(task, { state: own.states.failed, error: outcome.failed });
    },
    lastTaskId: () => [...server.tasks.keys()].at(-1)!,
    waitForRequests: server.waitForRequests,
    close: server.close,
  };
}
