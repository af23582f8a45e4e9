/**
 * A fake Volcengine Ark provider (channel type `ark`): `POST /api/v3/contents/generations/tasks`,
 * `GET …/tasks/{id}`, the task list `GET …/tasks?page_num=&page_size=`, and a CDN path for the
 * results. Ark's error body `{"error": {"code", "message", "param", "type"}}`: 401
 * `AuthenticationError`, 429 `RateLimitExceeded` with `Retry-After`, 500 `InternalServiceError`.
 */
import { sendJson, startFakeServer, type FakeProvider, fakeProviderOf } from "./base.ts";

const error = (code: string, message: string, type: string) => ({ error: { code, message, param: "", type } });
const RATE = error("RateLimitExceeded", "The request has exceeded the rate limit. Please try again later.", "TooManyRequests");

/** Starts the fake. */
export async function startFakeArk(): Promise<FakeProvider> {
  const apiKey = `ark-${Math.random().toString(36).slice(2, 14)}`;
  const server = await startFakeServer({
    handle(req, res, body, ctx) {
      const path = (req.url ?? "/").split("?")[0]!;
      if (req.method === "GET" && /^\/cdn\/[\w-]+\.mp4$/.test(path)) {
        res.writeHead(200, { "content-type": "video/mp4", "content-length": ctx.content.length });
        res.end(ctx.content);
        return true;
      }
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        sendJson(res, 401, error("AuthenticationError", "The API key in the request is missing or invalid.", "Unauthorized"));
        return true;
      }
      const view = (id: string) => {
        const task = ctx.tasks.get(id)!;
        const done = task.state === "succeeded";
        return {
          id,
          model: task.body.model,
          status: task.state,
          ...(done ? { content: { video_url: `${ctx.url}/cdn/${id}.mp4` }, usage: { completion_tokens: 108900, total_tokens: 108900 } } : {}),
          ...(task.state === "failed" ? { error: { code: "OutputVideoSensitiveContentDetected", message: task.error } } : {}),
          created_at: 1764000000,
          updated_at: 1764000000,
          ...(done
            ? { seed: 10, resolution: task.body.resolution, ratio: task.body.ratio ?? "16:9", duration: task.body.duration ?? 5, framespersecond: 24 }
            : {}),
        };
      };
      const TASKS = "/api/v3/contents/generations/tasks";
      if (req.method === "POST" && path === TASKS) {
        const next = ctx.takeNext();
        if (next.kind === "rate_limit") {
          sendJson(res, 429, RATE, { "retry-after": String(next.retryAfterSeconds) });
          return true;
        }
        if (next.kind === "server_error") {
          sendJson(res, next.status, error("InternalServiceError", "The service encountered an unexpected internal error.", "InternalServerError"));
          return true;
        }
        const text = Array.isArray(body?.content) ? body.content.find((c: any) => c?.type === "text")?.text : null;
        if (typeof body?.model !== "string" || !text) {
          sendJson(res, 400, error("MissingParameter", "The request failed because it is missing one or multiple required parameters.", "BadRequest"));
          return true;
        }
        const id = `cgt-${ctx.newId()}`;
        if (next.kind !== "hang") ctx.tasks.set(id, { id, reference: null, state: "queued", kind: "video", body });
        if (next.kind === "hang" || next.kind === "accept_silently") {
          ctx.hold(res);
          return true;
        }
        sendJson(res, 200, { id });
        return true;
      }
      if (req.method === "GET" && path === TASKS) {
        sendJson(res, 200, { items: [...ctx.tasks.keys()].slice(-1).map(view), total: ctx.tasks.size });
        return true;
      }
      const match = new RegExp(`^${TASKS}/([^/]+)$`).exec(path);
      if (req.method === "GET" && match) {
        if (ctx.pollRetryAfter !== null) {
          sendJson(res, 429, RATE, { "retry-after": String(ctx.pollRetryAfter) });
          return true;
        }
        const id = decodeURIComponent(match[1]!);
        if (!ctx.tasks.has(id)) {
          sendJson(res, 404, error("ResourceNotFound", `The specified task ${id} is not found.`, "NotFound"));
          return true;
        }
        sendJson(res, 200, view(id));
        return true;
      }
      return false;
    },
  });
  return fakeProviderOf(server, {
    type: "ark",
    credentials: { apiKey },
    wrongCredentials: { apiKey: "ark-wrong-0123456789abcdef" },
    states: { running: "running", succeeded: "succeeded", failed: "failed" },
  });
}
