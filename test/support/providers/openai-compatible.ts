/**
 * A fake OpenAI-compatible provider (channel type `openai-compatible`): the Videos API (`POST
 * /v1/videos`, `GET /v1/videos/{id}`, `GET /v1/videos/{id}/content`), the Images API (`POST
 * /v1/images/generations`, synchronous, `b64_json`) and `GET /v1/models`, with OpenAI's error body
 * `{"error": {"message", "type", "param", "code"}}`: 401 `invalid_api_key` (echoing the key it
 * was given, as OpenAI does), 429 `rate_limit_exceeded` with `Retry-After`, 500 `server_error`.
 */
import { sendJson, startFakeServer, type FakeProvider, fakeProviderOf } from "./base.ts";

const error = (message: string, type: string, code: string | null) => ({ error: { message, type, param: null, code } });

/** Starts the fake. */
export async function startFakeOpenAi(): Promise<FakeProvider> {
  const apiKey = `sk-fake-${Math.random().toString(36).slice(2, 12)}`;
  const server = await startFakeServer({
    handle(req, res, body, ctx) {
      const path = (req.url ?? "/").split("?")[0]!;
      const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      if (given !== apiKey) {
        sendJson(
          res,
          401,
          error(
            `Incorrect API key provided: ${given ?? ""}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            "invalid_request_error",
            "invalid_api_key",
          ),
        );
        return true;
      }
      const video = (id: string) => {
        const task = ctx.tasks.get(id)!;
        return {
          id,
          object: "video",
          model: task.body.model,
          status: task.state,
          progress: task.state === "completed" ? 100 : 0,
          created_at: 1764000000,
          seconds: task.body.seconds ?? "4",
          size: task.body.size ?? "720x1280",
          ...(task.state === "failed" ? { error: { code: "video_generation_failed", message: task.error } } : {}),
        };
      };
      if (req.method === "GET" && path === "/v1/models") {
        sendJson(res, 200, { object: "list", data: [{ id: "sora-2", object: "model", owned_by: "openai" }] });
        return true;
      }
      if (req.method === "POST" && (path === "/v1/videos" || path === "/v1/images/generations")) {
        const next = ctx.takeNext();
        if (next.kind === "rate_limit") {
          sendJson(res, 429, error("Rate limit reached for requests", "requests", "rate_limit_exceeded"), { "retry-after": String(next.retryAfterSeconds) });
          return true;
        }
        if (next.kind === "server_error") {
          sendJson(res, next.status, error("The server had an error while processing your request.", "server_error", null));
          return true;
        }
        if (path === "/v1/images/generations") {
          if (next.kind === "hang" || next.kind === "accept_silently") {
            ctx.hold(res);
            return true;
          }
          const n = Number(body?.n ?? 1);
          const data = Array.from({ length: n }, () => ({ b64_json: ctx.content.toString("base64") }));
          sendJson(res, 200, { created: 1764000000, data, usage: { total_tokens: 4160, input_tokens: 50, output_tokens: 4110 } });
          return true;
        }
        const id = `video_${ctx.newId()}`;
        if (next.kind !== "hang") ctx.tasks.set(id, { id, reference: null, state: "queued", kind: "video", body });
        if (next.kind === "hang" || next.kind === "accept_silently") {
          ctx.hold(res);
          return true;
        }
        sendJson(res, 200, video(id));
        return true;
      }
      const match = /^\/v1\/videos\/([^/]+)(\/content)?$/.exec(path);
      if (req.method === "GET" && match) {
        if (ctx.pollRetryAfter !== null) {
          sendJson(res, 429, error("Rate limit reached for requests", "requests", "rate_limit_exceeded"), { "retry-after": String(ctx.pollRetryAfter) });
          return true;
        }
        const id = decodeURIComponent(match[1]!);
        const task = ctx.tasks.get(id);
        if (!task) {
          sendJson(res, 404, error(`Video with id '${id}' not found.`, "invalid_request_error", "not_found"));
          return true;
        }
        if (!match[2]) {
          sendJson(res, 200, video(id));
          return true;
        }
        if (task.state !== "completed") {
          sendJson(res, 404, error("Video is not ready yet.", "invalid_request_error", "video_not_ready"));
          return true;
        }
        res.writeHead(200, { "content-type": "video/mp4", "content-length": ctx.content.length });
        res.end(ctx.content);
        return true;
      }
      return false;
    },
  });
  return fakeProviderOf(server, {
    type: "openai-compatible",
    credentials: { apiKey },
    wrongCredentials: { apiKey: "sk-wrong-0123456789abcdef" },
    states: { running: "in_progress", succeeded: "completed", failed: "failed" },
  });
}
