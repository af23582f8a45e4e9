/**
 * A fake provider of channel type `switchyard` (the generation API itself, docs/api/generation.md)
 * for the contract suite: `POST /api/v1/video/generations` and `/images/generations` answering
 * `{"code": 200, "data": {"task_id"}}`, `GET /api/v1/tasks/{id}` with the spec's status codes,
 * and the key's history at `GET /api/v1/usage?limit=N` with each task's `client_reference`.
 * Errors are the spec's body `{"code", "message"}`: 401 echoing the key it was given, 429 with
 * `Retry-After`, 5xx. (test/support/fake-upstream.ts is the older, more scriptable fake of the
 * same protocol, used by the channel and recovery tests.)
 */
import { sendJson, startFakeServer, type FakeProvider, fakeProviderOf } from "./base.ts";

/** The spec's status code of each state word the contract suite uses. */
const CODES: Record<string, number> = { queued: 0, running: 3, succeeded: 1, failed: 2 };

/** Starts the fake. */
export async function startFakeSwitchyard(): Promise<FakeProvider> {
  const apiKey = `sy_fake_${Math.random().toString(36).slice(2, 14)}`;
  const server = await startFakeServer({
    handle(req, res, body, ctx) {
      const [path, query = ""] = (req.url ?? "/").split("?") as [string, string?];
      const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      if (given !== apiKey) {
        sendJson(res, 401, { code: 401, message: `Invalid API key ${given ?? ""}` });
        return true;
      }
      if (req.method === "POST" && (path === "/api/v1/video/generations" || path === "/api/v1/images/generations")) {
        const next = ctx.takeNext();
        if (next.kind === "rate_limit") {
          sendJson(res, 429, { code: 429, message: "Too many requests" }, { "retry-after": String(next.retryAfterSeconds) });
          return true;
        }
        if (next.kind === "server_error") {
          sendJson(res, next.status, { code: next.status, message: "Internal error" });
          return true;
        }
        const id = `up_${ctx.newId()}`;
        if (next.kind !== "hang") {
          ctx.tasks.set(id, { id, reference: body?.client_reference ?? null, state: "queued", kind: path.includes("images") ? "image" : "video", body });
        }
        if (next.kind === "hang" || next.kind === "accept_silently") {
          ctx.hold(res);
          return true;
        }
        sendJson(res, 200, { code: 200, data: { task_id: id, status: 0 } });
        return true;
      }
      if (req.method === "GET" && path === "/api/v1/usage") {
        const limit = Number(new URLSearchParams(query).get("limit") ?? 20);
        const tasks = [...ctx.tasks.values()].reverse().slice(0, limit);
        sendJson(res, 200, {
          code: 200,
          data: { balance: 100, tasks: tasks.map((t) => ({ task_id: t.id, client_reference: t.reference, status: CODES[t.state] })) },
        });
        return true;
      }
      const match = /^\/api\/v1\/tasks\/([^/]+)$/.exec(path);
      if (req.method === "GET" && match) {
        if (ctx.pollRetryAfter !== null) {
          sendJson(res, 429, { code: 429, message: "Too many requests" }, { "retry-after": String(ctx.pollRetryAfter) });
          return true;
        }
        const task = ctx.tasks.get(decodeURIComponent(match[1]!));
        if (!task) {
          sendJson(res, 404, { code: 404, message: "Task not found" });
          return true;
        }
        const status = CODES[task.state];
        sendJson(res, 200, {
          code: 200,
          data: {
            task_id: task.id,
            status,
            ...(status === 1 ? { result: `https://media.provider.example/${task.id}.mp4` } : {}),
            ...(status === 2 ? { error: task.error } : {}),
          },
        });
        return true;
      }
      return false;
    },
  });
  return fakeProviderOf(server, {
    type: "switchyard",
    credentials: { apiKey },
    wrongCredentials: { apiKey: "sy_wrong_0123456789abcdef" },
    states: { running: "running", succeeded: "succeeded", failed: "failed" },
  });
}
