/**
 * A fake generation provider: a real HTTP server on loopback speaking the generation API, whose
 * answers each test scripts. Records every request it receives. Like a provider that keeps the
 * caller's reference, it remembers the `client_reference` of every task it accepted and lists
 * the key's task history, newest first, with it at `GET /api/v1/usage?limit=N` (unless told to
 * leave it out, as a provider that only follows the spec would, or to fail).
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/** How the fake answers one submission. */
export type SubmitBehaviour =
  | { kind: "accept"; taskId?: string }
  /** `message`: the body's message (default "upstream exploded"). */
  | { kind: "http_error"; status: number; message?: string }
  /** `message`: the body's message (default "upstream said no"). */
  | { kind: "business_error"; code: number; message?: string }
  | { kind: "no_task_id" }
  | { kind: "unparsable" }
  | { kind: "hang" }
  /** Creates the task (it is in the history) and never answers: the answer is lost, as when our process dies mid-call. */
  | { kind: "accept_silently"; taskId?: string };

/** How the fake answers `GET /api/v1/usage`: list the history with each task's `client_reference`, without it, or fail with 500. */
export type HistoryMode = "echo" | "omit_reference" | "fail";

/** What the fake reports for a task it accepted. */
export interface FakeTaskState {
  status: number;
  result?: string;
  images?: string[];
  error?: string;
}

/** A running fake upstream. */
export interface FakeUpstream {
  url: string;
  /** Requests received, in order. */
  requests: { method: string; path: string; body: any; authorization?: string; idempotencyKey?: string }[];
  /** Tasks accepted (answered or not), oldest first, with the `client_reference` each carried. */
  accepted: { taskId: string; clientReference: string | null }[];
  /** Sets how `GET /api/v1/usage` answers (default `echo`); `message` is the body's message of `fail` (default "usage exploded"). */
  setHistoryMode(mode: HistoryMode, message?: string): void;
  /** While set, `GET /api/v1/tasks/{id}` answers this HTTP status and message for every task (null: answer as usual). */
  failPolls(answer: { status: number; message: string } | null): void;
  /** Sets the answer to the next submissions (default: accept). */
  onSubmit(behaviour: SubmitBehaviour): void;
  /** Answers every submission held by `hang` or `accept_silently` so far as `behaviour` says (default: accept). @returns how many */
  releaseHanging(behaviour?: Exclude<SubmitBehaviour, { kind: "hang" } | { kind: "accept_silently" }>): number;
  /** Resolves once `count` received requests match `predicate` (rejects after `timeoutMs`). */
  waitForRequests(predicate: (request: FakeUpstream["requests"][number]) => boolean, count: number, timeoutMs?: number): Promise<void>;
  /** Sets what GET /api/v1/tasks/{id} reports for a task. */
  setTask(taskId: string, state: FakeTaskState): void;
  close(): Promise<void>;
}

