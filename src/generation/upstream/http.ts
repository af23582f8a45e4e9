/**
 * The HTTP adapter (docs/architecture.md §5): speaks the generation API itself to another provider.
 * `POST {base}/api/v1/video/generations` (or `/images/generations`) with
 * `Authorization: Bearer {key}`; success is HTTP 200 with `{"code":200,"data":{"task_id":...}}`;
 * status from `GET {base}/api/v1/tasks/{id}`. A refusal's error names what failed and the provider's
 * own words (`HTTP 429: quota exceeded`, `business code 4001: ...`); every text the provider or the
 * transport gives us (those words, a task's `error`, a transport error naming the URL) leaves the
 * adapter with its key and any credential-shaped text redacted (./redact.ts).
 *
 * Finding a lost submission (the recovery sweep). The spec's API has no field to name a
 * submission by the caller's reference, and reads a task only by the provider's id, so this is
 * as far as the protocol lets us go:
 * - every submission carries our task id twice: as `client_reference` in the body (an extra
 *   field; the spec's API ignores unknown fields, as Switchyard does) and as the
 *   `Idempotency-Key` header (a provider that honours it answers a resend with the first task);
 * - {@link GenerationUpstream.findSubmission} reads the key's task history, the one listing the
 *   spec offers (`GET /api/v1/usage?limit=100`, `data.tasks`, newest first), and takes the task
 *   whose `client_reference` is ours. A provider that does not echo the field, or a task behind
 *   100 newer ones, is not found: the sweep then resends (README "Running at scale").
 */
import type { GenerationRequest } from "../validation.ts";
import { fieldsOf, PROVIDER_MESSAGE_CHARS, retryAfterMs } from "./provider-call.ts";
import { redactSecrets } from "./redact.ts";
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

/** How many tasks of the key's history a lookup reads: the most `GET /api/v1/usage` lists. */
export const LOOKUP_HISTORY_LIMIT = 100;

/**
 * The request body sent upstream: the spec's own field names, omitted fields left out, and our
 * task id as `client_reference` when given (the reference a lost submission is found by).
 */
