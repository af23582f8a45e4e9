/**
 * Channel type `openai-compatible` (README "Channels"; ADR 0023): OpenAI's Videos API and Images
 * API, the shape most relays (new-api included) expose.
 *
 * Documented at https://developers.openai.com/api/reference/resources/videos (create, retrieve,
 * content), https://developers.openai.com/api/docs/guides/video-generation and
 * https://developers.openai.com/api/reference/resources/images (generations); the relay shape at
 * https://docs.newapi.pro/en/docs/api/ai-model/videos/sora/get-video.
 *
 * - Video: `POST /v1/videos` `{model, prompt, seconds: "4", size: "1280x720"}` → a video object
 *   `{id, status: queued|in_progress|completed|failed, error: {message}}`; `GET /v1/videos/{id}`;
 *   the MP4 at `GET /v1/videos/{id}/content`, behind the key: kept in the result store and served
 *   through a signed `/media/p/...` URL.
 * - Image: `POST /v1/images/generations` `{model, prompt, n, size}` answers synchronously
 *   (`data[].url` or `data[].b64_json`, `usage.total_tokens`): the images are kept at submission
 *   and the "task" is finished from the first poll on. Its provider id is `images:<our task id>:<n>:<tokens>`.
 * - Errors: `{"error": {"message", "type", "code"}}` with the HTTP status; 429 with `Retry-After`.
 *
 * Undocumented, and what we chose:
 * - OpenAI's create takes `input_reference` as a multipart file upload; relays take a URL. We
 *   send JSON with `input_reference: "<url>"` (one reference image or `frame_start`), which a relay
 *   fetches itself; an operator fronting OpenAI directly should not map models that need references.
 * - Seconds are `"4"`, `"8"`, `"12"` (sora-2; 16 and 20 for the newer snapshots); sizes
 *   720x1280, 1280x720 (720P), 1024x1792, 1792x1024, 1080x1920, 1920x1080 (1080P, sora-2-pro).
 *   480P, other ratios, `count` > 1, audio and video references and `frame_end` are refused with
 *   400 before any debit.
 * - No listing names a video by the caller's reference, so a lost submission cannot be found
 *   (no `findSubmission`): the recovery sweep resends.
 * - The probe is `GET /v1/models` (the cheapest authenticated read of both OpenAI and relays).
 */
import type { GenerationRequest } from "../validation.ts";
import type { ResultStore } from "./result-store.ts";
import { createProviderClient, fieldsOf, providerId } from "./provider-call.ts";
import type { GenerationUpstream, TaskStatusCode, UpstreamTaskState } from "./types.ts";

/** Provider video states → ours (docs/api/generation.md §3). */
export const OPENAI_VIDEO_STATES: Readonly<Record<string, TaskStatusCode>> = {
  queued: 0,
  in_progress: 3,
  completed: 1,
  failed: 2,
  // Not in OpenAI's enum, seen from relays: mapped so a task never stays open on them.
  cancelled: 2,
  expired: 2,
};

/** Seconds the Videos API takes. */
const VIDEO_SECONDS = [4, 8, 12, 16, 20];

/** Our resolution and aspect ratio → the Videos API's `size`. */
const VIDEO_SIZES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "720P": { "16:9": "1280x720", "9:16": "720x1280" },
  "1080P": { "16:9": "1920x1080", "9:16": "1080x1920" },
};

/** Our aspect ratio → the Images API's `size` (gpt-image-1). */
const IMAGE_SIZES: Readonly<Record<string, string>> = { auto: "auto", "1:1": "1024x1024", "3:2": "1536x1024", "2:3": "1024x1536" };

/**
 * The field of a request this type cannot do (docs/api/generation.md §7 names it), or null.
 * @param request a validated request
 */
export function openAiUnsupported(request: GenerationRequest): string | null {
  const r = request.references;
  if (request.kind === "image") {
    if (request.count < 1 || request.count > 4) return "count";
    if (request.size && !IMAGE_SIZES[request.size]) return "size";
    if (r.images.length > 0) return "reference_images";
    return null;
  }
  if (request.count !== 1) return "count";
  if (!VIDEO_SIZES[request.resolution]) return "resolution";
  if (request.size && !VIDEO_SIZES[request.resolution]![request.size]) return "size";
  if (request.seconds !== null && !VIDEO_SECONDS.includes(request.seconds)) return "seconds";
  if (r.audios.length > 0) return "reference_audios";
  if (r.videos.length > 0) return "reference_videos";
  if (r.frameEnd) return "frame_end";
  if (r.images.length + (r.frameStart ? 1 : 0) > 1) return "reference_images";
  return null;
}

