/**
 * The channel router (README "Channels"; ADR 0012): a {@link GenerationUpstream} over every
 * channel, put where the single upstream adapter was, so the task service (src/generation/tasks/)
 * keeps its one debit and one refund:
 *
 * - **submit** tries the channels in {@link orderChannels} order (at most CHANNEL_MAX_ATTEMPTS). A
 *   failure before the provider accepted the task (connect error, 5xx, timeout before a task id,
 *   business code ≠ 200, no task_id) moves to the next channel; the first acceptance ends the
 *   loop, so a provider that accepted a task is never asked again for it. Only when every
 *   channel failed does the last error reach the task service, which fails and refunds the task
 *   once. The attempts (channel, reason, error) and the accepting channel go on the task row
 *   (`channel_attempts`, `channel_id`): returned with the acceptance, which the task service
 *   records in one statement, or written here when every channel failed. Nothing is recorded when
 *   the implicit channel took it first time, the only case before channels existed.
 * - **fetchStatus** asks the channel that accepted the task (`tasks.channel_id`, null: `chn_default`).
 * - **findSubmission** (the recovery sweep) asks every channel that can look a submission up.
 * - **admits** (before the debit) refuses with 400 a request that no enabled channel of its model
 *   can do by its type (ADR 0023); **submit** passes over a channel whose type cannot do it,
 *   without counting it as a failure or an attempt.
 *
 * Every adapter it hands out (the implicit one too) redacts every configured key — each stored
 * channel's and `GENERATION_UPSTREAM_KEY` — from what its provider says (../upstream/redact.ts), so
 * a provider echoing another channel's key is cleaned as well, before any of it is stored or logged.
 *
 * The channel list is cached for {@link CHANNEL_REFRESH_MS}: a change made by another process
 * (the CLI, another generation process) takes effect within that; one made here at once.
 */
import type { Logger } from "pino";
import type { Db } from "../../db/index.ts";
import type { GenerationRequest } from "../validation.ts";
import { invalidFieldError } from "../../errors.ts";
import type { ResultStore } from "../upstream/result-store.ts";
import { channelType, unpackCredentials } from "../upstream/channel-types.ts";
import { redactingUpstream } from "../upstream/redact.ts";
import { UpstreamError, type ChannelAttempt, type GenerationUpstream, type SubmitAccepted, type UpstreamTaskState } from "../upstream/types.ts";
import type { KeyBox } from "./crypto.ts";
import type { ChannelHealth } from "./health.ts";
import { orderChannels } from "./select.ts";
import { configuredKeys, DEFAULT_CHANNEL_ID, listChannels, type ChannelRecord } from "./store.ts";

/** How long the channel list is cached (ms). */
export const CHANNEL_REFRESH_MS = 1000;

/** Settings of the router. */
export interface ChannelRouterOptions {
  db: Db;
  logger: Logger;
  /** Opens stored keys; null when CHANNEL_KEY_SECRET is unset (then only `chn_default` serves). */
  box: KeyBox | null;
  /** The adapter of `chn_default` (GENERATION_UPSTREAM_URL, or the simulator). */
  implicit: GenerationUpstream;
  /** GENERATION_UPSTREAM_KEY (the implicit channel's key, never stored): redacted like the others. */
  implicitKey?: string;
  health: ChannelHealth;
  /** UPSTREAM_TIMEOUT_MS: per call. */
  timeoutMs: number;
  /** Most channels tried per submission. */
  maxAttempts: number;
  random?: () => number;
  /** Where a channel's results that customers could not fetch are kept; unset: such results fail the poll. */
  results?: (channelId: string) => ResultStore;
}

/** Stands in when no result store is configured: every keep fails (the poller asks again). */
const NO_RESULTS: ResultStore = {
  keep: async () => {
    throw new UpstreamError("failed", "no result store is configured for provider results");
  },
  urlOf: async () => null,
};

/** The router: an upstream, plus what the channel admin needs. */
export interface ChannelRouter extends GenerationUpstream {
  /** The adapter of one channel (tests and `channels test`). */
  adapterFor(channel: ChannelRecord): GenerationUpstream;
  /** Drops the cached channel list (after a change made in this process). */
  invalidate(): void;
}

/** The request field the channel's type cannot do, or null. */
function unsupportedBy(channel: ChannelRecord, request: GenerationRequest): string | null {
  return channelType(channel.type)?.unsupported(request) ?? null;
}

/**
 * The request with our model id replaced by the channel's name for it, if it maps one (the
 * `switchyard` type only: the other types read the mapping themselves).
 */
