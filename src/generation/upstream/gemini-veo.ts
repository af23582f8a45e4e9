/**
 * Channel type `gemini-veo` (README "Channels"; ADR 0023): Veo through the Gemini API's
 * long-running operations.
 *
 * Documented at https://ai.google.dev/gemini-api/docs/video (REST: predictLongRunning, polling the
 * operation, downloading the video), https://ai.google.dev/api/models#method:-models.predictlongrunning,
 * https://ai.google.dev/api/rest/v1beta/operations/get (the operation) and
 * https://ai.google.dev/gemini-api/docs/troubleshooting (error statuses, `RetryInfo`); the same
 * REST shape as relays document it at
 * https://docs.apigo.ai/en/api-reference/endpoints/gemini/video-predict-long-running (whose
 * operation names are `operations/{id}`: any name is polled at `/v1beta/{name}`).
 *
 * - Auth: `x-goog-api-key: <API key>` on every call, the video download included.
 * - Create: `POST /v1beta/models/{model}:predictLongRunning` `{instances: [{prompt}], parameters:
 *   {aspectRatio: "16:9", resolution: "720p", durationSeconds: 8}}` → `{name:
 *   "models/{model}/operations/{id}"}`.
 * - Poll: `GET /v1beta/{name}` → `{name, done?, response: {generateVideoResponse:
 *   {generatedSamples: [{video: {uri}}], raiMediaFilteredReasons?}}, error?: {code, message}}`;
 *   the `uri` (`…/v1beta/files/{id}:download?alt=media`) needs the key.
 * - Errors: `{"error": {"code", "message", "status", "details"}}` with the HTTP status: a bad key
 *   is 400 `INVALID_ARGUMENT` ("API key not valid"), 403 `PERMISSION_DENIED`, 429
 *   `RESOURCE_EXHAUSTED` with a `google.rpc.RetryInfo` detail (`retryDelay: "7s"`).
 *
 * Undocumented, or left open by the docs, and what we chose:
 * - The result needs the key, so it is downloaded by us and served at a signed `/media/p/` URL
 *   (as OpenAI's `/content`). The key is sent only to the base URL's own origin: a `uri` on
 *   another host is fetched without it.
 * - An operation has no queued state: not done is running (3); done with `response` and a sample
 *   is succeeded (1); done with `error`, or a `response` whose samples were all filtered
 *   (`raiMediaFilteredReasons`), is failed (2) with Google's words.
 * - A 429's wait: the `Retry-After` header when present, else the `RetryInfo` detail's
 *   `retryDelay`.
 * - Usage: Google bills Veo per second generated and reports none; the seconds sent are kept in
 *   the provider id `<seconds>:<operation name>` and reported as the task's seconds.
 * - References go to the Gemini API as inline bytes (`bytesBase64Encoded`), not URLs: reference
 *   images, frames, audio and video are refused, as are `count` > 1, images (model_id of an image
 *   model), seconds other than 4, 6, 8, resolutions other than 720P and 1080P (1080P only at 8 s)
 *   and ratios other than 16:9 and 9:16. All before any debit.
 * - Nothing names an operation by the caller's reference: no `findSubmission`, the recovery
 *   sweep resends.
 * - The probe is `GET /v1beta/models?pageSize=1`, which creates nothing.
 */
import type { ResultStore } from "./result-store.ts";
import type { GenerationRequest } from "../validation.ts";
import { createProviderClient, fieldsOf } from "./provider-call.ts";
import type { GenerationUpstream, TaskStatusCode } from "./types.ts";

/** Veo operation states → ours (docs/api/generation.md §3). */
export const VEO_STATES: Readonly<Record<"running" | "succeeded" | "failed" | "filtered", TaskStatusCode>> = {
  running: 3,
  succeeded: 1,
  failed: 2,
  filtered: 2,
};

const SECONDS = [4, 6, 8];
const DEFAULT_SECONDS = 8;
const RESOLUTIONS: Readonly<Record<string, string>> = { "720P": "720p", "1080P": "1080p" };
const RATIOS = ["16:9", "9:16"];

/** The field of a request Veo (through the Gemini API) cannot do, or null. */
export function veoUnsupported(request: GenerationRequest): string | null {
  const r = request.references;
  if (request.kind === "image") return "model_id";
  if (request.count !== 1) return "count";
  if (!RESOLUTIONS[request.resolution]) return "resolution";
  if (request.seconds !== null && !SECONDS.includes(request.seconds)) return "seconds";
  if (request.resolution === "1080P" && (request.seconds ?? DEFAULT_SECONDS) !== 8) return "seconds";
  if (request.size && !RATIOS.includes(request.size)) return "size";
  if (r.images.length > 0) return "reference_images";
  if (r.audios.length > 0) return "reference_audios";
  if (r.videos.length > 0) return "reference_videos";
  if (r.frameStart) return "frame_start";
  if (r.frameEnd) return "frame_end";
  return null;
}

