/**
 * A fake Kling provider (channel type `kling`): `POST /v1/videos/text2video`,
 * `/v1/videos/image2video`, `/v1/images/generations`, the task reads `GET …/{task_id}` (or
 * `{external_task_id}`), the task list, and a CDN path for results. Every call must carry an
 * HS256 JWT of `{iss: access key, exp, nbf}` signed with the secret key, checked as Kling's
 * documented codes say: 401 with 1001 (empty), 1002 (invalid), 1003 (not yet valid), 1004
 * (expired); 429 with 1302 and `Retry-After`; 500 with 5000. Bodies are Kling's envelope
 * `{code, message, request_id, data}`. `skewClock` moves the fake's clock, so a token the adapter
 * made is past its `exp` for the fake.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { sendJson, startFakeServer, type FakeProvider, type FakeTask } from "./base.ts";

/** The Kling fake: the uniform handle plus its own clock. */
export interface FakeKling extends FakeProvider {
  /** Seconds added to the fake's clock when it checks a token's `exp` and `nbf`. */
  skewClock(seconds: number): void;
  /** Points reported as `final_unit_deduction` of tasks that succeed from now on (null: none). */
  reportPoints(points: number | null): void;
}

const envelope = (code: number, message: string, data: unknown = null) => ({
  code,
  message,
  request_id: `req-${Math.random().toString(36).slice(2, 10)}`,
  data,
});

