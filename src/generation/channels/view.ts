/**
 * A channel as operators see it (README "Channels"): one shape for admin GraphQL's `Channel`
 * (`adminChannels`, the mutations) and `switchyard channels … --json`, so both answer alike —
 * `models` a list (empty for `chn_default`, which serves every model), `type` the `ChannelType` enum value,
 * camelCase throughout, the figures under `stats`. Never the key.
 */
import type { Db } from "../../db/index.ts";
import { listChannels, openTasksByChannel, type ChannelRecord } from "./store.ts";

/** A channel with its figures. */
export interface ChannelView extends ChannelRecord {
  openTasks: number;
}

/** A type id (`openai-compatible`) as the `ChannelType` enum value (`OPENAI_COMPATIBLE`). */
export const channelTypeEnum = (type: string): string => type.toUpperCase().replaceAll("-", "_");

/** A `ChannelType` enum value as the type id. */
export const channelTypeId = (value: string): string => value.toLowerCase().replaceAll("_", "-");

/** Every channel with its open tasks and provider usage, highest priority first. */
export async function channelViews(db: Db): Promise<ChannelView[]> {
  const [channels, open] = await Promise.all([listChannels(db), openTasksByChannel(db)]);
  return channels.map((c) => ({ ...c, openTasks: open.get(c.id) ?? 0 }));
}

/** One channel with its figures. */
export async function channelView(db: Db, channel: ChannelRecord): Promise<ChannelView> {
  const open = await openTasksByChannel(db);
  return { ...channel, openTasks: open.get(channel.id) ?? 0 };
}

/**
 * The answer shape of a channel (GraphQL `Channel`; `channels … --json`).
 * @returns a plain object; `stats.successRate` is from 0 to 1, null before any submission
 */
export function channelAnswer(c: ChannelView) {
  const usage = c.usage;
  return {
    id: c.id,
    name: c.name,
    type: channelTypeEnum(c.type),
    baseUrl: c.baseUrl,
    models: c.models ?? [],
    modelMapping: c.modelMapping,
    priority: c.priority,
    weight: c.weight,
    status: c.status,
    disabledReason: c.disabledReason,
    consecutiveFailures: c.consecutiveFailures,
    nextProbeAt: c.nextProbeAt,
    implicit: c.implicit,
    stats: {
      submissions: c.submissions,
      successes: c.successes,
      failures: c.failures,
      successRate: c.submissions > 0 ? c.successes / c.submissions : null,
      latencyMsAvg: c.submissions > 0 ? c.latencyMsTotal / c.submissions : null,
      openTasks: c.openTasks,
      providerUsage: { seconds: usage.seconds, images: usage.images, points: usage.points, tokens: usage.tokens },
      providerUsageTasks: usage.tasks,
    },
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
  };
}
