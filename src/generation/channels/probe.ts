/**
 * Probing channels (README "Channels"): the background loop that brings auto-disabled channels
 * back, and the probe-now of `switchyard channels test` / `adminTestChannel`. A probe is the
 * adapter's `probe()` (the HTTP adapter reads one task of the key's history: no task is made,
 * nothing is charged). A due channel is claimed by a compare-and-swap on its `next_probe_at`, so
 * of several processes exactly one probes it. Success → ENABLED, streak reset; failure → the
 * next probe after CHANNEL_PROBE_BASE_MS × 2^failed probes, at most CHANNEL_PROBE_MAX_MS.
 */
import type { Logger } from "pino";
import { nowIso, type Db } from "../../db/index.ts";
import { startLoop } from "../../loop.ts";
import { UpstreamError, type GenerationUpstream } from "../upstream/types.ts";
import { toChannelRecord, type ChannelRecord } from "./store.ts";

/** What one probe found. */
export interface ProbeResult {
  ok: boolean;
  latencyMs: number;
  error: string | null;
}

/** Probes one adapter now. @returns never throws */
export async function probeAdapter(adapter: GenerationUpstream): Promise<ProbeResult> {
  const started = performance.now();
  try {
    await adapter.probe?.();
    return { ok: true, latencyMs: Math.round(performance.now() - started), error: null };
  } catch (error) {
    const message = error instanceof UpstreamError ? `${error.reason}: ${error.message}` : String((error as Error)?.message ?? error);
    return { ok: false, latencyMs: Math.round(performance.now() - started), error: message };
  }
}

/** The delay before the next probe after `failedProbes` failed ones. */
export function probeDelayMs(failedProbes: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(failedProbes, 30));
}

/** Settings of the probe loop. */
export interface ProbeLoopOptions {
  db: Db;
  logger: Logger;
  adapterFor(channel: ChannelRecord): GenerationUpstream;
  baseMs: number;
  maxMs: number;
  /** Called after a channel was re-enabled here. */
  onEnabled?: (channelId: string) => void;
}

/**
 * Probes every due AUTO_DISABLED channel once.
 * @returns how many were re-enabled
 */
export async function probeDue(options: ProbeLoopOptions): Promise<number> {
  const { db, logger } = options;
  const rows = await db("channels").where({ status: "AUTO_DISABLED" }).andWhere("next_probe_at", "<=", nowIso()).limit(50);
  let enabled = 0;
  for (const row of rows) {
    const channel = toChannelRecord(row);
    // Claim: push next_probe_at past the probe, so no other process probes it meanwhile.
    const lease = new Date(Date.now() + options.maxMs).toISOString();
    const claimed = await db("channels").where({ id: channel.id, status: "AUTO_DISABLED", next_probe_at: row.next_probe_at }).update({ next_probe_at: lease });
    if (claimed !== 1) continue;
    let result: ProbeResult;
    try {
      result = await probeAdapter(options.adapterFor(channel));
    } catch (error) {
      result = { ok: false, latencyMs: 0, error: (error as Error).message };
    }
    if (result.ok) {
      const done = await db("channels")
        .where({ id: channel.id, status: "AUTO_DISABLED", next_probe_at: lease })
        .update({ status: "ENABLED", disabled_reason: null, consecutive_failures: 0, probe_failures: 0, next_probe_at: null, updated_at: nowIso() });
      if (done === 1) {
        enabled += 1;
        logger.info({ channel_id: channel.id, latency_ms: result.latencyMs }, "channel answered its probe; re-enabled");
        options.onEnabled?.(channel.id);
      }
    } else {
      const failed = channel.probeFailures + 1;
      const next = new Date(Date.now() + probeDelayMs(failed, options.baseMs, options.maxMs)).toISOString();
      await db("channels").where({ id: channel.id, status: "AUTO_DISABLED", next_probe_at: lease }).update({ probe_failures: failed, next_probe_at: next });
      logger.warn({ channel_id: channel.id, err: result.error, next_probe_at: next }, "channel probe failed");
    }
  }
  return enabled;
}

/**
 * Starts the background probe loop (every min(base, 1 s)).
 * @returns the loop; `stop()` waits for the current round
 */
export function startProbeLoop(options: ProbeLoopOptions) {
  return startLoop("channel-probes", Math.max(50, Math.min(options.baseMs, 1000)), () => probeDue(options), options.logger);
}
