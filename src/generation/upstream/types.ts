/**
 * The upstream provider interface (docs/architecture.md §5): one interface, two adapters (the embedded
 * simulator and the HTTP adapter).
 */
import type { GenerationRequest } from "../validation.ts";

/** Task status codes of docs/api/generation.md §3. */
export type TaskStatusCode = 0 | 1 | 2 | 3 | 4;

/** What the upstream reports about a task. */
export interface UpstreamTaskState {
  status: TaskStatusCode;
  result?: string | null;
  images?: string[] | null;
  error?: string | null;
  /** What the provider reported the task used (stored as `tasks.provider_usage`); absent: nothing reported. */
  usage?: ProviderUsage | null;
}

/**
 * The images an upstream state delivers for an image task of `count` images: its `images`, or
 * its single `result` when a provider reports only one URL, at most `count` (a task is never
 * charged for more than it asked). Used by the poller and by recovery, so both read a late
 * answer the same way.
 * @param state what the provider reported
 * @param count the images the task asked for (1-4)
 * @returns the image URLs, possibly empty
 */
export function imagesOf(state: UpstreamTaskState, count: number): string[] {
  return (state.images ?? (state.result ? [state.result] : [])).slice(0, count);
}

/**
 * What a provider reported a task used, in its own units (README "Channels"): whichever it
 * reports. Shown next to our price on the task pages and summed per channel in `adminChannels`.
 */
export interface ProviderUsage {
  /** Seconds of video generated. */
  seconds?: number;
  /** Images generated. */
  images?: number;
  /** The provider's points or credits deducted (Kling's units). */
  points?: number;
  /** Tokens billed (OpenAI image models). */
  tokens?: number;
}

/** What went wrong in an upstream call, finer than `kind` (the `kind` label of `switchyard_upstream_errors_total`). */
export type UpstreamFailureReason = "transport" | "timeout" | "http" | "code" | "body";

/** Why an upstream call failed: maps to 502 `Upstream request failed` or 504 `... timed out`. */
export class UpstreamError extends Error {
  /**
   * @param kind `failed` (transport error, non-2xx, code ≠ 200, no task_id, bad body) or `timeout`
   * @param reason the finer cause for metrics (default: `timeout` for timeouts, else `transport`)
   */
  constructor(
    readonly kind: "failed" | "timeout",
    detail: string,
    readonly reason: UpstreamFailureReason = kind === "timeout" ? "timeout" : "transport",
    /** Milliseconds the provider asked us to wait (a 429's or 503's `Retry-After`); the poller asks no sooner. */
    readonly retryAfterMs?: number,
  ) {
    super(detail);
    this.name = "UpstreamError";
  }
}

/** One channel tried for a submission, as stored in `tasks.channel_attempts` (src/generation/channels/router.ts). */
export interface ChannelAttempt {
  channelId: string;
  /** `accepted`, or the failure kind: transport, timeout, http, code, body, unexpected. */
  outcome: string;
  error?: string;
  latencyMs: number;
}

/** A submission the provider accepted. */
export interface SubmitAccepted {
  /** The provider's task id. */
  upstreamTaskId: string;
  /**
   * The channel that accepted it and every channel tried, set by the channel router when there is
   * something to record (absent: `chn_default` at the first try, or a single adapter). The task
   * service writes them with the provider's task id in one statement (`tasks.channel_id`,
   * `tasks.channel_attempts`), so the poller never reads the task without its channel.
   */
  channel?: { id: string; attempts: ChannelAttempt[] };
}

/** A generation provider. */
export interface GenerationUpstream {
  /** Name for logs and /health. */
  readonly name: string;
  /**
   * Hands a validated request to the provider.
   * @param request the validated request
   * @param taskId our task id: the reference the submission carries (the HTTP adapter sends it as
   *   `client_reference` and `Idempotency-Key`; the simulator derives its media from it)
   * @returns the provider's task id (and the channel that accepted it, see {@link SubmitAccepted})
   * @throws UpstreamError on any failure (docs/api/generation.md §4 rule 6)
   */
  submit(request: GenerationRequest, taskId: string): Promise<SubmitAccepted>;
  /**
   * Checks, before any debit, that some provider can do the request at all (a channel type that
   * cannot take, say, 15 seconds or an audio reference). Absent: every valid request can be sent.
   * @throws AppError 400 `{field} has an unsupported value` (docs/api/generation.md §7) when none can
   */
  admits?(request: GenerationRequest): Promise<void>;
  /**
   * Asks the provider whether it already has the task we submitted under `taskId` (the
   * recovery sweep, before resending a submission whose answer a crash lost). Absent when the
   * provider cannot be asked at all, or need not be (the simulator: a resend costs nothing).
   * @param taskId our task id, the reference {@link GenerationUpstream.submit} sent
   * @returns the provider's task id, or null when the provider does not show such a task
   * @throws UpstreamError when the provider could not be asked now
   */
  findSubmission?(taskId: string): Promise<string | null>;
  /**
   * Reads the provider's view of a task.
   * @param channelId the channel that accepted the task (`tasks.channel_id`; null: `chn_default`),
   *   read by the channel router (src/generation/channels/router.ts); single adapters ignore it
   * @throws UpstreamError when the provider cannot be asked now (the poller retries later)
   */
  fetchStatus(upstreamTaskId: string, channelId?: string | null): Promise<UpstreamTaskState>;
  /**
   * Asks the provider whether it answers at all, without creating a task (the channel health
   * probe, `switchyard channels test`). Absent: the adapter cannot fail (the simulator).
   * @throws UpstreamError when it does not answer as the API says
   */
  probe?(): Promise<void>;
}
