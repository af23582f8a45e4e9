/**
 * A fake generation provider: a real HTTP server on loopback speaking the generation API, whose
 * answers each test scripts. Records every request it receives.
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/** How the fake answers one submission. */
export type SubmitBehaviour =
  | { kind: "accept"; taskId?: string }
  | { kind: "http_error"; status: number }
  | { kind: "business_error"; code: number }
  | { kind: "no_task_id" }
  | { kind: "unparsable" }
  | { kind: "hang" };

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
  requests: { method: string; path: string; body: any; authorization?: string }[];
  /** Sets the answer to the next submissions (default: accept). */
  onSubmit(behaviour: SubmitBehaviour): void;
  /** Answers every submission held by `hang` so far as `behaviour` says (default: accept). @returns how many */
  releaseHanging(behaviour?: Exclude<SubmitBehaviour, { kind: "hang" }>): number;
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
  const hanging = new Set<http.ServerResponse>();
  const received = new EventEmitter();
  const answer = (res: http.ServerResponse, b: Exclude<SubmitBehaviour, { kind: "hang" }>) => {
    const json = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    switch (b.kind) {
      case "accept": {
        const id = b.taskId ?? `up-${++counter}`;
        if (!tasks.has(id)) tasks.set(id, { status: 0 });
        return json(200, { code: 200, data: { task_id: id, status: 0 } });
      }
      case "http_error":
        return json(b.status, { code: b.status, message: "upstream exploded" });
      case "business_error":
        return json(200, { code: b.code, message: "upstream said no" });
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
    const path = (req.url ?? "").split("?")[0]!;
    requests.push({ method: req.method ?? "", path, body, authorization: req.headers.authorization });
    received.emit("request");
    const json = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
    if (req.method === "POST" && /^\/api\/v1\/(video|images)\/generations$/.test(path)) {
      if (behaviour.kind === "hang") {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
        return;
      }
      return answer(res, behaviour);
    }
    const task = /^\/api\/v1\/tasks\/([^/]+)$/.exec(path);
    if (req.method === "GET" && task) {
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
    onSubmit: (b) => {
      behaviour = b;
    },
    releaseHanging(b = { kind: "accept" }) {
      const held = [...hanging].filter((res) => !res.destroyed && !res.writableEnded);
      hanging.clear();
      for (const res of held) answer(res, b);
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
      for (const res of hanging) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
