/**
 * A channel write with its audit row (issue 23 §1; src/audit/log.ts): one place for what the
 * audit log keeps of a channel, used by admin GraphQL (subgraphs/generation/channels.ts) and the
 * CLI (`switchyard channels add|update|enable|disable`).
 */
import type { Knex } from "knex";
import { audited, type AuditActor } from "../../audit/log.ts";
import type { Db } from "../../db/index.ts";

/**
 * The stored row of a channel as its audit row shows it: without its sealed credentials (the
 * audit log's redaction of secret-named fields comes on top).
 * @returns the row, or null when no channel has the id
 */
export async function channelAuditRow(trx: Knex.Transaction, id: string): Promise<Record<string, unknown> | null> {
  const row = await trx("channels").where("id", id).first();
  return row ? { ...row, api_key: undefined, key_ciphertext: undefined } : null;
}

/**
 * Runs a channel write and its audit row in one transaction: the row before (when `id` is known)
 * and after.
 * @param action the admin field or command, for example `adminAddChannel` or `channels.add`
 * @param id the channel's id, or null for a channel the write creates
 * @param write the write, given the transaction; returns the written channel (its `id` at least)
 * @throws whatever the write throws; nothing is written then, audit row included
 */
export function auditedChannelWrite<T extends { id: string }>(
  db: Db,
  actor: AuditActor,
  action: string,
  id: string | null,
  write: (trx: Knex.Transaction) => Promise<T>,
): Promise<T> {
  return audited(
    db,
    actor,
    {
      action,
      objectType: "channel",
      objectId: id,
      before: async (trx: Knex.Transaction) => (id ? channelAuditRow(trx, id) : null),
      after: (c: T, trx: Knex.Transaction) => channelAuditRow(trx, c.id),
      objectIdOf: (c: T) => c.id,
    },
    write,
  );
}
