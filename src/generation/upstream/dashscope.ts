/**
 * Channel type `dashscope` (README "Channels"; ADR 0023): Alibaba Cloud Model Studio's
 * asynchronous DashScope tasks, Wan video synthesis and Wan text-to-image.
 *
 * Documented at https://www.alibabacloud.com/help/zh/model-studio/text-to-video-api-reference
 * (text-to-video: create, query, errors, usage), the image-to-video and first-and-last-frame
 * references beside it (`image-to-video-api-reference`, `image-to-video-by-first-and-last-frame-api-reference`),
 * https://www.alibabacloud.com/help/zh/model-studio/text-to-image-v2-api-reference (Wan
 * text-to-image) and https://www.alibabacloud.com/help/zh/model-studio/error-code.
 *
 * - Auth: `Authorization: Bearer <API key>`; every creation carries `X-DashScope-Async: enable`.
 * - Video: `POST /api/v1/services/aigc/video-generation/video-synthesis` `{model, input: {prompt,
 *   img_url? | first_frame_url + last_frame_url?, audio_url?}, parameters: {size: "1280*720" |
 *   resolution: "720P", duration}}`; image: `POST /api/v1/services/aigc/text2image/image-synthesis`
 *   `{model, input: {prompt}, parameters: {size: "1024*1024", n}}`. Both answer `{request_id,
 *   output: {task_id, task_status}}`.
 * - Query: `GET /api/v1/tasks/{task_id}` → `{output: {task_status: PENDING | RUNNING | SUCCEEDED |
 *   FAILED | CANCELED | UNKNOWN, video_url | results: [{url}], code, message}, usage:
 *   {video_duration, video_count} | {image_count}}`.
 * - Errors: `{request_id, code, message}` with the HTTP status (401 `InvalidApiKey`, 429
 *   `Throttling.RateQuota`, 400 `InvalidParameter`, 500 `InternalError`).
 *
 * Undocumented, or left open by the docs, and what we chose:
 * - Text-to-video takes `size` (pixels, by our resolution and ratio: 480P 16:9/9:16/1:1, 720P and
 *   1080P also 4:3 and 3:4; 16:9 when the request names none); image-to-video and
 *   first-and-last-frame take `resolution` and keep the image's ratio, so `size` is not sent there.
 * - The default model depends on the mode (t2v, i2v, kf2v, t2i); a channel's mapping names one
 *   model for all of a model id's requests, so an operator maps a model id whose requests are of
 *   one mode.
 * - Seconds 5 or 10 (wan2.5); one reference image (or `frame_start`), `frame_end` only with one,
 *   one audio (`audio_url`, wan2.5) but not with `frame_end`; no video references; `count` 1 for
 *   video, 1-4 images; image ratios 1:1, 16:9, 9:16, 4:3, 3:4 and no reference images. Everything
 *   else is refused with 400 before any debit.
 * - Nothing names a task by the caller's reference (the task list filters by time, model and
 *   status): no `findSubmission`, the recovery sweep resends.
 * - `UNKNOWN` (the task expired after 24 hours or never existed) and `CANCELED` map to failed
 *   (2), so such a task is refunded rather than left open.
 * - Result URLs expire after 24 hours: kept in the result store, served at a signed URL.
 * - The probe is the first page of the task list (`page_size=1`), which creates nothing.
 */
import type { ResultStore } from "./result-store.ts";
import type { GenerationRequest } from "../validation.ts";
import { createProviderClient, fieldsOf, providerId } from "./provider-call.ts";
import type { GenerationUpstream, ProviderUsage, TaskStatusCode, UpstreamTaskState } from "./types.ts";

/** DashScope task states → ours (docs/api/generation.md §3). */
export const DASHSCOPE_STATES: Readonly<Record<string, TaskStatusCode>> = {
  PENDING: 0,
  RUNNING: 3,
  SUCCEEDED: 1,
  FAILED: 2,
  CANCELED: 2,
  UNKNOWN: 2,
};

const VIDEO_PATH = "/api/v1/services/aigc/video-generation/video-synthesis";
const IMAGE_PATH = "/api/v1/services/aigc/text2image/image-synthesis";

/** Text-to-video `size` by resolution and ratio. */
const VIDEO_SIZES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "480P": { "16:9": "832*480", "9:16": "480*832", "1:1": "624*624" },
  "720P": { "16:9": "1280*720", "9:16": "720*1280", "1:1": "960*960", "4:3": "1088*832", "3:4": "832*1088" },
  "1080P": { "16:9": "1920*1080", "9:16": "1080*1920", "1:1": "1440*1440", "4:3": "1632*1248", "3:4": "1248*1632" },
};
const IMAGE_SIZES: Readonly<Record<string, string>> = { "1:1": "1024*1024", "16:9": "1280*720", "9:16": "720*1280", "4:3": "1024*768", "3:4": "768*1024" };

type Mode = "t2v" | "i2v" | "kf2v" | "t2i";

/** Which DashScope mode a request takes. */
function modeOf(request: GenerationRequest): Mode {
  if (request.kind === "image") return "t2i";
  const r = request.references;
  if (r.frameEnd) return "kf2v";
  return r.images.length > 0 || r.frameStart ? "i2v" : "t2v";
}