function mapModel(request: GenerationRequest, channel: ChannelRecord): GenerationRequest {
  if (channel.type !== "switchyard") return request;
  const mapped = channel.modelMapping.find((m) => m.modelId === request.modelId);
  if (!mapped) return request;
  const upstreamModel = /^\d+$/.test(mapped.upstreamModel) ? Number(mapped.upstreamModel) : mapped.upstreamModel;
  return { ...request, modelId: upstreamModel as number };
}

/** The router's state: its settings, the cached channel list and the adapters made so far. */
export interface RouterState {
  options: ChannelRouterOptions;
  random: () => number;
  /** The channel list and when it was read; null: read it at the next use. */
  cache: { at: number; channels: Promise<ChannelRecord[]> } | null;
  /** Each stored channel's adapter, with the settings it was made from. */
  adapters: Map<string, { version: string; adapter: GenerationUpstream }>;
  /** The implicit channel's adapter, redacting, once made. */
  implicit?: GenerationUpstream;
}

/** The channel list, read at most once per {@link CHANNEL_REFRESH_MS}; a failed read is not kept. */
export function cachedChannels(state: RouterState): Promise<ChannelRecord[]> {
  if (!state.cache || Date.now() - state.cache.at >= CHANNEL_REFRESH_MS) {
    const loading = listChannels(state.options.db);
    state.cache = { at: Date.now(), channels: loading };
    loading.catch(() => {
      if (state.cache?.channels === loading) state.cache = null;
    });
  }
  return state.cache.channels;
}

/** Every configured key, read when a provider's text is to be cleaned (on failures only). */
async function secrets(state: RouterState): Promise<string[]> {
  const stored = await cachedChannels(state).catch(() => []);
  return configuredKeys(stored, state.options.box, state.options.implicitKey);
}

/**
 * The redacting adapter of one channel, made again only when its type, URL, key or mapping changed.
 * @throws UpstreamError when the key cannot be opened (no CHANNEL_KEY_SECRET) or the type is unknown
 */
export function adapterFor(state: RouterState, channel: ChannelRecord): GenerationUpstream {
  const { options } = state;
  if (channel.implicit) {
    state.implicit ??= redactingUpstream(options.implicit, () => secrets(state));
    return state.implicit;
  }
  const version = `${channel.type} ${channel.baseUrl} ${channel.sealedKey} ${JSON.stringify(channel.modelMapping)}`;
  const known = state.adapters.get(channel.id);
  if (known?.version === version) return known.adapter;
  if (!options.box || !channel.sealedKey) throw new UpstreamError("failed", "CHANNEL_KEY_SECRET is not set: the channel key cannot be read");
  const spec = channelType(channel.type);
  if (!spec) throw new UpstreamError("failed", `unknown channel type ${channel.type}`);
  const made = spec.create({
    baseUrl: channel.baseUrl,
    credentials: unpackCredentials(spec, options.box.open(channel.sealedKey)),
    timeoutMs: options.timeoutMs,
    modelFor: (request) =>
      channel.modelMapping.find((m) => m.modelId === request.modelId)?.upstreamModel ?? spec.defaultModel(request) ?? String(request.modelId),
    results: options.results?.(channel.id) ?? NO_RESULTS,
  });
  const adapter = redactingUpstream(made, () => secrets(state));
  state.adapters.set(channel.id, { version, adapter });
  return adapter;
}

/**
 * Refuses, before the debit, a request that no enabled channel of its model can do by its type (ADR 0023).
 * @throws AppError `invalid_request` (400) naming the first refusing channel's unsupported field
 */
export async function admitsRequest(state: RouterState, request: GenerationRequest): Promise<void> {
  const candidates = orderChannels(await cachedChannels(state), request.modelId, () => 0).filter((c) => c.status === "ENABLED");
  // No channel at all: submit fails and refunds as before (an operator's state, not the request's).
  if (candidates.length === 0) return;
  const refusals = candidates.map((c) => unsupportedBy(c, request));
  if (refusals.includes(null)) return;
  throw invalidFieldError(refusals[0]!);
}

/**
 * Submits through the channels in {@link orderChannels} order until one accepts (see the module's
 * comment); records the attempts on the task row when every channel failed.
 * @param taskId our task id (the provider's reference)
 * @returns the provider's task id, with the accepting channel and the attempts unless the implicit channel took it first time
 * @throws UpstreamError the last channel's failure, when none accepted
 */
