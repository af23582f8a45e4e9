/**
 * Channel type `ark` (README "Channels"; ADR 0023): Volcengine Ark's content-generation tasks
 * (Seedance video).
 *
 * Documented at https://www.volcengine.com/docs/82379/1520757 (create a video generation task)
 * and https://www.volcengine.com/docs/82379/1521309 (query a task), mirrored at
 * https://apifox.com/apidoc/docs-site/5437846/265914813e0; the BytePlus twin at
 * https://docs.byteplus.com/en/docs/ModelArk/1520757.
 *
 * - Auth: `Authorization: Bearer <Ark API key>`.
 * - Create: `POST /api/v3/contents/generations/tasks` `{model, content: [{type: "text", text},
 *   {type: "image_url", image_url: {url}, role: first_frame | last_frame | reference_image}],
 *   resolution: "720p", ratio: "16:9", duration: 5}` → `{id}`.
 * - Query: `GET /api/v3/contents/generations/tasks/{id}` → `{id, model, status: queued | running |
 *   succeeded | failed | cancelled, content: {video_url}, usage: {completion_tokens,
 *   total_tokens}, error: {code, message}, duration}`.
 * - Errors: `{"error": {"code", "message", "param", "type"}}` with the HTTP status (401
 *   `AuthenticationError`, 429 `RateLimitExceeded`, 400 `InvalidParameter`, 5xx).
 *
 * Undocumented, or left open by the docs, and what we chose:
 * - Parameters go as request fields (`resolution`, `ratio`, `duration`), the form the current
 *   docs recommend; the older `--rs 720p --rt 16:9 --dur 5` suffix of the text is not sent (the
 *   docs say fields win, and a customer's prompt could end in such words).
 * - Seconds 2-12 (Seedance 1.x pro; lite models take 5 or 10, which is the channel operator's
 *   mapping to choose); resolution 480P/720P/1080P; ratios 16:9, 4:3, 1:1, 3:4, 9:16, 21:9;
 *   `count` 1; reference images (1-4, `reference_image`) or first/last frames, not both together;
 *   audio and video references, and images (model_id of an image model), are refused with 400
 *   before any debit.
 * - Nothing names a task by the caller's reference (the list filters by ids, model and status):
 *   no `findSubmission`, the recovery sweep resends.
 * - `video_url` expires after 24 hours: kept in the result store, served at a signed URL.
 * - Usage: `usage.completion_tokens` (Ark bills video in tokens) and the `duration` answered.
 * - The probe is the first page of the task list (`page_size=1`), which creates nothing.
 */
import type { ResultStore } from "./result-store.ts";
import type { GenerationRequest } from "../validation.ts";
import { createProviderClient, fieldsOf, providerId } from "./provider-call.ts";
import type { GenerationUpstream, ProviderUsage, TaskStatusCode } from "./types.ts";

/** Ark task states → ours (docs/api/generation.md §3). */
export const ARK_STATES: Readonly<Record<string, TaskStatusCode>> = {
  queued: 0,
  running: 3,
  succeeded: 1,
  failed: 2,
  cancelled: 2,
};

const TASKS = "/api/v3/contents/generations/tasks";
const RATIOS = ["16:9", "4:3", "1:1", "3:4", "9:16", "21:9"];
const RESOLUTIONS: Readonly<Record<string, string>> = { "480P": "480p", "720P": "720p", "1080P": "1080p" };

/** The field of a request Ark cannot do, or null. */
export function arkUnsupported(request: GenerationRequest): string | null {
  const r = request.references;
  if (request.kind === "image") return "model_id";
  if (request.count !== 1) return "count";
  if (!RESOLUTIONS[request.resolution]) return "resolution";
  if (request.seconds !== null && (request.seconds < 2 || request.seconds > 12)) return "seconds";
  if (request.size && !RATIOS.includes(request.size)) return "size";
  if (r.audios.length > 0) return "reference_audios";
  if (r.videos.length > 0) return "reference_videos";
  if (r.images.length > 4) return "reference_images";
  if (r.images.length > 0 && (r.frameStart || r.frameEnd)) return "reference_images";
  if (r.frameEnd && !r.frameStart) return "frame_end";
  return null;
}

/** The model sent when the channel maps none. */
export function arkDefaultModel(request: GenerationRequest): string {
  // The lite image-to-video model takes reference images and a last frame; pro takes a first frame.
  const r = request.references;
  return r.images.length > 0 || r.frameEnd ? "doubao-seedance-1-0-lite-i2v-250428" : "doubao-seedance-1-0-pro-250528";
}

/** Settings of the adapter. */
export interface ArkOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  modelFor(request: GenerationRequest): string;
  results: ResultStore;
}

/** The request body of a submission. */
export function arkBody(request: GenerationRequest, model: string): Record<string, unknown> {
  const r = request.references;
  const image = (url: string, role: string) => ({ type: "image_url", image_url: { url }, role });
  const content: unknown[] = [{ type: "text", text: request.prompt }];
  if (r.frameStart) content.push(image(r.frameStart, "first_frame"));
  if (r.frameEnd) content.push(image(r.frameEnd, "last_frame"));
  for (const url of r.images) content.push(image(url, "reference_image"));
  const body: Record<string, unknown> = { model, content, resolution: RESOLUTIONS[request.resolution] };
  if (request.size) body.ratio = request.size;
  if (request.seconds !== null) body.duration = request.seconds;
  return body;
}

/** The provider's words in an Ark error body. */
function arkMessage(body: Record<string, unknown>): string | null {
  const error = fieldsOf(body.error);
  if (typeof error.message !== "string") return null;
  return typeof error.code === "string" ? `${error.code}: ${error.message}` : error.message;
}

/** What Ark reported a finished task used. */
function usageOf(task: Record<string, unknown>): ProviderUsage | null {
  const usage: ProviderUsage = {};
  const tokens = Number(fieldsOf(task.usage).completion_tokens);
  if (Number.isSafeInteger(tokens) && tokens >= 0) usage.tokens = tokens;
  const seconds = Number(task.duration);
  if (Number.isFinite(seconds) && seconds > 0) usage.seconds = seconds;
  return Object.keys(usage).length > 0 ? usage : null;
}

/** Creates the adapter. */
export function createArkUpstream(options: ArkOptions): GenerationUpstream {
  const client = createProviderClient({
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs,
    secrets: [options.apiKey],
    headers: () => ({ authorization: `Bearer ${options.apiKey}` }),
    messageOf: arkMessage,
  });
  return {
    name: "ark",
    async submit(request) {
      const { body } = await client.json("POST", TASKS, arkBody(request, options.modelFor(request)));
      const id = providerId(body.id);
      if (id === null) throw client.failed("no id in the answer", "body");
      return { upstreamTaskId: id };
    },
    async fetchStatus(upstreamTaskId) {
      const { body: task } = await client.json("GET", `${TASKS}/${encodeURIComponent(upstreamTaskId)}`);
      const status = ARK_STATES[String(task.status)];
      if (status === undefined) throw client.failed(`unknown status ${String(task.status).slice(0, 40)}`, "body");
      if (status === 2) return { status, error: client.clean(arkMessage(task) ?? `generation ${String(task.status)}`) };
      if (status !== 1) return { status };
      const url = fieldsOf(task.content).video_url;
      if (typeof url !== "string") throw client.failed("succeeded without content.video_url", "body");
      const kept = await options.results.keep(upstreamTaskId, () => client.download(url, false), "mp4");
      return { status: 1, result: kept, usage: usageOf(task) };
    },
    async probe() {
      await client.json("GET", `${TASKS}?page_num=1&page_size=1`);
    },
  };
}
