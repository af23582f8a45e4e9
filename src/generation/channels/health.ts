/**
 * Channel health (README "Channels"): every submission attempt is counted on its channel; N
 * failed attempts in a row (CHANNEL_FAILURE_THRESHOLD) take it out of rotation (AUTO_DISABLED)
 * with a first probe after CHANNEL_PROBE_BASE_MS (src/generation/channels/probe.ts). The state
 * lives in the `channels` row, so every process sharing the database sees it: a failure is
 * written at once (a compare-and-swap disables the channel exactly once, whichever process
 * counted the N-th failure, and never the last enabled channel of any model it serves);
 * successes are summed in memory and written at most once a second (they only move counters,
 * and reset the failure streak at once when one was running).
 */
import type { Logger } from "pino";
import { isSqlite, nowIso, type Db } from "../../db/index.ts";
import { modelsServedOnlyBy } from "./select.ts";
import { toChannelRecord, type ChannelRecord, type ChannelRow } from "./store.ts";

/** Settings of the health recorder. */
export interface ChannelHealthOptions {
  db: Db;
  logger: Logger;
  /** Failures in a row that auto-disable a channel. */
  threshold: number;
  /** Milliseconds until the first probe of an auto-disabled channel. */
  probeBaseMs: number;
  /** Called when this process disabled a channel (the router drops it from its cache at once). */
  onDisabled?: (channelId: string) => void;
}

/** Records attempt outcomes. */
export interface ChannelHealth {
  /** An accepted submission after `latencyMs`. */
  success(channel: ChannelRecord, latencyMs: number): Promise<void>;
  /**
   * A refused submission. The last enabled channel of a model is never taken out (with only
   * GENERATION_UPSTREAM_URL, every submission reaches it, as before channels; a model served by
   * one channel keeps it while channels of other models are on): the disabling compare-and-swap
   * runs in a transaction holding the enabled channels' rows ({@link modelsServedOnlyBy} decides),
   * so two processes disabling two channels at once cannot both take a model's last one.
   * @param reason the failure's text, already redacted (src/generation/upstream/redact.ts)
   * @returns true when this failure auto-disabled the channel
   */
  failure(channel: ChannelRecord, reason: string, latencyMs: number): Promise<boolean>;
  /** Writes the summed successes now (before reading stats; at stop). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** The recorder's state: its settings and the successes summed since the last flush, per channel id. */
export interface HealthState {
  options: ChannelHealthOptions;
  pending: Map<string, { successes: number; latency: number }>;
}

/** Writes the summed successes (counters and latency) to their channels' rows. */
export async function flushSuccesses(state: HealthState): Promise<void> {
  const { db } = state.options;
  const batch = [...state.pending.entries()];
  state.pending.clear();
  for (const [id, d] of batch) {
    await db("channels")
      .where({ id })
      .update({
        submissions: db.raw("submissions + ?", [d.successes]),
        successes: db.raw("successes + ?", [d.successes]),
        latency_ms_total: db.raw("latency_ms_total + ?", [d.latency]),
      });
  }
}

/**
 * Counts an accepted submission in memory (written by {@link flushSuccesses}); ends a failure
 * streak at once.
 * @param latencyMs how long the provider took to accept, in milliseconds
 */
export async function recordSuccess(state: HealthState, channel: ChannelRecord, latencyMs: number): Promise<void> {
  const { db } = state.options;
  const d = state.pending.get(channel.id) ?? { successes: 0, latency: 0 };
  d.successes += 1;
  d.latency += Math.round(latencyMs);
  state.pending.set(channel.id, d);
  if (channel.consecutiveFailures > 0) {
    await db("channels").where({ id: channel.id }).andWhere("consecutive_failures", ">", 0).update({ consecutive_failures: 0 });
    channel.consecutiveFailures = 0;
  }
}

/**
 * Counts a refused submission at once, and auto-disables the channel at the threshold unless it
 * is the last enabled channel of a model ({@link ChannelHealth.failure}).
 * @param reason the failure's text, already redacted
 * @param latencyMs how long the attempt took, in milliseconds
 * @returns true when this failure auto-disabled the channel
 */
export async function recordFailure(state: HealthState, channel: ChannelRecord, reason: string, latencyMs: number): Promise<boolean> {
  const { db, logger, threshold, probeBaseMs } = state.options;
  const [counted] = await db("channels")
    .where({ id: channel.id })
    .update({
      submissions: db.raw("submissions + 1"),
      failures: db.raw("failures + 1"),
      latency_ms_total: db.raw("latency_ms_total + ?", [Math.round(latencyMs)]),
      consecutive_failures: db.raw("consecutive_failures + 1"),
    })
    .returning("consecutive_failures");
  channel.consecutiveFailures += 1;
  if (!counted || Number(counted.consecutive_failures) < threshold) return false;
  const outcome = await db.transaction(async (trx) => {
    // Every enabled row, locked in one order: a concurrent disable of another channel waits,
    // then this one sees it gone. SQLite has one writer: writing first takes its lock (waiting
    // for another process's), so the read below is current.
    const query = trx("channels").where({ status: "ENABLED" }).orderBy("id");
    if (isSqlite(trx))
      await trx("channels")
        .where({ id: channel.id })
        .update({ consecutive_failures: trx.raw("consecutive_failures") });
    const enabled = ((await (isSqlite(trx) ? query : query.forUpdate())) as ChannelRow[]).map(toChannelRecord);
    const self = enabled.find((c) => c.id === channel.id);
    if (!self || self.consecutiveFailures < threshold) return { disabled: false, alone: [] as number[] };
    const alone = modelsServedOnlyBy(self, enabled);
    if (alone.length > 0) return { disabled: false, alone };
    const updated = await trx("channels")
      .where({ id: channel.id, status: "ENABLED" })
      .update({
        status: "AUTO_DISABLED",
        disabled_reason: `${threshold} failed submissions in a row; last: ${reason}`.slice(0, 500),
        probe_failures: 0,
        next_probe_at: new Date(Date.now() + probeBaseMs).toISOString(),
        updated_at: nowIso(),
      });
    return { disabled: updated === 1, alone };
  });
  if (outcome.alone.length > 0 && Number(counted.consecutive_failures) === threshold) {
    logger.warn(
      { channel_id: channel.id, models: outcome.alone, reason },
      "channel kept in rotation after failed submissions in a row: it is the last enabled channel of these models",
    );
  }
  if (outcome.disabled) {
    logger.warn({ channel_id: channel.id, reason }, "channel auto-disabled after failed submissions in a row");
    channel.status = "AUTO_DISABLED";
    state.options.onDisabled?.(channel.id);
  }
  return outcome.disabled;
}

/**
 * Creates the recorder and its once-a-second flush.
 * @param options database, logger, failure threshold, first probe delay (milliseconds), disable callback
 * @returns the {@link ChannelHealth}
 */
export function createChannelHealth(options: ChannelHealthOptions): ChannelHealth {
  const state: HealthState = { options, pending: new Map() };
  const flush = () => flushSuccesses(state);
  const timer = setInterval(() => flush().catch((err) => options.logger.warn({ err }, "channel counters not written")), 1000);
  timer.unref?.();
  return {
    success: (channel, latencyMs) => recordSuccess(state, channel, latencyMs),
    failure: (channel, reason, latencyMs) => recordFailure(state, channel, reason, latencyMs),
    flush,
    async stop() {
      clearInterval(timer);
      await flush().catch(() => undefined);
    },
  };
}