/** The model sent when the channel maps none. */
export function veoDefaultModel(): string {
  return "veo-3.1-generate-preview";
}

/** The request body of a submission. */
export function veoBody(request: GenerationRequest): Record<string, unknown> {
  const parameters: Record<string, unknown> = { resolution: RESOLUTIONS[request.resolution], durationSeconds: request.seconds ?? DEFAULT_SECONDS };
  if (request.size) parameters.aspectRatio = request.size;
  return { instances: [{ prompt: request.prompt }], parameters };
}

/** Google's words in an error (`{error: {message, status}}`). */
function googleMessage(body: Record<string, unknown>): string | null {
  const error = fieldsOf(body.error);
  return typeof error.message === "string" ? error.message : null;
}

/** The `retryDelay` of a `google.rpc.RetryInfo` detail, in ms. */
function retryInfoMs(body: Record<string, unknown>): number | undefined {
  const details = fieldsOf(body.error).details;
  if (!Array.isArray(details)) return undefined;
  for (const detail of details.map(fieldsOf)) {
    const delay = /^(\d+(?:\.\d+)?)s$/.exec(String(detail.retryDelay ?? ""));
    if (String(detail["@type"]).endsWith("google.rpc.RetryInfo") && delay) return Math.min(Number(delay[1]) * 1000, 3_600_000);
  }
  return undefined;
}

/** Settings of the adapter. */
export interface VeoOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  modelFor(request: GenerationRequest): string;
  results: ResultStore;
}

/** Creates the adapter. */
export function createVeoUpstream(options: VeoOptions): GenerationUpstream {
  const origin = new URL(options.baseUrl).origin;
  const client = createProviderClient({
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs,
    secrets: [options.apiKey],
    headers: () => ({ "x-goog-api-key": options.apiKey }),
    messageOf: googleMessage,
    retryAfterOf: retryInfoMs,
  });

  return {
    name: "gemini-veo",
    async submit(request) {
      const body = veoBody(request);
      const model = encodeURIComponent(options.modelFor(request));
      const { body: operation } = await client.json("POST", `/v1beta/models/${model}:predictLongRunning`, body);
      const name = operation.name;
      if (typeof name !== "string" || !/^[\w./-]{1,300}$/.test(name)) throw client.failed("no operation name in the answer", "body");
      return { upstreamTaskId: `${(body.parameters as { durationSeconds: number }).durationSeconds}:${name}` };
    },
    async fetchStatus(upstreamTaskId) {
      const colon = upstreamTaskId.indexOf(":");
      const seconds = Number(upstreamTaskId.slice(0, colon));
      const name = upstreamTaskId.slice(colon + 1);
      if (colon < 0 || !/^[\w./-]{1,300}$/.test(name)) throw client.failed(`not a Veo operation: ${upstreamTaskId.slice(0, 40)}`, "body");
      const { body: operation } = await client.json("GET", `/v1beta/${name}`);
      if (operation.done !== true) return { status: VEO_STATES.running };
      if (operation.error !== undefined && operation.error !== null)
        return { status: VEO_STATES.failed, error: client.clean(googleMessage(operation) ?? "generation failed") };
      const response = fieldsOf(fieldsOf(operation.response).generateVideoResponse);
      const samples = Array.isArray(response.generatedSamples) ? response.generatedSamples.map(fieldsOf) : [];
      const uri = fieldsOf(samples[0]?.video).uri;
      if (typeof uri !== "string") {
        const reasons = Array.isArray(response.raiMediaFilteredReasons) ? response.raiMediaFilteredReasons.filter((x) => typeof x === "string") : [];
        if (reasons.length > 0) return { status: VEO_STATES.filtered, error: client.clean(reasons.join(" ")) };
        throw client.failed("done without a video uri", "body");
      }
      let sameOrigin = false;
      try {
        sameOrigin = new URL(uri, options.baseUrl).origin === origin;
      } catch {
        throw client.failed("an unreadable video uri", "body");
      }
      const url = await options.results.keep(upstreamTaskId, () => client.download(uri, sameOrigin), "mp4");
      return { status: VEO_STATES.succeeded, result: url, usage: Number.isFinite(seconds) && seconds > 0 ? { seconds } : null };
    },
    async probe() {
      await client.json("GET", "/v1beta/models?pageSize=1");
    },
  };
}
