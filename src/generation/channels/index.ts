/**
 * Channels assembled (README "Channels"; ADR 0012): the router that stands in for the upstream
 * adapter, the health recorder, the probe loop, and the admin operations behind the GraphQL
 * mutations. The CLI uses the store directly (src/generation/channels/store.ts).
 */
import type { Logger } from "pino";
import { ConfigError } from "../../config.ts";
import type { Db } from "../../db/index.ts";
import type { ResultStore } from "../upstream/result-store.ts";
import type { GenerationUpstream } from "../upstream/types.ts";
import { createKeyBox, type KeyBox } from "./crypto.ts";
import { createChannelHealth, type ChannelHealth } from "./health.ts";
import { withSubmitMetrics, type ChannelMetrics } from "./metrics.ts";
import { probeAdapter, startProbeLoop, type ProbeResult } from "./probe.ts";
import { createChannelRouter, type ChannelRouter } from "./router.ts";
import { modelsServedOnlyBy } from "./select.ts";
import { channelView, channelViews, type ChannelView } from "./view.ts";
import { addChannel, getChannel, listChannels, setChannelStatus, updateChannel, upsertDefaultChannel, type ChannelInput, type ChannelRecord } from "./store.ts";

/** Settings of the channels (src/config.ts). */
export interface ChannelSettings {
  channelKeySecret?: string;
  channelFailureThreshold: number;
  channelMaxAttempts: number;
  channelProbeBaseMs: number;
  channelProbeMaxMs: number;
  upstreamTimeoutMs: number;
  upstreamUrl?: string;
  /** GENERATION_UPSTREAM_KEY: redacted from providers' texts like every stored key. */
  upstreamKey?: string;
  /** Where each channel's provider results are kept (src/generation/media/local.ts); unset: none. */
  results?: (channelId: string) => ResultStore;
}

export type { ChannelView } from "./view.ts";

/** The running channels of one generation process. */
export interface Channels {
  upstream: ChannelRouter;
  list(): Promise<ChannelView[]>;
  /** Adds a channel; `exec`: the transaction to write in (an audited admin write), default the database. */
  add(input: Parameters<typeof addChannel>[2], exec?: Db): Promise<ChannelView>;
  /** Changes a channel; `exec` as in {@link add}. */
  update(id: string, input: ChannelInput, exec?: Db): Promise<ChannelView>;
  /**
   * Enables or disables a channel by hand. A disable is obeyed even for the last enabled channel
   * of a model (an operator asked; ADR 0012): that model's submissions are then refused and
   * refunded until a channel serving it is enabled, and a warning names the models.
   */
  setStatus(id: string, enabled: boolean, exec?: Db): Promise<ChannelView>;
  /** Probes one channel now; a success re-enables an AUTO_DISABLED one. */
  test(id: string): Promise<{ channel: ChannelView; result: ProbeResult }>;
  stop(): Promise<void>;
}

/** The key box of CHANNEL_KEY_SECRET, or null when unset. */
export function keyBoxFor(settings: Pick<ChannelSettings, "channelKeySecret">): KeyBox | null {
  return settings.channelKeySecret ? createKeyBox(settings.channelKeySecret) : null;
}

/**
 * Refuses to start when stored channels exist but CHANNEL_KEY_SECRET is unset or cannot open them.
 * @throws ConfigError one line
 */
export async function assertChannelKeys(db: Db, box: KeyBox | null): Promise<void> {
  const row = await db("channels").where({ implicit: false }).whereNotNull("api_key").first();
  if (!row) return;
  if (!box) throw new ConfigError("CHANNEL_KEY_SECRET is required: the database holds channels whose API keys are encrypted with it");
  try {
    box.open(row.api_key);
  } catch {
    throw new ConfigError(`CHANNEL_KEY_SECRET cannot decrypt the API key of channel ${row.id}: it is not the secret the channels were stored with`);
  }
}

/** What the admin operations need: the database, the logger, the key box, the router and the health recorder. */
export interface ChannelAdminDeps {
  db: Db;
  logger: Logger;
  box: KeyBox | null;
  upstream: ChannelRouter;
  health: ChannelHealth;
}

/** After a write: this process sees it at once. */
async function changed(deps: ChannelAdminDeps, channel: ChannelRecord, exec: Db = deps.db): Promise<ChannelView> {
  deps.upstream.invalidate();
  return channelView(exec, channel);
}