/** Starts the fake on 127.0.0.1, port 0. */
export async function startFakeUpstream(): Promise<FakeUpstream> {
  let behaviour: SubmitBehaviour = { kind: "accept" };
  let counter = 0;
  const tasks = new Map<string, FakeTaskState>();
  const requests: FakeUpstream["requests"] = [];
  const accepted: FakeUpstream["accepted"] = [];
  let historyMode: HistoryMode = "echo";
  let historyMessage = "usage exploded";
  let pollFailure: { status: number; message: string } | null = null;
  /** Submissions held unanswered, with the task id already accepted for each (accept_silently). */
  const hanging = new Map<http.ServerResponse, string | undefined>();
  const received = new EventEmitter();
  /** Records an accepted task (once per id). */
  const accept = (taskId: string | undefined, body: any): string => {
    const id = taskId ?? `up-${++counter}`;
    if (!tasks.has(id)) {
      tasks.set(id, { status: 0 });
      accepted.push({ taskId: id, clientReference: typeof body?.client_reference === "string" ? body.client_reference : null });
    }
    return id;
  };
  const answer = (res: http.ServerResponse, b: Exclude<SubmitBehaviour, { kind: "hang" } | { kind: "accept_silently" }>, body: any = null) => {
    const json = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    switch (b.kind) {
      case "accept": {
        const id = accept(b.taskId, body);
        return json(200, { code: 200, data: { task_id: id, status: 0 } });
      }
      case "http_error":
        return json(b.status, { code: b.status, message: b.message ?? "upstream exploded" });
      case "business_error":
        return json(200, { code: b.code, message: b.message ?? "upstream said no" });
      case "no_task_id":
        return json(200, { code: 200, data: {} });
      case "unparsable":
        return res.writeHead(200, { "content-type": "application/json" }).end("{not json");
    }
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: any = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    const [path, search = ""] = (req.url ?? "").split("?") as [string, string?];
    const idempotencyKey = req.headers["idempotency-key"] as string | undefined;
    requests.push({ method: req.method ?? "", path, body, authorization: req.headers.authorization, idempotencyKey });
    const json = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    if (req.method === "POST" && /^\/api\/v1\/(video|images)\/generations$/.test(path)) {
      const silentlyAccepted = behaviour.kind === "accept_silently" ? accept(behaviour.taskId, body) : undefined;
      received.emit("request");
      if (behaviour.kind === "hang" || behaviour.kind === "accept_silently") {
        hanging.set(res, silentlyAccepted);
        res.on("close", () => hanging.delete(res));
        return;
      }
      return answer(res, behaviour, body);
    }
    received.emit("request");
    if (req.method === "GET" && path === "/api/v1/usage") {
      if (historyMode === "fail") return json(500, { code: 500, message: historyMessage });
      const limit = Math.min(100, Math.max(1, Number(new URLSearchParams(search).get("limit") ?? 20) || 20));
      const listed = accepted
        .slice()
        .reverse()
        .slice(0, limit)
        .map(({ taskId, clientReference }) => ({
          task_id: taskId,
          status: tasks.get(taskId)?.status ?? 0,
          ...(historyMode === "echo" ? { client_reference: clientReference } : {}),
        }));
      return json(200, { code: 200, data: { balance: 0, tasks: listed } });
    }
    const task = /^\/api\/v1\/tasks\/([^/]+)$/.exec(path);
    if (req.method === "GET" && task) {
      if (pollFailure) return json(pollFailure.status, { code: pollFailure.status, message: pollFailure.message });
      const state = tasks.get(decodeURIComponent(task[1]!));
      if (!state) return json(404, { code: 404, message: "Task not found" });
      return json(200, { code: 200, data: { task_id: task[1], ...state } });
    }
    json(404, { code: 404, message: "Not found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    accepted,
    setHistoryMode: (mode, message = "usage exploded") => {
      historyMode = mode;
      historyMessage = message;
    },
    failPolls: (answer) => {
      pollFailure = answer;
    },
    onSubmit: (b) => {
      behaviour = b;
    },
    releaseHanging(b = { kind: "accept" }) {
      const held = [...hanging].filter(([res]) => !res.destroyed && !res.writableEnded);
      hanging.clear();
      // A task already accepted silently keeps its id when the answer is finally sent.
      for (const [res, acceptedId] of held) answer(res, b.kind === "accept" && acceptedId ? { kind: "accept", taskId: acceptedId } : b);
      return held.length;
    },
    waitForRequests(predicate, count, timeoutMs = 15_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (requests.filter(predicate).length >= count) {
            clearTimeout(timer);
            received.off("request", check);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          received.off("request", check);
          reject(new Error(`fake upstream got ${requests.filter(predicate).length} of ${count} matching requests`));
        }, timeoutMs);
        received.on("request", check);
        check();
      });
    },
    setTask: (id, state) => {
      tasks.set(id, state);
    },
    async close() {
      for (const res of hanging.keys()) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
