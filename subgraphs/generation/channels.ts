/**
 * Admin GraphQL of the channels (README "Channels"; docs/api/generation.md "Admin: channels"):
 * `adminChannels` and the four channel mutations. Each checks the admin token first (401/403,
 * never an API key), then calls src/generation/channels/. The key is never part of an answer.
 */
import { AppError } from "../../src/errors.ts";
import type { Channels } from "../../src/generation/channels/index.ts";
import { channelAnswer, channelTypeId } from "../../src/generation/channels/view.ts";
import type { ChannelInput } from "../../src/generation/channels/store.ts";
import type { GenerationContext } from "./context.ts";

/** The channels of the context after the admin check. @throws AppError 401/403 (admin token); 403 `forbidden` when this process runs no channels */
async function admin(ctx: GenerationContext): Promise<Channels> {
  await ctx.requireAdmin();
  if (!ctx.channels) throw new AppError("forbidden", "Channels are not served by this process");
  return ctx.channels;
}

/** The input with its `type` enum value read as the type id. */
function withTypeId<T extends { type?: string | null }>(input: T): T {
  return input.type == null ? input : { ...input, type: channelTypeId(input.type) };
}

const channelOf = channelAnswer;

export const channelQueries = {
  adminChannels: async (_: unknown, __: unknown, ctx: GenerationContext) => (await (await admin(ctx)).list()).map(channelOf),
};

export const channelMutations = {
  adminAddChannel: async (_: unknown, { input }: { input: Parameters<Channels["add"]>[0] }, ctx: GenerationContext) => ({
    channel: channelOf(await (await admin(ctx)).add(withTypeId(input))),
  }),
  adminUpdateChannel: async (_: unknown, { input }: { input: ChannelInput & { id: string } }, ctx: GenerationContext) => {
    const { id, ...fields } = input;
    return { channel: channelOf(await (await admin(ctx)).update(id, withTypeId(fields))) };
  },
  adminSetChannelStatus: async (_: unknown, { input }: { input: { id: string; enabled: boolean } }, ctx: GenerationContext) => ({
    channel: channelOf(await (await admin(ctx)).setStatus(input.id, input.enabled)),
  }),
  adminTestChannel: async (_: unknown, { input }: { input: { id: string } }, ctx: GenerationContext) => {
    const { channel, result } = await (await admin(ctx)).test(input.id);
    return { channel: channelOf(channel), ok: result.ok, latencyMs: result.latencyMs, error: result.error };
  },
};