/** The model sent when the channel maps none. */
export function openAiDefaultModel(request: GenerationRequest): string {
  if (request.kind === "image") return "gpt-image-1";
  return request.resolution === "1080P" ? "sora-2-pro" : "sora-2";
}

/** Settings of the adapter. */
export interface OpenAiCompatibleOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  /** The provider's model for a request (the channel's mapping, else {@link openAiDefaultModel}). */
  modelFor(request: GenerationRequest): string;
  results: ResultStore;
}

/** The provider's words in an OpenAI error body. */
function openAiMessage(body: Record<string, unknown>): string | null {
  const error = body.error;
  if (typeof error === "string") return error;
  const message = fieldsOf(error).message ?? body.message;
  return typeof message === "string" ? message : null;
}

/** Creates the adapter. */
export function createOpenAiCompatibleUpstream(options: OpenAiCompatibleOptions): GenerationUpstream {
  const client = createProviderClient({
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs,
    secrets: [options.apiKey],
    headers: () => ({ authorization: `Bearer ${options.apiKey}` }),
    messageOf: openAiMessage,
  });

  async function submitImages(request: GenerationRequest, taskId: string): Promise<string> {
    const body: Record<string, unknown> = { model: options.modelFor(request), prompt: request.prompt, n: request.count };
    if (request.size) body.size = IMAGE_SIZES[request.size];
    // Synchronous: an image takes tens of seconds, more than a submission's usual timeout.
    const { body: answer } = await client.json("POST", "/v1/images/generations", body, [], Math.max(options.timeoutMs, 180_000));
    const items = Array.isArray(answer.data) ? answer.data.map(fieldsOf) : [];
    if (items.length === 0) throw client.failed("no images in the answer", "body");
    let n = 0;
    for (const item of items) {
      const key = `${taskId}-${n++}`;
      if (typeof item.b64_json === "string") {
        const bytes = Buffer.from(item.b64_json, "base64");
        await options.results.keep(key, async () => new Response(bytes, { headers: { "content-type": "image/png" } }), "png");
      } else if (typeof item.url === "string") {
        // OpenAI's image URLs expire within an hour: kept now.
        await options.results.keep(key, () => client.download(item.url as string, false), "png");
      } else throw client.failed("an image without url or b64_json", "body");
    }
    const tokens = Number(fieldsOf(answer.usage).total_tokens);
    return `images:${taskId}:${items.length}:${Number.isSafeInteger(tokens) ? tokens : ""}`;
  }

  async function imageState(upstreamTaskId: string): Promise<UpstreamTaskState> {
    const [, taskId, count, tokens] = upstreamTaskId.split(":");
    const images: string[] = [];
    for (let n = 0; n < Number(count); n++) {
      const url = await options.results.urlOf(`${taskId}-${n}`);
      if (url === null) return { status: 2, error: "the generated images are no longer kept" };
      images.push(url);
    }
    const usage = tokens ? { images: images.length, tokens: Number(tokens) } : { images: images.length };
    return { status: 1, result: images[0] ?? null, images, usage };
  }

  return {
    name: "openai-compatible",
    async submit(request, taskId) {
      if (request.kind === "image") return { upstreamTaskId: await submitImages(request, taskId) };
      const body: Record<string, unknown> = { model: options.modelFor(request), prompt: request.prompt };
      if (request.seconds !== null) body.seconds = String(request.seconds);
      if (request.size) body.size = VIDEO_SIZES[request.resolution]![request.size];
      const reference = request.references.images[0] ?? request.references.frameStart;
      if (reference) body.input_reference = reference;
      const { body: video } = await client.json("POST", "/v1/videos", body);
      const id = providerId(video.id);
      if (id === null) throw client.failed("no video id in the answer", "body");
      return { upstreamTaskId: id };
    },
    async fetchStatus(upstreamTaskId) {
      if (upstreamTaskId.startsWith("images:")) return imageState(upstreamTaskId);
      const { body: video } = await client.json("GET", `/v1/videos/${encodeURIComponent(upstreamTaskId)}`);
      const status = OPENAI_VIDEO_STATES[String(video.status)];
      if (status === undefined) throw client.failed(`unknown status ${String(video.status).slice(0, 40)}`, "body");
      if (status === 2) return { status, error: client.clean(openAiMessage(video) ?? "generation failed") };
      if (status !== 1) return { status };
      const seconds = Number(video.seconds);
      const url = await options.results.keep(upstreamTaskId, () => client.download(`/v1/videos/${encodeURIComponent(upstreamTaskId)}/content`, true), "mp4");
      return { status: 1, result: url, usage: Number.isFinite(seconds) && seconds > 0 ? { seconds } : null };
    },
    async probe() {
      await client.json("GET", "/v1/models");
    },
  };
}
