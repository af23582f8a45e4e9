/**
 * Channel type `minimax` (README "Channels"; ADR 0023): MiniMax's video generation (Hailuo).
 *
 * Documented at https://platform.minimax.io/docs/api-reference/video/generation/api/openapi.json
 * (the OpenAPI document of create, query and file retrieval),
 * https://platform.minimaxi.com/docs/api-reference/video-generation-query (the query and its
 * states) and https://platform.minimax.io/docs/api-reference/video-generation-download (file
 * retrieval). MiniMax also has a v2 API (`/v2/video_generation`, Hailuo-03,
 * https://platform.minimaxi.com/docs/api-reference/video-generation-v2-query); this type speaks
 * v1, which the Hailuo-02 models and most relays serve.
 *
 * - Auth: `Authorization: Bearer <API key>`.
 * - Create: `POST /v1/video_generation` `{model, prompt, duration: 6 | 10, resolution: "768P" |
 *   "1080P", first_frame_image?, last_frame_image?}` → `{task_id, base_resp: {status_code,
 *   status_msg}}`.
 * - Query: `GET /v1/query/video_generation?task_id=` → `{task_id, status: Preparing | Queueing |
 *   Processing | Success | Fail, file_id, video_width, video_height, base_resp}`.
 * - Result: `GET /v1/files/retrieve?file_id=` → `{file: {download_url, bytes, …}, base_resp}`.
 * - Errors: `base_resp.status_code` other than 0, in an HTTP 200 answer: 1002 and 1039 rate
 *   limits, 1004 and 2049 authentication, 1008 balance, 1026/1027 sensitive content, 2013 bad
 *   parameters, 1000/1013 server errors. An HTTP error status is read as for every type.
 *
 * Undocumented, or left open by the docs, and what we chose:
 * - A non-zero `base_resp` is a failure with reason `code` and MiniMax's own words (`business
 *   code 1004: …`); a rate limit carries the answer's `Retry-After` when there is one (MiniMax
 *   documents none, so the poller's usual interval applies).
 * - Usage: MiniMax reports none; the seconds asked (MiniMax bills per video of that duration)
 *   are kept in the provider id `<task_id>:<seconds>` and reported as the task's seconds.
 * - Seconds 6 or 10 (10 not at 1080P); 720P is sent as MiniMax's `768P`, 480P is refused; no
 *   aspect ratio field: text-to-video is 16:9 (other ratios refused), image-to-video keeps the
 *   image's; one reference image or `frame_start` as `first_frame_image`, `frame_end` as
 *   `last_frame_image` only with one; no audio or video references; `count` 1; images (model_id of
 *   an image model) refused. All before any debit.
 * - Nothing names a task by the caller's reference: no `findSubmission`, the recovery sweep resends.
 * - `download_url` expires (about 9 hours): kept in the result store, served at a signed URL.
 * - The probe is the file list (`GET /v1/files/list?purpose=video_generation`), which creates nothing.
 */
import type { ResultStore } from "./result-store.ts";
import type { GenerationRequest } from "../validation.ts";
import { createProviderClient, fieldsOf, providerId, type ProviderAnswer, type ProviderClient } from "./provider-call.ts";
import type { GenerationUpstream, TaskStatusCode } from "./types.ts";

/** MiniMax task states → ours (docs/api/generation.md §3). */
export const MINIMAX_STATES: Readonly<Record<string, TaskStatusCode>> = {
  Preparing: 4,
  Queueing: 0,
  Processing: 3,
  Success: 1,
  Fail: 2,
};

const RESOLUTIONS: Readonly<Record<string, string>> = { "720P": "768P", "1080P": "1080P" };
const DEFAULT_SECONDS = 6;

/** The field of a request MiniMax cannot do, or null. */
export function minimaxUnsupported(request: GenerationRequest): string | null {
  const r = request.references;
  if (request.kind === "image") return "model_id";
  if (request.count !== 1) return "count";
  if (!RESOLUTIONS[request.resolution]) return "resolution";
  if (request.seconds !== null && request.seconds !== 6 && request.seconds !== 10) return "seconds";
  if (request.seconds === 10 && request.resolution === "1080P") return "seconds";
  if (r.audios.length > 0) return "reference_audios";
  if (r.videos.length > 0) return "reference_videos";
  const images = r.images.length + (r.frameStart ? 1 : 0);
  if (images > 1) return "reference_images";
  if (r.frameEnd && images === 0) return "frame_end";
  if (images === 0 && request.size && request.size !== "16:9") return "size";
  return null;
}

