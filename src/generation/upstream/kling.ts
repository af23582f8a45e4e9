/**
 * Channel type `kling` (README "Channels"; ADR 0023): Kling AI's task API.
 *
 * Documented at https://app.klingai.com/global/dev/document-api/apiReference/commonInfo (auth,
 * error codes; mirrored at https://docs.qingque.cn/d/home/eZQCQxBrX8eeImjK6Ddz5iOi5), the
 * text-to-video, image-to-video and image-generation references beside it.
 *
 * - Auth: every call carries `Authorization: Bearer <JWT>`, an HS256 token of `{iss: access
 *   key, exp: now + 1800, nbf: now − 5}` signed with the secret key. Made with node:crypto's HMAC
 *   (./jwt.ts): we only sign, never verify a token someone else made, which is the part of JWT
 *   libraries that goes wrong; the shared tree had no JWT library. A token is reused until 5
 *   minutes before its `exp`.
 * - Video: `POST /v1/videos/text2video` `{model_name, prompt, duration: "5", aspect_ratio, mode,
 *   external_task_id}`; with a reference image or `frame_start`, `POST /v1/videos/image2video`
 *   with `image` (and `image_tail` for `frame_end`). `GET /v1/videos/{action}/{task_id}`.
 * - Image: `POST /v1/images/generations` `{model_name, prompt, n, aspect_ratio, image?}`;
 *   `GET /v1/images/generations/{task_id}`.
 * - Answers: `{code: 0, message, request_id, data: {task_id, task_status: submitted | processing
 *   | succeed | failed, task_status_msg, task_result: {videos: [{url, duration}], images: [{url}]}}}`;
 *   errors are HTTP 401 (codes 1000-1004: bad or expired token), 429 (1100-1102 account, 1302-1303
 *   rate), 400 (1200s), 5xx (5000s), with the same body.
 * - Lost submission: we send our task id as `external_task_id`, and Kling reads a task by it in
 *   the same path (`GET /v1/videos/text2video/{external_task_id}`): each action is asked.
 *
 * Undocumented, and what we chose:
 * - The provider id we keep is `<action>:<task_id>` (t2v, i2v, img), so a poll knows the path.
 * - Result URLs expire (Kling keeps results 30 days): every result is kept in the result store
 *   and served through a signed `/media/p/...` URL.
 * - Usage: `final_unit_deduction` when the answer has it (points), else the seconds of the
 *   videos or the number of images.
 * - `mode`: 720P → `std`, 1080P → `pro`; 480P is refused. Seconds 5 or 10; aspect ratios 16:9,
 *   9:16, 1:1 (video; image-to-video takes the image's ratio, so `size` is not sent there);
 *   `count` 1 for video; one reference image (or `frame_start`), `frame_end` only with one; no audio
 *   or video references. Everything else is refused with 400 before any debit.
 */
import type { ResultStore } from "./result-store.ts";
import type { GenerationRequest } from "../validation.ts";
import { signHs256 } from "./jwt.ts";
import { createProviderClient, fieldsOf, providerId, type ProviderClient } from "./provider-call.ts";
import type { GenerationUpstream, ProviderUsage, TaskStatusCode, UpstreamTaskState } from "./types.ts";

/** Kling task states → ours (docs/api/generation.md §3). */
export const KLING_STATES: Readonly<Record<string, TaskStatusCode>> = {
  submitted: 4,
  processing: 3,
  succeed: 1,
  failed: 2,
};

/** Kling's actions and their paths. */
const ACTIONS = { t2v: "/v1/videos/text2video", i2v: "/v1/videos/image2video", img: "/v1/images/generations" } as const;
type Action = keyof typeof ACTIONS;

const VIDEO_RATIOS = ["16:9", "9:16", "1:1"];
const IMAGE_RATIOS = ["16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9"];
const MODES: Readonly<Record<string, string>> = { "720P": "std", "1080P": "pro" };

/** How long a token is valid (s), and how long before its end a new one is made. */
const TOKEN_SECONDS = 1800;
const TOKEN_RENEW_SECONDS = 300;

/** The field of a request Kling cannot do, or null. */
export function klingUnsupported(request: GenerationRequest): string | null {
  const r = request.references;
  const images = r.images.length + (r.frameStart ? 1 : 0);
  if (r.audios.length > 0) return "reference_audios";
  if (r.videos.length > 0) return "reference_videos";
  if (images > 1) return "reference_images";
  if (request.kind === "image") {
    if (request.size && request.size !== "auto" && !IMAGE_RATIOS.includes(request.size)) return "size";
    return null;
  }
  if (request.count !== 1) return "count";
  if (!MODES[request.resolution]) return "resolution";
  if (request.seconds !== null && request.seconds !== 5 && request.seconds !== 10) return "seconds";
  if (request.size && !VIDEO_RATIOS.includes(request.size)) return "size";
  if (r.frameEnd && images === 0) return "frame_end";
  return null;
}

/** The model sent when the channel maps none. */
export function klingDefaultModel(request: GenerationRequest): string {
  return request.kind === "image" ? "kling-v1" : "kling-v1-6";
}

/** Settings of the adapter. */
export interface KlingOptions {
  baseUrl: string;
  accessKey: string;
  secretKey: string;
  timeoutMs: number;
  modelFor(request: GenerationRequest): string;
  results: ResultStore;
}