export function toUpstreamBody(request: GenerationRequest, clientReference?: string): Record<string, unknown> {
  const body: Record<string, unknown> = { prompt: request.prompt, model_id: request.modelId, count: request.count, resolution: request.resolution };
  if (clientReference) body.client_reference = clientReference;
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
 * The provider's own words about a refusal: the `message` of a JSON body, else the body's text
 * when it is not markup, whitespace folded (at most 64 KiB of it: it is redacted before it is cut
 * to {@link PROVIDER_MESSAGE_CHARS}, so no key is cut in half); null when it said nothing.
 */
function providerMessage(text: string): string | null {
  let said: unknown = text.trimStart().startsWith("<") ? null : text;
  try {
    said = fieldsOf(JSON.parse(text)).message;
  } catch {
    /* not JSON: the text itself */
  }
  if (typeof said !== "string") return null;
  return said.slice(0, 65_536).replaceAll("\u0000", "").replace(/\s+/g, " ").trim() || null;
}

/** A provider task id as text: a non-empty string or number of at most 200 characters, else null. */
function providerTaskId(value: unknown): string | null {
  if (typeof value !== "string" && typeof value !== "number") return null;
  const text = String(value);
  return text.length > 0 && text.length <= 200 ? text : null;
}

/** The adapter's state: its settings, the base URL without a trailing slash, and the history read under way. */
export interface HttpUpstreamState {
  options: HttpUpstreamOptions;
  base: string;
  /** One history read shared by the lookups running at the same time; null: none under way. */
  history: Promise<unknown[]> | null;
}

/** Everything the provider (or the transport) says goes through here before it leaves the adapter. */
function clean(state: HttpUpstreamState, text: string): string {
  return redactSecrets(text, [state.options.apiKey]);
}

/** A refusal whose text is cleaned of the key. */
function failed(state: HttpUpstreamState, detail: string, reason?: "http" | "code" | "body", wait?: number): UpstreamError {
  return new UpstreamError("failed", clean(state, detail), reason, wait);
}

/**
 * Calls the provider with the key and the per-call timeout, and takes its envelope apart.
 * @param path the path under the base URL
 * @param headers extra request headers
 * @returns the envelope's `data` fields
 * @throws UpstreamError `timeout` (no answer, or no body, in time); `failed` for a transport error,
 *   an HTTP error (with its Retry-After), an unparsable body or a business code other than 200
 */
export async function callProvider(
  state: HttpUpstreamState,
  path: string,
  init: RequestInit,
  headers: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const { options } = state;
  let response: Response;
  try {
    response = await fetch(`${state.base}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${options.apiKey}`, "content-type": "application/json", accept: "application/json", ...headers },
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (error) {
    const name = (error as Error)?.name;
    if (name === "TimeoutError" || name === "AbortError") throw new UpstreamError("timeout", `no answer within ${options.timeoutMs} ms`);
    throw failed(state, `transport error: ${(error as Error).message}`);
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    const name = (error as Error)?.name;
    if (name === "TimeoutError" || name === "AbortError") throw new UpstreamError("timeout", "body not received in time");
    throw new UpstreamError("failed", "body could not be read");
  }
  // The provider's words, redacted, then cut.
  const saying = (head: string) => {
    const words = providerMessage(text);
    return words ? `${head}: ${clean(state, words).slice(0, PROVIDER_MESSAGE_CHARS)}` : head;
  };
  if (!response.ok) {
    // A 429's or 503's Retry-After is kept: the poller asks no sooner (src/generation/poller.ts).
    const wait = retryAfterMs(response.headers.get("retry-after"));
    const said = saying(`HTTP ${response.status}`);
    throw failed(state, wait === undefined ? said : `${said} (retry after ${Math.ceil(wait / 1000)} s)`, "http", wait);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new UpstreamError("failed", "unparsable body", "body");
  }
  const { code, data } = fieldsOf(body);
  if (code !== 200) throw failed(state, saying(`business code ${String(code).slice(0, 40)}`), "code");
  return fieldsOf(data);
}

/**
 * Reads the key's task history (`GET /api/v1/usage`, newest first), once for all the lookups
 * running at the same time (a sweep asks about many tasks at once, all submitted before the
 * crash, so one listing answers them all).
 * @returns the tasks of the answer
 */
function readHistory(state: HttpUpstreamState): Promise<unknown[]> {
  state.history ??= callProvider(state, `/api/v1/usage?limit=${LOOKUP_HISTORY_LIMIT}`, { method: "GET" })
    .then((data) => {
      if (!Array.isArray(data.tasks)) throw new UpstreamError("failed", "no task history in the usage answer", "body");
      return data.tasks as unknown[];
    })
    .finally(() => {
      state.history = null;
    });
  return state.history;
}

/**
 * Submits a task (`POST /api/v1/video/generations` or `/images/generations`), with our task id
 * as `client_reference` and `Idempotency-Key`.
 * @returns the provider's task id
 * @throws UpstreamError as {@link callProvider}, or `failed` when the answer has no usable task_id
 */
export async function submitOverHttp(state: HttpUpstreamState, request: GenerationRequest, reference: string): Promise<{ upstreamTaskId: string }> {
  const path = request.kind === "image" ? "/api/v1/images/generations" : "/api/v1/video/generations";
  const data = await callProvider(state, path, { method: "POST", body: JSON.stringify(toUpstreamBody(request, reference)) }, { "idempotency-key": reference });
  const taskId = providerTaskId(data.task_id);
  if (taskId === null) throw new UpstreamError("failed", "no task_id", "body");
  return { upstreamTaskId: taskId };
}

/**
 * Finds a lost submission in the key's history by its `client_reference` (see the module's comment).
 * @returns the provider's task id, or null when the history does not show it
 */
export async function findSubmissionOverHttp(state: HttpUpstreamState, reference: string): Promise<string | null> {
  const tasks = await readHistory(state);
  const match = tasks.map(fieldsOf).find((task) => task.client_reference === reference);
  return match ? providerTaskId(match.task_id) : null;
}

/**
 * Reads a task's state (`GET /api/v1/tasks/{id}`); text the provider sends is cleaned of U+0000,
 * and its error of the key.
 * @throws UpstreamError as {@link callProvider}, or `failed` for an unknown status
 */
export async function fetchStatusOverHttp(state: HttpUpstreamState, upstreamTaskId: string): Promise<UpstreamTaskState> {
  const data = await callProvider(state, `/api/v1/tasks/${encodeURIComponent(upstreamTaskId)}`, { method: "GET" });
  const status = Number(data.status);
  if (![0, 1, 2, 3, 4].includes(status)) throw failed(state, `unknown status ${String(data.status).slice(0, 40)}`, "body");
  const result: UpstreamTaskState = { status: status as TaskStatusCode };
  // U+0000 cannot be stored in PostgreSQL text: dropped from what the provider sends.
  const text = (value: string) => value.replaceAll("\u0000", "");
  if (typeof data.result === "string") result.result = text(data.result);
  if (Array.isArray(data.images)) result.images = data.images.filter((i: unknown): i is string => typeof i === "string").map(text);
  if (data.error != null) result.error = clean(state, text(String(data.error)));
  return result;
}

/**
 * Creates the HTTP adapter: binds the operations above to one provider.
 * @param options base URL, key, per-call timeout (milliseconds)
 * @returns a {@link GenerationUpstream} whose calls throw {@link UpstreamError}
 */
export function createHttpUpstream(options: HttpUpstreamOptions): GenerationUpstream {
  const state: HttpUpstreamState = { options, base: options.baseUrl.replace(/\/+$/, ""), history: null };
  return {
    name: "http",
    submit: (request, reference) => submitOverHttp(state, request, reference),
    findSubmission: (reference) => findSubmissionOverHttp(state, reference),
    async probe() {
      // The cheapest authenticated read the spec offers: one task of the key's history.
      await callProvider(state, "/api/v1/usage?limit=1", { method: "GET" });
    },
    fetchStatus: (upstreamTaskId) => fetchStatusOverHttp(state, upstreamTaskId),
  };
}