/** The model sent when the channel maps none. */
export function minimaxDefaultModel(): string {
  return "MiniMax-Hailuo-02";
}

/** The request body of a submission. */
export function minimaxBody(request: GenerationRequest, model: string): Record<string, unknown> {
  const r = request.references;
  const body: Record<string, unknown> = {
    model,
    prompt: request.prompt,
    duration: request.seconds ?? DEFAULT_SECONDS,
    resolution: RESOLUTIONS[request.resolution],
  };
  const first = r.images[0] ?? r.frameStart;
  if (first) body.first_frame_image = first;
  if (r.frameEnd) body.last_frame_image = r.frameEnd;
  return body;
}

/** MiniMax's words in `base_resp`. */
function minimaxMessage(body: Record<string, unknown>): string | null {
  const base = fieldsOf(body.base_resp);
  return typeof base.status_msg === "string" ? `code ${String(base.status_code).slice(0, 20)}: ${base.status_msg}` : null;
}

/** The body when `base_resp.status_code` is 0. @throws UpstreamError `code` with MiniMax's words */
function checked(client: ProviderClient, answer: ProviderAnswer): Record<string, unknown> {
  const base = fieldsOf(answer.body.base_resp);
  if (base.status_code === 0) return answer.body;
  const said = typeof base.status_msg === "string" ? `: ${base.status_msg}` : "";
  throw client.failed(`business code ${String(base.status_code).slice(0, 20)}${said}`, "code", answer.retryAfterMs);
}

/** Settings of the adapter. */
export interface MiniMaxOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  modelFor(request: GenerationRequest): string;
  results: ResultStore;
}

/** Creates the adapter. */
export function createMiniMaxUpstream(options: MiniMaxOptions): GenerationUpstream {
  const client = createProviderClient({
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs,
    secrets: [options.apiKey],
    headers: () => ({ authorization: `Bearer ${options.apiKey}` }),
    messageOf: minimaxMessage,
  });
  const call = async (method: string, path: string, body?: unknown) => checked(client, await client.json(method, path, body));

  return {
    name: "minimax",
    async submit(request) {
      const body = minimaxBody(request, options.modelFor(request));
      const id = providerId((await call("POST", "/v1/video_generation", body)).task_id);
      if (id === null) throw client.failed("no task_id in the answer", "body");
      return { upstreamTaskId: `${id}:${body.duration}` };
    },
    async fetchStatus(upstreamTaskId) {
      const colon = upstreamTaskId.lastIndexOf(":");
      const id = colon < 0 ? upstreamTaskId : upstreamTaskId.slice(0, colon);
      const seconds = colon < 0 ? Number.NaN : Number(upstreamTaskId.slice(colon + 1));
      const answer = await client.json("GET", `/v1/query/video_generation?task_id=${encodeURIComponent(id)}`);
      const body = answer.body;
      const status = MINIMAX_STATES[String(body.status)];
      if (status === undefined) {
        checked(client, answer);
        throw client.failed(`unknown status ${String(body.status).slice(0, 40)}`, "body");
      }
      if (status === 2) {
        const base = fieldsOf(body.base_resp);
        const said = base.status_code !== 0 && typeof base.status_msg === "string" ? base.status_msg : "generation failed";
        return { status, error: client.clean(said) };
      }
      if (status !== 1) return { status };
      const fileId = providerId(body.file_id);
      if (fileId === null) throw client.failed("succeeded without file_id", "body");
      const url = await options.results.keep(
        upstreamTaskId,
        async () => {
          const file = fieldsOf((await call("GET", `/v1/files/retrieve?file_id=${encodeURIComponent(fileId)}`)).file);
          if (typeof file.download_url !== "string") throw client.failed("file without download_url", "body");
          return client.download(file.download_url, false);
        },
        "mp4",
      );
      return { status: 1, result: url, usage: Number.isFinite(seconds) && seconds > 0 ? { seconds } : null };
    },
    async probe() {
      await call("GET", "/v1/files/list?purpose=video_generation");
    },
  };
}