/** The request body and action of a submission. */
function bodyOf(request: GenerationRequest, model: string, taskId: string): { action: Action; body: Record<string, unknown> } {
  const r = request.references;
  const image = r.images[0] ?? r.frameStart;
  if (request.kind === "image") {
    const body: Record<string, unknown> = { model_name: model, prompt: request.prompt, n: request.count };
    if (request.size && request.size !== "auto") body.aspect_ratio = request.size;
    if (image) body.image = image;
    return { action: "img", body };
  }
  const body: Record<string, unknown> = { model_name: model, prompt: request.prompt, mode: MODES[request.resolution], external_task_id: taskId };
  if (request.seconds !== null) body.duration = String(request.seconds);
  if (!image) {
    if (request.size) body.aspect_ratio = request.size;
    return { action: "t2v", body };
  }
  body.image = image;
  if (r.frameEnd) body.image_tail = r.frameEnd;
  return { action: "i2v", body };
}

/** Reads Kling's envelope: `data` when `code` is 0. @throws UpstreamError `code` */
function dataOf(client: ProviderClient, body: Record<string, unknown>): Record<string, unknown> {
  if (body.code !== 0) {
    const message = typeof body.message === "string" ? `: ${body.message}` : "";
    throw client.failed(`business code ${String(body.code).slice(0, 20)}${message}`, "code");
  }
  return fieldsOf(body.data);
}

/** What Kling reported a finished task used. */
function usageOf(data: Record<string, unknown>, videos: Record<string, unknown>[], images: number): ProviderUsage | null {
  const points = Number(data.final_unit_deduction);
  if (data.final_unit_deduction != null && Number.isFinite(points)) return { points };
  const seconds = videos.reduce((sum, v) => sum + (Number(v.duration) || 0), 0);
  if (seconds > 0) return { seconds: Math.round(seconds * 1000) / 1000 };
  return images > 0 ? { images } : null;
}

/** Creates the adapter. */
export function createKlingUpstream(options: KlingOptions): GenerationUpstream {
  let token: { value: string; renewAt: number } | null = null;
  const bearer = () => {
    const now = Math.floor(Date.now() / 1000);
    if (!token || now >= token.renewAt) {
      token = {
        value: signHs256({ iss: options.accessKey, exp: now + TOKEN_SECONDS, nbf: now - 5 }, options.secretKey),
        renewAt: now + TOKEN_SECONDS - TOKEN_RENEW_SECONDS,
      };
    }
    return token.value;
  };
  const client = createProviderClient({
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs,
    secrets: [options.accessKey, options.secretKey],
    headers: () => ({ authorization: `Bearer ${bearer()}` }),
    messageOf: (body) => {
      const code = body.code == null ? "" : `code ${String(body.code).slice(0, 20)}: `;
      return typeof body.message === "string" ? `${code}${body.message}` : null;
    },
  });

  return {
    name: "kling",
    async submit(request, taskId) {
      const { action, body } = bodyOf(request, options.modelFor(request), taskId);
      const data = dataOf(client, (await client.json("POST", ACTIONS[action], body)).body);
      const id = providerId(data.task_id);
      if (id === null) throw client.failed("no task_id in the answer", "body");
      return { upstreamTaskId: `${action}:${id}` };
    },
    async findSubmission(taskId) {
      for (const action of ["t2v", "i2v"] as const) {
        const { status, body } = await client.json("GET", `${ACTIONS[action]}/${encodeURIComponent(taskId)}`, undefined, [400, 404]);
        if (status !== 200 || body.code !== 0) continue;
        const id = providerId(fieldsOf(body.data).task_id);
        if (id !== null) return `${action}:${id}`;
      }
      return null;
    },
    async fetchStatus(upstreamTaskId) {
      const colon = upstreamTaskId.indexOf(":");
      const action = upstreamTaskId.slice(0, colon) as Action;
      const id = upstreamTaskId.slice(colon + 1);
      if (!ACTIONS[action]) throw client.failed(`not a Kling task id: ${upstreamTaskId.slice(0, 40)}`, "body");
      const data = dataOf(client, (await client.json("GET", `${ACTIONS[action]}/${encodeURIComponent(id)}`)).body);
      const status = KLING_STATES[String(data.task_status)];
      if (status === undefined) throw client.failed(`unknown task_status ${String(data.task_status).slice(0, 40)}`, "body");
      if (status === 2)
        return { status, error: client.clean(typeof data.task_status_msg === "string" && data.task_status_msg ? data.task_status_msg : "generation failed") };
      if (status !== 1) return { status };
      const result = fieldsOf(data.task_result);
      const videos = Array.isArray(result.videos) ? result.videos.map(fieldsOf) : [];
      const images = Array.isArray(result.images) ? result.images.map(fieldsOf) : [];
      const items = action === "img" ? images : videos;
      const urls: string[] = [];
      for (const [n, item] of items.entries()) {
        if (typeof item.url !== "string") throw client.failed("a result without url", "body");
        urls.push(await options.results.keep(`${upstreamTaskId}-${n}`, () => client.download(item.url as string, false), action === "img" ? "png" : "mp4"));
      }
      if (urls.length === 0) throw client.failed("succeeded without a result", "body");
      const state: UpstreamTaskState = { status: 1, result: urls[0], usage: usageOf(data, videos, images.length) };
      if (action === "img") state.images = urls;
      return state;
    },
    async probe() {
      // The cheapest authenticated read: the first page of the task list (no task is made).
      dataOf(client, (await client.json("GET", `${ACTIONS.t2v}?pageNum=1&pageSize=1`)).body);
    },
  };
}
