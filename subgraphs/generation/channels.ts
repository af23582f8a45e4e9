/**
 * Admin GraphQL of the channels (README "Channels"; docs/api/generation.md "Admin: channels"):
 * `adminChannels` and the four channel mutations. Each checks the operator and its role first
 * (401/403, never an API key; subgraphs/shared/admin-access.ts), then calls
 * src/generation/channels/, each write with its audit row (src/audit/log.ts). The key is never
 * part of an answer or an audit row.
 */
import { AppError } from "../../src/errors.ts";
import type { Channels, ChannelView } from "../../src/generation/channels/index.ts";
import { channelAnswer, channelTypeId } from "../../src/generation/channels/view.ts";
import type { ChannelInput } from "../../src/generation/channels/store.ts";
import type { Knex } from "knex";
import { audited } from "../../src/audit/log.ts";
import { auditedChannelWrite } from "../../src/generation/channels/audit.ts";
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

export const channelQueries = {
  adminChannels: async (_: unknown, __: unknown, ctx: GenerationContext) => (await (await admin(ctx)).list()).map(channelAnswer),
};

/**
 * Runs a channel write with its audit row in one transaction (src/generation/channels/audit.ts),
 * then tells this process's channel router to reload (after the commit, so it reads the change).
 */
async function auditedChannel(
  ctx: GenerationContext,
  action: string,
  id: string | null,
  write: (channels: Channels, trx: Knex.Transaction) => Promise<ChannelView>,
): Promise<ChannelView> {
  const channels = await admin(ctx);
  const channel = await auditedChannelWrite(ctx.db, ctx.auditActor(), action, id, (trx) => write(channels, trx));
  channels.upstream.invalidate();
  return channel;
}

export const channelMutations = {
  adminAddChannel: async (_: unknown, { input }: { input: Parameters<Channels["add"]>[0] }, ctx: GenerationContext) => ({
    channel: channelAnswer(await auditedChannel(ctx, "adminAddChannel", null, (channels, trx) => channels.add(withTypeId(input), trx))),
  }),
  adminUpdateChannel: async (_: unknown, { input }: { input: ChannelInput & { id: string } }, ctx: GenerationContext) => {
    const { id, ...fields } = input;
    return { channel: channelAnswer(await auditedChannel(ctx, "adminUpdateChannel", id, (channels, trx) => channels.update(id, withTypeId(fields), trx))) };
  },
  adminSetChannelStatus: async (_: unknown, { input }: { input: { id: string; enabled: boolean } }, ctx: GenerationContext) => ({
    channel: channelAnswer(await auditedChannel(ctx, "adminSetChannelStatus", input.id, (channels, trx) => channels.setStatus(input.id, input.enabled, trx))),
  }),
  adminTestChannel: async (_: unknown, { input }: { input: { id: string } }, ctx: GenerationContext) => {
    // The probe is a network call: it runs before the audit row's transaction (a transaction held
    // across it would stall every write on SQLite); the row records the probe and its outcome.
    const { channel, result } = await (await admin(ctx)).test(input.id);
    await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminTestChannel",
        objectType: "channel",
        objectId: input.id,
        after: () => ({ status: channel.status, ok: result.ok, latencyMs: result.latencyMs, error: result.error }),
      },
      async () => null,
    );
    return { channel: channelAnswer(channel), ok: result.ok, latencyMs: result.latencyMs, error: result.error };
  },
};