/** Starts the fake. */
export async function startFakeKling(): Promise<FakeKling> {
  const accessKey = `ak${Math.random().toString(36).slice(2, 14)}`;
  const secretKey = `skk${Math.random().toString(36).slice(2, 18)}`;
  let skew = 0;
  let points: number | null = null;
  const pointsOf = new Map<string, number>();

  /** Kling's verdict on an Authorization header: null when valid, else [code, message]. */
  function authFailure(header: string | undefined): [number, string] | null {
    const token = /^Bearer (.+)$/.exec(header ?? "")?.[1];
    if (!token) return [1001, "Authorization is empty"];
    const [head, payload, sig] = token.split(".");
    if (!head || !payload || !sig) return [1002, "Authorization is invalid"];
    const expected = Buffer.from(createHmac("sha256", secretKey).update(`${head}.${payload}`).digest("base64url"));
    if (expected.length !== Buffer.from(sig).length || !timingSafeEqual(expected, Buffer.from(sig))) return [1002, "Authorization is invalid"];
    let claims: { iss?: string; exp?: number; nbf?: number };
    try {
      if (JSON.parse(Buffer.from(head, "base64url").toString()).alg !== "HS256") return [1002, "Authorization is invalid"];
      claims = JSON.parse(Buffer.from(payload, "base64url").toString());
    } catch {
      return [1002, "Authorization is invalid"];
    }
    if (claims.iss !== accessKey) return [1002, "Authorization is invalid"];
    const now = Math.floor(Date.now() / 1000) + skew;
    if (typeof claims.nbf === "number" && claims.nbf > now) return [1003, "Authorization is not yet valid"];
    if (typeof claims.exp !== "number" || claims.exp <= now) return [1004, "Authorization has expired"];
    return null;
  }

  const server = await startFakeServer({
    handle(req, res, body, ctx) {
      const [path, query = ""] = (req.url ?? "/").split("?") as [string, string?];
      const cdn = /^\/cdn\/([\w-]+)\.(mp4|png)$/.exec(path);
      if (req.method === "GET" && cdn) {
        res.writeHead(200, { "content-type": cdn[2] === "png" ? "image/png" : "video/mp4", "content-length": ctx.content.length });
        res.end(ctx.content);
        return true;
      }
      const auth = authFailure(req.headers.authorization);
      if (auth) {
        sendJson(res, 401, envelope(auth[0], auth[1]));
        return true;
      }
      const route = /^\/v1\/(videos\/text2video|videos\/image2video|images\/generations)(?:\/([^/]+))?$/.exec(path);
      if (!route) return false;
      const [, action, id] = route;
      const view = (task: FakeTask) => {
        const done = task.state === "succeed";
        const media = task.kind === "image" ? "png" : "mp4";
        const result =
          task.kind === "image"
            ? { images: Array.from({ length: Number(task.body.n ?? 1) }, (_, index) => ({ index, url: `${ctx.url}/cdn/${task.id}-${index}.${media}` })) }
            : { videos: [{ id: `v${task.id}`, url: `${ctx.url}/cdn/${task.id}.${media}`, duration: `${Number(task.body.duration ?? 5)}.042` }] };
        return {
          task_id: task.id,
          task_status: task.state,
          task_status_msg: task.error ?? "",
          task_info: task.reference ? { external_task_id: task.reference } : {},
          ...(done ? { task_result: result } : {}),
          ...(done && pointsOf.has(task.id) ? { final_unit_deduction: String(pointsOf.get(task.id)) } : {}),
          created_at: 1764000000000,
          updated_at: 1764000000000,
        };
      };
      if (req.method === "POST" && !id) {
        const next = ctx.takeNext();
        if (next.kind === "rate_limit") {
          sendJson(res, 429, envelope(1302, "The API request is too fast, please slow down the request rate"), {
            "retry-after": String(next.retryAfterSeconds),
          });
          return true;
        }
        if (next.kind === "server_error") {
          sendJson(res, next.status, envelope(5000, "Server internal error"));
          return true;
        }
        if (!body?.prompt && action !== "videos/image2video") {
          sendJson(res, 400, envelope(1201, "prompt is required"));
          return true;
        }
        const taskId = ctx.newId();
        if (next.kind !== "hang") {
          ctx.tasks.set(taskId, {
            id: taskId,
            reference: body.external_task_id ?? null,
            state: "submitted",
            kind: action === "images/generations" ? "image" : "video",
            body,
          });
        }
        if (next.kind === "hang" || next.kind === "accept_silently") {
          ctx.hold(res);
          return true;
        }
        sendJson(res, 200, envelope(0, "SUCCEED", view(ctx.tasks.get(taskId)!)));
        return true;
      }
      if (req.method === "GET" && !id) {
        const size = Number(new URLSearchParams(query).get("pageSize") ?? 30);
        sendJson(res, 200, envelope(0, "SUCCEED", [...ctx.tasks.values()].slice(-size).map(view)));
        return true;
      }
      if (req.method === "GET" && id) {
        if (ctx.pollRetryAfter !== null) {
          sendJson(res, 429, envelope(1302, "The API request is too fast, please slow down the request rate"), { "retry-after": String(ctx.pollRetryAfter) });
          return true;
        }
        const wanted = decodeURIComponent(id);
        const task = [...ctx.tasks.values()].find(
          (t) => (t.id === wanted || t.reference === wanted) && (action === "images/generations") === (t.kind === "image"),
        );
        const sameAction = task && (task.kind === "image" || (action === "videos/image2video") === Boolean(task.body.image));
        if (!task || !sameAction) {
          sendJson(res, 404, envelope(1203, "The requested resource does not exist"));
          return true;
        }
        sendJson(res, 200, envelope(0, "SUCCEED", view(task)));
        return true;
      }
      return false;
    },
  });
  return {
    type: "kling",
    url: server.url,
    credentials: { accessKey, secretKey },
    wrongCredentials: { accessKey, secretKey: "not-the-secret-key-0123" },
    requests: server.requests,
    tasks: server.tasks,
    content: server.content,
    next: (answer) => server.ctx.setNext(answer),
    rateLimitPolls: (seconds) => {
      server.ctx.pollRetryAfter = seconds;
    },
    settle(id, outcome) {
      const task = server.tasks.get(id)!;
      if (outcome === "running") task.state = "processing";
      else if (outcome === "succeeded") {
        task.state = "succeed";
        if (points !== null) pointsOf.set(id, points);
      } else Object.assign(task, { state: "failed", error: outcome.failed });
    },
    lastTaskId: () => [...server.tasks.keys()].at(-1)!,
    waitForRequests: server.waitForRequests,
    close: server.close,
    skewClock: (seconds) => {
      skew = seconds;
    },
    reportPoints: (value) => {
      points = value;
    },
  };
}