/** Every channel as the admin sees it, with the successes counted so far written first. */
export async function adminList(deps: ChannelAdminDeps): Promise<ChannelView[]> {
  await deps.health.flush();
  return channelViews(deps.db);
}

/** {@link Channels.add}: stores a channel (its key sealed) and serves it in this process at once. */
export async function adminAdd(deps: ChannelAdminDeps, input: Parameters<typeof addChannel>[2], exec: Db = deps.db): Promise<ChannelView> {
  return changed(deps, await addChannel(exec, deps.box, input), exec);
}

/** {@link Channels.update}: changes a channel and serves the change in this process at once. */
export async function adminUpdate(deps: ChannelAdminDeps, id: string, input: ChannelInput, exec: Db = deps.db): Promise<ChannelView> {
  return changed(deps, await updateChannel(exec, deps.box, id, input), exec);
}

/** {@link Channels.setStatus}: enables or disables a channel by hand, warning when a model is left unserved. */
export async function adminSetStatus(deps: ChannelAdminDeps, id: string, enabled: boolean, exec: Db = deps.db): Promise<ChannelView> {
  const channel = await setChannelStatus(exec, id, enabled);
  const unserved = enabled ? [] : modelsServedOnlyBy(channel, await listChannels(exec));
  if (unserved.length > 0)
    deps.logger.warn({ channel_id: id, models: unserved }, "channel disabled by an operator: no enabled channel serves these models now");
  return changed(deps, channel, exec);
}

/** {@link Channels.test}: probes one channel now; a success re-enables an AUTO_DISABLED one. */
export async function adminTest(deps: ChannelAdminDeps, id: string): Promise<{ channel: ChannelView; result: ProbeResult }> {
  const channel = await getChannel(deps.db, id);
  let result: ProbeResult;
  try {
    result = await probeAdapter(deps.upstream.adapterFor(channel));
  } catch (error) {
    result = { ok: false, latencyMs: 0, error: (error as Error).message };
  }
  if (result.ok && channel.status === "AUTO_DISABLED") return { channel: await changed(deps, await setChannelStatus(deps.db, id, true)), result };
  return { channel: await channelView(deps.db, channel), result };
}

/**
 * Starts the channels of a generation process: writes the `chn_default` row, checks the key
 * secret, starts the health recorder and the probe loop.
 * @param implicit the adapter of GENERATION_UPSTREAM_URL or the simulator
 * @param metrics where each submission attempt's duration is observed (src/generation/channels/metrics.ts)
 * @throws ConfigError as {@link assertChannelKeys}
 */
export async function startChannels(
  db: Db,
  logger: Logger,
  settings: ChannelSettings,
  implicit: GenerationUpstream,
  metrics?: ChannelMetrics,
): Promise<Channels> {
  const box = keyBoxFor(settings);
  await upsertDefaultChannel(db, settings.upstreamUrl ?? "simulator:");
  await assertChannelKeys(db, box);
  let router: ChannelRouter | undefined;
  const recorder = createChannelHealth({
    db,
    logger,
    threshold: settings.channelFailureThreshold,
    probeBaseMs: settings.channelProbeBaseMs,
    onDisabled: () => router?.invalidate(),
  });
  const health = metrics ? withSubmitMetrics(recorder, metrics) : recorder;
  metrics?.flushBeforeScrape(() => recorder.flush());
  router = createChannelRouter({
    db,
    logger,
    box,
    implicit,
    implicitKey: settings.upstreamKey,
    health,
    timeoutMs: settings.upstreamTimeoutMs,
    maxAttempts: settings.channelMaxAttempts,
    results: settings.results,
  });
  const upstream = router;
  const probes = startProbeLoop({
    db,
    logger,
    adapterFor: (c) => upstream.adapterFor(c),
    baseMs: settings.channelProbeBaseMs,
    maxMs: settings.channelProbeMaxMs,
    onEnabled: () => upstream.invalidate(),
  });

  const deps: ChannelAdminDeps = { db, logger, box, upstream, health };
  return {
    upstream,
    list: () => adminList(deps),
    add: (input, exec) => adminAdd(deps, input, exec),
    update: (id, input, exec) => adminUpdate(deps, id, input, exec),
    setStatus: (id, enabled, exec) => adminSetStatus(deps, id, enabled, exec),
    test: (id) => adminTest(deps, id),
    async stop() {
      await probes.stop();
      await health.stop();
    },
  };
}
