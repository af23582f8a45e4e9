/**
 * The HTTP adapter (DESIGN §5): speaks the generation API itself to another provider.
 * `POST {base}/api/v1/video/generations` (or `/images/generations`) with
 * `Authorization: Bearer {key}`; success is HTTP 200 with `{"code":200,"data":{"task_id":...}}`;
 * status from `GET {base}/api/v1/tasks/{id}`.
 */
import type { GenerationRequest } from "../validation.ts";
import { UpstreamError, type GenerationUpstream, type TaskStatusCode, type UpstreamTaskState } from "./types.ts";

/** Settings of the HTTP adapter. */
export interface HttpUpstreamOptions {
  /** Base URL, for example `https://provider.example`. */
  baseUrl: string;
  /** Bearer key sent to the provider. */
  apiKey: string;
  /** Per-call timeout in milliseconds. */
  timeoutMs: number;
}

/** The request body sent upstream: the spec's own field names, omitted fields left out. */
export function toUpstreamBody(request: GenerationRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { prompt: request.prompt, model_id: request.modelId, count: request.count, resolution: request.resolution };
  if (request.size) body.size = request.size;
  if (request.seconds !== null) body.seconds = request.seconds;
  const r = request.references;
  if (r.images.length) body.reference_images = r.images;
  if (r.audios.length) body.reference_audios = r.audios;
  if (r.videos.length) body.reference_videos = r.videos;
  if (r.frameStart) body.frame_start = r.frameStart;
  if (r.frameEnd) body.frame_end = r.frameEnd;
  return body;
}

/**
 * Creates the HTTP adapter.
 * @returns a {@link GenerationUpstream} whose calls throw {@link UpstreamError}
 */
export function createHttpUpstream(options: HttpUpstreamOptions): GenerationUpstream {
  const base = options.baseUrl.replace(/\/+$/, "");

  async function call(path: string, init: RequestInit): Promise<any> {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${options.apiKey}`, "content-type": "application/json", accept: "application/json" },
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (error) {
      const name = (error as Error)?.name;
      if (name === "TimeoutError" || name === "AbortError") throw new UpstreamError("timeout", `no answer within ${options.timeoutMs} ms`);
      throw new UpstreamError("failed", `transport error: ${(error as Error).message}`);
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      const name = (error as Error)?.name;
      if (name === "TimeoutError" || name === "AbortError") throw new UpstreamError("timeout", "body not received in time");
      throw new UpstreamError("failed", "body could not be read");
    }
    if (!response.ok) throw new UpstreamError("failed", `HTTP ${response.status}`, "http");
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      throw new UpstreamError("failed", "unparsable body", "body");
    }
    if (!body || typeof body !== "object" || body.code !== 200) throw new UpstreamError("failed", `business code ${body?.code}`, "code");
    return body.data;
  }

  return {
    name: "http",
    async submit(request) {
      const path = request.kind === "image" ? "/api/v1/images/generations" : "/api/v1/video/generations";
      const data = await call(path, { method: "POST", body: JSON.stringify(toUpstreamBody(request)) });
      const taskId = data?.task_id;
      if ((typeof taskId !== "string" && typeof taskId !== "number") || String(taskId).length === 0 || String(taskId).length > 200) {
        throw new UpstreamError("failed", "no task_id", "body");
      }
      return { upstreamTaskId: String(taskId) };
    },
    async fetchStatus(upstreamTaskId) {
      const data = await call(`/api/v1/tasks/${encodeURIComponent(upstreamTaskId)}`, { method: "GET" });
      const status = Number(data?.status);
      if (![0, 1, 2, 3, 4].includes(status)) throw new UpstreamError("failed", `unknown status ${data?.status}`, "body");
      const state: UpstreamTaskState = { status: status as TaskStatusCode };
      // U+0000 cannot be stored in PostgreSQL text: dropped from what the provider sends.
      const text = (value: string) => value.replace(/\u0000/g, "");
      if (typeof data.result === "string") state.result = text(data.result);
      if (Array.isArray(data.images)) state.images = data.images.filter((i: unknown): i is string => typeof i === "string").map(text);
      if (data.error != null) state.error = text(String(data.error));
      return state;
    },
  };
}