/** The field of a request DashScope cannot do, or null. */
export function dashscopeUnsupported(request: GenerationRequest): string | null {
  const r = request.references;
  if (request.kind === "image") {
    if (request.size && request.size !== "auto" && !IMAGE_SIZES[request.size]) return "size";
    if (r.images.length > 0) return "reference_images";
    return null;
  }
  if (request.count !== 1) return "count";
  const sizes = VIDEO_SIZES[request.resolution];
  if (!sizes) return "resolution";
  if (request.seconds !== null && request.seconds !== 5 && request.seconds !== 10) return "seconds";
  if (r.videos.length > 0) return "reference_videos";
  if (r.audios.length > 1) return "reference_audios";
  const images = r.images.length + (r.frameStart ? 1 : 0);
  if (images > 1) return "reference_images";
  if (r.frameEnd && images === 0) return "frame_end";
  if (r.frameEnd && r.audios.length > 0) return "reference_audios";
  if (images === 0 && request.size && !sizes[request.size]) return "size";
  return null;
}

/** The model sent when the channel maps none. */
export function dashscopeDefaultModel(request: GenerationRequest): string {
  return { t2v: "wan2.5-t2v-preview", i2v: "wan2.5-i2v-preview", kf2v: "wan2.1-kf2v-plus", t2i: "wan2.2-t2i-flash" }[modeOf(request)];
}

/** The path and body of a submission. */
export function dashscopeBody(request: GenerationRequest, model: string): { path: string; body: Record<string, unknown> } {
  const r = request.references;
  const mode = modeOf(request);
  const input: Record<string, unknown> = { prompt: request.prompt };
  const parameters: Record<string, unknown> = {};
  if (mode === "t2i") {
    parameters.n = request.count;
    if (request.size && request.size !== "auto") parameters.size = IMAGE_SIZES[request.size];
    return { path: IMAGE_PATH, body: { model, input, parameters } };
  }
  const image = r.images[0] ?? r.frameStart;
  if (mode === "t2v") parameters.size = VIDEO_SIZES[request.resolution]![request.size ?? "16:9"];
  else parameters.resolution = request.resolution;
  if (mode === "i2v") input.img_url = image;
  if (mode === "kf2v") Object.assign(input, { first_frame_url: image, last_frame_url: r.frameEnd });
  if (r.audios[0]) input.audio_url = r.audios[0];
  if (request.seconds !== null) parameters.duration = request.seconds;
  return { path: VIDEO_PATH, body: { model, input, parameters } };
}

/** The provider's words in a DashScope error body or failed task's output. */
function dashscopeMessage(body: Record<string, unknown>): string | null {
  if (typeof body.message !== "string") return null;
  return typeof body.code === "string" && body.code ? `${body.code}: ${body.message}` : body.message;
}

/** Settings of the adapter. */
export interface DashScopeOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  modelFor(request: GenerationRequest): string;
  results: ResultStore;
}

/** Creates the adapter. */
export function createDashScopeUpstream(options: DashScopeOptions): GenerationUpstream {
  const client = createProviderClient({
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs,
    secrets: [options.apiKey],
    headers: () => ({ authorization: `Bearer ${options.apiKey}` }),
    messageOf: dashscopeMessage,
  });

  async function finished(id: string, output: Record<string, unknown>, usage: Record<string, unknown>): Promise<UpstreamTaskState> {
    if (typeof output.video_url === "string") {
      const url = await options.results.keep(id, () => client.download(output.video_url as string, false), "mp4");
      const seconds = Number(usage.video_duration);
      const reported: ProviderUsage | null = Number.isFinite(seconds) && seconds > 0 ? { seconds } : null;
      return { status: 1, result: url, usage: reported };
    }
    const results = Array.isArray(output.results) ? output.results.map(fieldsOf).filter((x) => typeof x.url === "string") : [];
    if (results.length === 0) throw client.failed("succeeded without video_url or results", "body");
    const images: string[] = [];
    for (const [n, item] of results.entries()) images.push(await options.results.keep(`${id}-${n}`, () => client.download(item.url as string, false), "png"));
    const count = Number(usage.image_count);
    return { status: 1, result: images[0], images, usage: { images: Number.isSafeInteger(count) && count > 0 ? count : images.length } };
  }

  return {
    name: "dashscope",
    async submit(request) {
      const { path, body } = dashscopeBody(request, options.modelFor(request));
      const answer = await client.json("POST", path, body, [], undefined, { "x-dashscope-async": "enable" });
      const id = providerId(fieldsOf(answer.body.output).task_id);
      if (id === null) throw client.failed("no output.task_id in the answer", "body");
      return { upstreamTaskId: id };
    },
    async fetchStatus(upstreamTaskId) {
      const { body } = await client.json("GET", `/api/v1/tasks/${encodeURIComponent(upstreamTaskId)}`);
      const output = fieldsOf(body.output);
      const status = DASHSCOPE_STATES[String(output.task_status)];
      if (status === undefined) throw client.failed(`unknown task_status ${String(output.task_status).slice(0, 40)}`, "body");
      if (status === 2) return { status, error: client.clean(dashscopeMessage(output) ?? `task ${String(output.task_status)}`) };
      if (status !== 1) return { status };
      return finished(upstreamTaskId, output, fieldsOf(body.usage));
    },
    async probe() {
      await client.json("GET", "/api/v1/tasks?page_no=1&page_size=1");
    },
  };
}
