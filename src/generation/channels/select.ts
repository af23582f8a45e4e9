/**
 * Channel selection (README "Channels"): the order a submission tries channels in. Channels that
 * take new tasks (ENABLED) and serve the model, grouped by priority, highest group first; inside
 * a group a weighted random order (each next channel drawn with probability weight / remaining
 * weight), so the first pick is weighted random and failover stays inside the group before it
 * moves to the next one.
 */
import { MODEL_IDS } from "../catalog.ts";
import type { ChannelRecord } from "./store.ts";

/** True when the channel serves our model id. */
export function servesModel(channel: Pick<ChannelRecord, "models">, modelId: number): boolean {
  return channel.models === null || channel.models.includes(modelId);
}

/**
 * The models no other ENABLED channel serves (ADR 0012 "the last channel of a model"): taking
 * `channel` out would leave each of them with no channel, so it is never auto-disabled while this
 * is not empty (src/generation/channels/health.ts); a manual disable is obeyed and warned about.
 * @param channel the channel to take out
 * @param channels every channel (any status; `channel` itself is skipped)
 * @param modelIds the catalog's ids: what a channel serving every model (`models: null`) serves
 * @returns our model ids, in `modelIds` order (empty: every model it serves has another channel)
 */
export function modelsServedOnlyBy(
  channel: Pick<ChannelRecord, "id" | "models">,
  channels: readonly Pick<ChannelRecord, "id" | "status" | "models">[],
  modelIds: readonly number[] = MODEL_IDS,
): number[] {
  const others = channels.filter((c) => c.id !== channel.id && c.status === "ENABLED");
  return modelIds.filter((id) => servesModel(channel, id) && !others.some((c) => servesModel(c, id)));
}

/**
 * @param channels every channel (any status, any order)
 * @param modelId our model id
 * @param random uniform in [0, 1) (tests pass a seeded one)
 * @returns the channels to try, in order; empty when no enabled channel serves the model
 */
export function orderChannels<C extends Pick<ChannelRecord, "status" | "models" | "priority" | "weight">>(
  channels: readonly C[],
  modelId: number,
  random: () => number = Math.random,
): C[] {
  const groups = new Map<number, C[]>();
  for (const channel of channels) {
    if (channel.status !== "ENABLED" || !servesModel(channel, modelId)) continue;
    const group = groups.get(channel.priority) ?? [];
    group.push(channel);
    groups.set(channel.priority, group);
  }
  const ordered: C[] = [];
  for (const priority of [...groups.keys()].sort((a, b) => b - a)) {
    const left = [...groups.get(priority)!];
    while (left.length > 0) {
      const total = left.reduce((sum, c) => sum + Math.max(1, c.weight), 0);
      let draw = random() * total;
      let index = 0;
      while (index < left.length - 1 && draw >= Math.max(1, left[index]!.weight)) draw -= Math.max(1, left[index++]!.weight);
      ordered.push(left.splice(index, 1)[0]!);
    }
  }
  return ordered;
}
