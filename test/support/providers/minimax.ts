/**
 * A fake MiniMax provider (channel type `minimax`): `POST /v1/video_generation`, `GET
 * /v1/query/video_generation?task_id=`, `GET /v1/files/retrieve?file_id=`, `GET /v1/files/list`
 * and a CDN path for the files. As MiniMax documents, refusals are HTTP 200 answers whose
 * `base_resp.status_code` is not 0: 1004 (authentication failed), 1002 (rate limit), 1013
 * (internal error), 2013 (invalid parameters); a failed task is `status: "Fail"`. A rate limit
 * also carries `Retry-After` (MiniMax documents none; a gateway in front may add one), so the
 * contract suite checks the adapter keeps it when there is one.
 */
import { sendJson, startFakeServer, type FakeProvider, fakeProviderOf } from "./base.ts";

const base = (status_code: number, status_msg: string) => ({ base_resp: { status_code, status_msg } });

/** Starts the fake. */
export async function startFakeMiniMax(): Promise<FakeProvider> {
  const apiKey = `eyJhbGciOiJSUzI1NiJ9.mm${Math.random().toString(36).slice(2, 14)}`;
  const fileOf = new Map<string, string>();
  const server = await startFakeServer({
    handle(req, res, body, ctx) {
      const [path, query = ""] = (req.url ?? "/").split("?") as [string, string?];
      const params = new URLSearchParams(query);
      if (req.method === "GET" && /^\/cdn\/[\w-]+\.mp4$/.test(path)) {
        res.writeHead(200, { "content-type": "video/mp4", "content-length": ctx.content.length });
        res.end(ctx.content);
        return true;
      }
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        sendJson(res, 200, base(1004, "login fail: Please carefully check the authorization header in the request"));
        return true;
      }
      if (req.method === "POST" && path === "/v1/video_generation") {
        const next = ctx.takeNext();
        if (next.kind === "rate_limit") {
          sendJson(res, 200, base(1002, "rate limit exceeded(RPM)"), { "retry-after": String(next.retryAfterSeconds) });
          return true;
        }
        if (next.kind === "server_error") {
          sendJson(res, next.status, base(1013, "internal service error"));
          return true;
        }
        if (typeof body?.model !== "string" || ![6, 10].includes(body?.duration)) {
          sendJson(res, 200, base(2013, "invalid params, duration"));
          return true;
        }
        const id = String(BigInt(ctx.newId()) % 10n ** 15n);
        if (next.kind !== "hang") ctx.tasks.set(id, { id, reference: null, state: "Queueing", kind: "video", body });
        if (next.kind === "hang" || next.kind === "accept_silently") {
          ctx.hold(res);
          return true;
        }
        sendJson(res, 200, { task_id: id, ...base(0, "success") });
        return true;
      }
      if (req.method === "GET" && path === "/v1/query/video_generation") {
        if (ctx.pollRetryAfter !== null) {
          sendJson(res, 200, base(1002, "rate limit exceeded(RPM)"), { "retry-after": String(ctx.pollRetryAfter) });
          return true;
        }
        const task = ctx.tasks.get(params.get("task_id") ?? "");
        if (!task) {
          sendJson(res, 200, base(2013, "invalid params, task_id not found"));
          return true;
        }
        const done = task.state === "Success";
        if (done && !fileOf.has(task.id)) fileOf.set(task.id, String(300000000000000 + fileOf.size));
        const failed = task.state === "Fail" ? base(1027, task.error ?? "output video sensitive") : base(0, "success");
        sendJson(res, 200, {
          task_id: task.id,
          status: task.state,
          file_id: done ? fileOf.get(task.id) : "",
          video_width: done ? 1366 : 0,
          video_height: done ? 768 : 0,
          ...failed,
        });
        return true;
      }
      if (req.method === "GET" && path === "/v1/files/retrieve") {
        const fileId = params.get("file_id");
        const taskId = [...fileOf.entries()].find(([, f]) => f === fileId)?.[0];
        if (!taskId) {
          sendJson(res, 200, base(2013, "invalid params, file_id"));
          return true;
        }
        sendJson(res, 200, {
          file: {
            file_id: Number(fileId),
            bytes: ctx.content.length,
            created_at: 1764000000,
            filename: "output_aigc.mp4",
            purpose: "video_generation",
            download_url: `${ctx.url}/cdn/${taskId}.mp4`,
          },
          ...base(0, "success"),
        });
        return true;
      }
      if (req.method === "GET" && path === "/v1/files/list") {
        sendJson(res, 200, { files: [], ...base(0, "success") });
        return true;
      }
      return false;
    },
  });
  return fakeProviderOf(server, {
    type: "minimax",
    credentials: { apiKey },
    wrongCredentials: { apiKey: "eyJhbGciOiJSUzI1NiJ9.wrong0123456789" },
    states: { running: "Processing", succeeded: "Success", failed: "Fail" },
  });
}
