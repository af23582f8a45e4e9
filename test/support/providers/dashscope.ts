/**
 * A fake Alibaba DashScope provider (channel type `dashscope`): `POST
 * /api/v1/services/aigc/video-generation/video-synthesis` and `…/text2image/image-synthesis`
 * (both refused without `X-DashScope-Async: enable`, as DashScope answers a synchronous call to an
 * asynchronous-only API), `GET /api/v1/tasks/{task_id}` (`UNKNOWN` for an id it does not know), the
 * task list, and a CDN path for results. DashScope's error body `{request_id, code, message}`:
 * 401 `InvalidApiKey`, 429 `Throttling.RateQuota` with `Retry-After`, 500 `InternalError`.
 */
import { sendJson, startFakeServer, type FakeProvider, fakeProviderOf } from "./base.ts";

const requestId = () => `${Math.random().toString(16).slice(2, 10)}-0000-0000-0000-000000000000`;
const error = (code: string, message: string) => ({ request_id: requestId(), code, message });
const RATE = error("Throttling.RateQuota", "Requests rate limit exceeded, please try again later.");

/** Starts the fake. */
export async function startFakeDashScope(): Promise<FakeProvider> {
  const apiKey = `sk-${Math.random().toString(36).slice(2, 18)}`;
  const server = await startFakeServer({
    handle(req, res, body, ctx) {
      const path = (req.url ?? "/").split("?")[0]!;
      const cdn = /^\/cdn\/([\w-]+)\.(mp4|png)$/.exec(path);
      if (req.method === "GET" && cdn) {
        res.writeHead(200, { "content-type": cdn[2] === "png" ? "image/png" : "video/mp4", "content-length": ctx.content.length });
        res.end(ctx.content);
        return true;
      }
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        sendJson(res, 401, error("InvalidApiKey", "Invalid API-key provided."));
        return true;
      }
      const view = (id: string) => {
        const task = ctx.tasks.get(id)!;
        const done = task.state === "SUCCEEDED";
        const output: Record<string, unknown> = { task_id: id, task_status: task.state, submit_time: "2026-11-26 21:00:00.000" };
        if (task.state === "FAILED") Object.assign(output, { code: "DataInspectionFailed", message: task.error });
        if (done && task.kind === "video") output.video_url = `${ctx.url}/cdn/${id}.mp4`;
        const n = Number(task.body.parameters?.n ?? 1);
        if (done && task.kind === "image")
          output.results = Array.from({ length: n }, (_, i) => ({ orig_prompt: task.body.input.prompt, url: `${ctx.url}/cdn/${id}-${i}.png` }));
        const usage = !done
          ? undefined
          : task.kind === "video"
            ? { video_duration: Number(task.body.parameters?.duration ?? 5), video_ratio: task.body.parameters?.size ?? "1280*720", video_count: 1 }
            : { image_count: n };
        return { request_id: requestId(), output, ...(usage ? { usage } : {}) };
      };
      const create = path === "/api/v1/services/aigc/video-generation/video-synthesis" || path === "/api/v1/services/aigc/text2image/image-synthesis";
      if (req.method === "POST" && create) {
        const next = ctx.takeNext();
        if (next.kind === "rate_limit") {
          sendJson(res, 429, RATE, { "retry-after": String(next.retryAfterSeconds) });
          return true;
        }
        if (next.kind === "server_error") {
          sendJson(res, next.status, error("InternalError", "An internal error has occured, please try again later or contact service support."));
          return true;
        }
        if (req.headers["x-dashscope-async"] !== "enable") {
          sendJson(res, 403, error("AccessDenied", "current user api does not support synchronous calls"));
          return true;
        }
        if (typeof body?.model !== "string" || typeof body?.input?.prompt !== "string") {
          sendJson(res, 400, error("InvalidParameter", "Field required: input.prompt"));
          return true;
        }
        const id = crypto.randomUUID();
        if (next.kind !== "hang") ctx.tasks.set(id, { id, reference: null, state: "PENDING", kind: path.includes("video") ? "video" : "image", body });
        if (next.kind === "hang" || next.kind === "accept_silently") {
          ctx.hold(res);
          return true;
        }
        sendJson(res, 200, { request_id: requestId(), output: { task_id: id, task_status: "PENDING" } });
        return true;
      }
      if (req.method === "GET" && path === "/api/v1/tasks") {
        sendJson(res, 200, {
          request_id: requestId(),
          data: [...ctx.tasks.keys()].slice(-1).map((id) => view(id).output),
          total: ctx.tasks.size,
          page_no: 1,
          page_size: 1,
        });
        return true;
      }
      const match = /^\/api\/v1\/tasks\/([^/]+)$/.exec(path);
      if (req.method === "GET" && match) {
        if (ctx.pollRetryAfter !== null) {
          sendJson(res, 429, RATE, { "retry-after": String(ctx.pollRetryAfter) });
          return true;
        }
        const id = decodeURIComponent(match[1]!);
        if (!ctx.tasks.has(id)) {
          sendJson(res, 200, { request_id: requestId(), output: { task_id: id, task_status: "UNKNOWN" } });
          return true;
        }
        sendJson(res, 200, view(id));
        return true;
      }
      return false;
    },
  });
  return fakeProviderOf(server, {
    type: "dashscope",
    credentials: { apiKey },
    wrongCredentials: { apiKey: "sk-wrong0123456789abcdef" },
    states: { running: "RUNNING", succeeded: "SUCCEEDED", failed: "FAILED" },
  });
}