export async function submitToChannels(state: RouterState, request: GenerationRequest, taskId: string): Promise<SubmitAccepted> {
  const { db, logger, health, maxAttempts } = state.options;
  // Cached records: the health recorder marks an auto-disabled one in place, so later
  // submissions of this process skip it before the next refresh.
  const candidates = orderChannels(await cachedChannels(state), request.modelId, state.random);
  if (candidates.length === 0) throw new UpstreamError("failed", `no enabled channel serves model ${request.modelId}`);
  const attempts: ChannelAttempt[] = [];
  let last: UpstreamError | undefined;
  for (const channel of candidates) {
    // Auto-disabled meanwhile by another submission of this process: skipped, and not counted
    // against CHANNEL_MAX_ATTEMPTS, so the channels behind it are still reached.
    if (channel.status !== "ENABLED") continue;
    // Its type cannot do this request: not a failure of the channel, and never sent.
    if (unsupportedBy(channel, request) !== null) continue;
    if (attempts.length >= maxAttempts) break;
    const started = performance.now();
    let upstreamTaskId: string;
    try {
      ({ upstreamTaskId } = await adapterFor(state, channel).submit(mapModel(request, channel), taskId));
    } catch (error) {
      const latencyMs = performance.now() - started;
      last = error instanceof UpstreamError ? error : new UpstreamError("failed", String((error as Error)?.message ?? error));
      const outcome = error instanceof UpstreamError ? error.reason : "unexpected";
      attempts.push({ channelId: channel.id, outcome, error: last.message.slice(0, 300), latencyMs: Math.round(latencyMs) });
      logger.warn({ task_id: taskId, channel_id: channel.id, outcome, err: last.message }, "channel refused the submission; trying the next one");
      await health.failure(channel, `${outcome}: ${last.message}`, latencyMs).catch((err) => logger.error({ err }, "channel failure not recorded"));
      continue;
    }
    // Accepted: from here nothing may throw, or the task service would fail and refund (and
    // a caught error would ask the next channel) a task this provider is running.
    const latencyMs = performance.now() - started;
    attempts.push({ channelId: channel.id, outcome: "accepted", latencyMs: Math.round(latencyMs) });
    await health.success(channel, latencyMs).catch((err) => logger.error({ err }, "channel success not recorded"));
    // The pre-channel case (the implicit channel, first try): nothing to record.
    const firstTryOfDefault = channel.id === DEFAULT_CHANNEL_ID && attempts.length === 1;
    const accepted: SubmitAccepted = firstTryOfDefault ? { upstreamTaskId } : { upstreamTaskId, channel: { id: channel.id, attempts } };
    return accepted;
  }
  await db("tasks")
    .where({ id: taskId })
    .update({ channel_id: null, channel_attempts: JSON.stringify(attempts) });
  throw last ?? new UpstreamError("failed", "no channel could be tried");
}

/**
 * Asks the channel that accepted the task for its state.
 * @param channelId `tasks.channel_id` (null: `chn_default`)
 * @throws UpstreamError when the channel no longer exists, or as its adapter
 */
export async function fetchStatusFromChannel(state: RouterState, upstreamTaskId: string, channelId: string | null | undefined): Promise<UpstreamTaskState> {
  const channel = (await cachedChannels(state)).find((c) => c.id === (channelId ?? DEFAULT_CHANNEL_ID));
  if (!channel) throw new UpstreamError("failed", `channel ${channelId} no longer exists`);
  return adapterFor(state, channel).fetchStatus(upstreamTaskId);
}

/**
 * Looks a lost submission up on every channel that can (the recovery sweep), and records on the
 * task row the channel that has it.
 * @param taskId our task id (the reference it was sent with)
 * @returns the provider's task id, or null when no channel has it
 */
export async function findSubmissionOnChannels(state: RouterState, taskId: string): Promise<string | null> {
  for (const channel of await cachedChannels(state)) {
    let adapter: GenerationUpstream;
    try {
      adapter = adapterFor(state, channel);
    } catch {
      continue;
    }
    if (!adapter.findSubmission) continue;
    const found = await adapter.findSubmission(taskId).catch(() => null);
    if (found !== null) {
      await state.options
        .db("tasks")
        .where({ id: taskId })
        .update({ channel_id: channel.id === DEFAULT_CHANNEL_ID ? null : channel.id });
      return found;
    }
  }
  return null;
}

/**
 * Binds the router's operations to one state.
 * @param options database, logger, key box, implicit adapter and key, health recorder, timeout (milliseconds), attempts, result stores
 * @returns the {@link ChannelRouter}
 */
export function createChannelRouter(options: ChannelRouterOptions): ChannelRouter {
  const state: RouterState = { options, random: options.random ?? Math.random, cache: null, adapters: new Map() };
  return {
    name: "channels",
    adapterFor: (channel) => adapterFor(state, channel),
    invalidate() {
      state.cache = null;
    },
    admits: (request) => admitsRequest(state, request),
    submit: (request, taskId) => submitToChannels(state, request, taskId),
    fetchStatus: (upstreamTaskId, channelId) => fetchStatusFromChannel(state, upstreamTaskId, channelId),
    findSubmission: (taskId) => findSubmissionOnChannels(state, taskId),
  };
}
