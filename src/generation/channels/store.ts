/**
 * The `channels` table (src/db/migrations/010_channels.ts; README "Channels"): rows to records and
 * back, the admin writes with their validation, and the implicit channel `chn_default`.
 */
import { AppError } from "../../errors.ts";
import type { Knex } from "knex";
import { nowIso, type Db } from "../../db/index.ts";
import { newId } from "../../ids.ts";
import { carriesCredentials } from "../../net/url-guard.ts";
import { getModel } from "../catalog.ts";
import { channelType, CHANNEL_TYPE_IDS, packCredentials, unpackCredentials, type CredentialField } from "../upstream/channel-types.ts";
import { redactUrlCredentials } from "../upstream/redact.ts";
import type { KeyBox } from "./crypto.ts";
import { isBlank } from "../../text.ts";

/** How a channel takes new tasks. */
export type ChannelStatus = "ENABLED" | "DISABLED" | "AUTO_DISABLED";

/** The id of the channel of GENERATION_UPSTREAM_URL (or the simulator). */
export const DEFAULT_CHANNEL_ID = "chn_default";

/** One model id sent upstream under another name. */
export interface ChannelModelMapping {
  modelId: number;
  upstreamModel: string;
}

/** A channel as the domain sees it (never its key). */
export interface ChannelRecord {
  id: string;
  name: string;
  /** The protocol it speaks (src/generation/upstream/channel-types.ts): `switchyard`, `openai-compatible`, `kling`, `ark`, `dashscope`, `minimax`, `gemini-veo`. */
  type: string;
  /** Never with credentials: refused on input; one stored before that is shown `scheme://[redacted]@host`. */
  baseUrl: string;
  /** Our model ids served; null: every model (the implicit channel). */
  models: number[] | null;
  modelMapping: ChannelModelMapping[];
  priority: number;
  weight: number;
  status: ChannelStatus;
  disabledReason: string | null;
  consecutiveFailures: number;
  probeFailures: number;
  nextProbeAt: string | null;
  implicit: boolean;
  /** The sealed credentials (crypto.ts; the plain key, or a JSON object of the type's fields); null for the implicit channel. */
  sealedKey: string | null;
  submissions: number;
  successes: number;
  failures: number;
  latencyMsTotal: number;
  /** What its providers reported its tasks used, summed (running totals, migration 016). */
  usage: ChannelProviderUsage;
  createdAt: string;
  updatedAt: string;
}

/** A `channels` row as the database returns it (counters may come back as strings on PostgreSQL). */
export interface ChannelRow {
  id: string;
  name: string;
  type?: string | null;
  base_url: string;
  /** JSON: model ids, or `["*"]` for every model. */
  models: string;
  model_mapping: string | null;
  priority: number | string;
  weight: number | string;
  status: ChannelStatus;
  disabled_reason: string | null;
  consecutive_failures: number | string;
  probe_failures: number | string;
  next_probe_at: string | null;
  implicit: boolean | number;
  api_key: string | null;
  submissions: number | string;
  successes: number | string;
  failures: number | string;
  latency_ms_total: number | string;
  usage_tasks?: number | string;
  usage_seconds_milli?: number | string;
  usage_images?: number | string;
  usage_points_milli?: number | string;
  usage_tokens?: number | string;
  created_at: string;
  updated_at: string;
}

/** Converts a `channels` row. */
export function toChannelRecord(row: ChannelRow): ChannelRecord {
  const models = JSON.parse(row.models) as (number | "*")[];
  return {
    id: row.id,
    name: row.name,
    type: row.type ?? "switchyard",
    // fetch refuses a URL with credentials, so masking one loses nothing that worked.
    baseUrl: redactUrlCredentials(row.base_url),
    models: models.includes("*") ? null : (models as number[]),
    modelMapping: JSON.parse(row.model_mapping ?? "[]"),
    priority: Number(row.priority),
    weight: Number(row.weight),
    status: row.status,
    disabledReason: row.disabled_reason ?? null,
    consecutiveFailures: Number(row.consecutive_failures),
    probeFailures: Number(row.probe_failures),
    nextProbeAt: row.next_probe_at ?? null,
    implicit: Boolean(row.implicit),
    sealedKey: row.api_key ?? null,
    submissions: Number(row.submissions),
    successes: Number(row.successes),
    failures: Number(row.failures),
    latencyMsTotal: Number(row.latency_ms_total),
    usage: {
      tasks: Number(row.usage_tasks ?? 0),
      seconds: Number(row.usage_seconds_milli ?? 0) / 1000,
      images: Number(row.usage_images ?? 0),
      points: Number(row.usage_points_milli ?? 0) / 1000,
      tokens: Number(row.usage_tokens ?? 0),
    },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Every channel, highest priority first. */
export async function listChannels(db: Db): Promise<ChannelRecord[]> {
  const rows = await db("channels").orderBy([{ column: "priority", order: "desc" }, { column: "id" }]);
  return rows.map(toChannelRecord);
}

/** @throws AppError `not_found` (404) `Channel not found` */
export async function getChannel(db: Db, id: string): Promise<ChannelRecord> {
  const row = typeof id === "string" && id.length <= 40 ? await db("channels").where({ id }).first() : undefined;
  if (!row) throw new AppError("not_found", "Channel not found");
  return toChannelRecord(row);
}

/**
 * Writes the row of the implicit channel (start-up): created once, its base URL kept current;
 * its status, health and counters are left as they are (shared by every process).
 * @param baseUrl GENERATION_UPSTREAM_URL, or `simulator:` for the embedded simulator
 */
export async function upsertDefaultChannel(db: Db, baseUrl: string): Promise<void> {
  const now = nowIso();
  await db("channels")
    .insert({
      id: DEFAULT_CHANNEL_ID,
      name: "default",
      base_url: baseUrl,
      api_key: null,
      models: JSON.stringify(["*"]),
      priority: 0,
      weight: 1,
      implicit: true,
      created_at: now,
      updated_at: now,
    })
    .onConflict("id")
    .merge({ base_url: baseUrl });
}

/** Fields of a channel an admin may set. */
export interface ChannelInput {
  name?: string;
  /** The channel type (only when adding; default `switchyard`). */
  type?: string | null;
  baseUrl?: string;
  /** The provider's key (one-key types). */
  apiKey?: string;
  /** Kling's access key (with `secretKey`). */
  accessKey?: string;
  /** Kling's secret key (with `accessKey`). */
  secretKey?: string;
  models?: number[];
  modelMapping?: ChannelModelMapping[] | null;
  priority?: number | null;
  weight?: number | null;
}

const invalid = (message: string) => new AppError("invalid_request", message);

/** Every credential field. */
const CREDENTIAL_FIELDS: readonly CredentialField[] = ["apiKey", "accessKey", "secretKey"];

/**
 * The sealed credentials of the input, or undefined when it gives none.
 * @throws AppError 400 a field the type does not take, or only some of its fields; 403 no CHANNEL_KEY_SECRET
 */
function sealedCredentials(input: ChannelInput, type: string, box: KeyBox | null): string | undefined {
  const spec = channelType(type)!;
  const given = CREDENTIAL_FIELDS.filter((f) => input[f] != null);
  if (given.length === 0) return undefined;
  for (const field of given)
    if (!spec.credentials.includes(field)) throw invalid(`${field} is not a credential of type ${type}: give ${spec.credentials.join(" and ")}`);
  for (const field of spec.credentials)
    if (input[field] == null) throw invalid(`${field} is required with ${given.join(", ")} (type ${type} takes ${spec.credentials.join(" and ")})`);
  if (!box) throw new AppError("forbidden", "CHANNEL_KEY_SECRET is not set: channel keys cannot be stored");
  for (const field of spec.credentials) {
    const value = input[field];
    if (!value || value.length > 1000) throw invalid(`${field} must be 1 to 1000 characters`);
  }
  return box.seal(packCredentials(spec, input));
}

/** Validates admin input and returns the columns it sets. @throws AppError 400 naming the field */
function columnsOf(input: ChannelInput, box: KeyBox | null, type: string): Record<string, unknown> {
  const columns: Record<string, unknown> = {};
  if (input.name !== undefined) {
    const name = String(input.name).trim();
    if (isBlank(name) || name.length > 100) throw invalid("name must be 1 to 100 characters");
    columns.name = name;
  }
  if (input.baseUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(input.baseUrl);
    } catch {
      throw invalid("baseUrl must be an http or https URL");
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || input.baseUrl.length > 500) throw invalid("baseUrl must be an http or https URL");
    // The URL would be shown back (adminChannels, channels list): the key has its own field.
    if (carriesCredentials(url)) throw invalid("baseUrl must not contain credentials (user:password@): give the provider's key as apiKey");
    columns.base_url = input.baseUrl.replace(/\/+$/, "");
  }
  const sealed = sealedCredentials(input, type, box);
  if (sealed !== undefined) columns.api_key = sealed;
  if (input.models !== undefined) {
    if (!Array.isArray(input.models) || input.models.length === 0) throw invalid("models must list at least one model id");
    for (const id of input.models) if (!getModel(id)) throw invalid(`models: unknown model id ${id}`);
    columns.models = JSON.stringify([...new Set(input.models)]);
  }
  if (input.modelMapping != null) {
    for (const m of input.modelMapping) {
      if (!getModel(m.modelId)) throw invalid(`modelMapping: unknown model id ${m.modelId}`);
      if (!m.upstreamModel || m.upstreamModel.length > 100) throw invalid("modelMapping: upstreamModel must be 1 to 100 characters");
    }
    columns.model_mapping = JSON.stringify(input.modelMapping.map((m) => ({ modelId: m.modelId, upstreamModel: m.upstreamModel })));
  }
  if (input.priority != null) {
    if (!Number.isInteger(input.priority) || Math.abs(input.priority) > 1_000_000) throw invalid("priority must be a whole number from -1000000 to 1000000");
    columns.priority = input.priority;
  }
  if (input.weight != null) {
    if (!Number.isInteger(input.weight) || input.weight < 1 || input.weight > 1000) throw invalid("weight must be a whole number from 1 to 1000");
    columns.weight = input.weight;
  }
  return columns;
}

/**
 * Adds a channel (ENABLED).
 * @param box seals the key; null when CHANNEL_KEY_SECRET is unset
 * @throws AppError 400 for bad input, 403 when no CHANNEL_KEY_SECRET is set
 */
export async function addChannel(
  db: Db,
  box: KeyBox | null,
  input: Required<Pick<ChannelInput, "name" | "baseUrl" | "models">> & ChannelInput,
): Promise<ChannelRecord> {
  const type = input.type ?? "switchyard";
  const spec = channelType(type);
  if (!spec) throw invalid(`type must be one of: ${CHANNEL_TYPE_IDS.join(", ")}`);
  for (const field of ["name", "baseUrl", ...spec.credentials, "models"] as const) if (input[field] == null) throw invalid(`${field} is required`);
  const columns = columnsOf(input, box, type);
  const now = nowIso();
  const id = newId("chn");
  await db("channels").insert({
    id,
    priority: 0,
    weight: 1,
    model_mapping: "[]",
    ...columns,
    type,
    status: "ENABLED",
    implicit: false,
    created_at: now,
    updated_at: now,
  });
  return getChannel(db, id);
}

/**
 * Changes the given fields of a stored channel.
 * @throws AppError 404 unknown id, 400 bad input or the implicit channel (set by GENERATION_UPSTREAM_URL)
 */
export async function updateChannel(db: Db, box: KeyBox | null, id: string, input: ChannelInput): Promise<ChannelRecord> {
  const channel = await getChannel(db, id);
  if (channel.implicit) throw invalid("chn_default is set by GENERATION_UPSTREAM_URL and GENERATION_UPSTREAM_KEY; only its status can change");
  if (input.type != null && input.type !== channel.type) throw invalid("type cannot change: add a channel of the new type and disable this one");
  const columns = columnsOf(input, box, channel.type);
  if (Object.keys(columns).length > 0)
    await db("channels")
      .where({ id })
      .update({ ...columns, updated_at: nowIso() });
  return getChannel(db, id);
}

/**
 * Enables (health reset) or disables a channel by hand.
 * @throws AppError 404 unknown id
 */
export async function setChannelStatus(db: Db, id: string, enabled: boolean): Promise<ChannelRecord> {
  await getChannel(db, id);
  await db("channels")
    .where({ id })
    .update(
      enabled
        ? { status: "ENABLED", disabled_reason: null, consecutive_failures: 0, probe_failures: 0, next_probe_at: null, updated_at: nowIso() }
        : { status: "DISABLED", disabled_reason: "disabled by an operator", next_probe_at: null, updated_at: nowIso() },
    );
  return getChannel(db, id);
}

/**
 * Every configured provider key, to be redacted from what providers say (../upstream/redact.ts).
 * @param channels the stored channels (keys that do not open with `box` are left out: such a
 *   channel cannot be called, so its provider never saw the key from here)
 * @param box opens the sealed keys; null when CHANNEL_KEY_SECRET is unset
 * @param upstreamKey GENERATION_UPSTREAM_KEY (the implicit channel's, never stored)
 * @returns the plain keys (empty ones left out)
 */
export function configuredKeys(channels: readonly ChannelRecord[], box: KeyBox | null, upstreamKey?: string): string[] {
  const keys = upstreamKey ? [upstreamKey] : [];
  for (const channel of channels) {
    if (!box || !channel.sealedKey) continue;
    try {
      const plain = box.open(channel.sealedKey);
      const spec = channelType(channel.type);
      if (!spec) keys.push(plain);
      else keys.push(...Object.values(unpackCredentials(spec, plain)).filter(Boolean));
    } catch {
      /* not sealed with this secret: never sent from here */
    }
  }
  return keys;
}

/** Open tasks (status 0, 3, 4) per accepting channel; tasks without a channel count for `chn_default`. */
export async function openTasksByChannel(db: Db): Promise<Map<string, number>> {
  const rows = await db("tasks").whereIn("status", [0, 3, 4]).andWhere("submit_state", "sent").groupBy("channel_id").select("channel_id").count({ n: "*" });
  return new Map((rows as { channel_id: string | null; n: number | string }[]).map((r) => [r.channel_id ?? DEFAULT_CHANNEL_ID, Number(r.n)]));
}

/** The provider-reported usage of one channel's finished tasks, summed (ADR 0023). */
export interface ChannelProviderUsage {
  /** Tasks whose provider reported usage. */
  tasks: number;
  seconds: number;
  images: number;
  points: number;
  tokens: number;
}

/** Thousandths of a reported amount, as stored (a non-finite or negative amount counts 0). */
const thousandths = (value: number | undefined) => (typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value * 1000) : 0);
const whole = (value: number | undefined) => (typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.round(value) : 0);

/**
 * Adds a task's reported usage to its channel's running totals, inside the transaction that
 * writes the report (src/generation/tasks/apply-state.ts), so the totals move exactly once with it.
 * @param taskId the task (its `channel_id`; null: `chn_default`)
 */
export async function addProviderUsage(
  trx: Db | Knex.Transaction,
  taskId: string,
  usage: { seconds?: number; images?: number; points?: number; tokens?: number },
): Promise<void> {
  const add = (column: string, amount: number) => trx.raw("?? + ?", [column, amount]);
  await trx("channels")
    .where("id", trx.raw("coalesce((select channel_id from tasks where id = ?), ?)", [taskId, DEFAULT_CHANNEL_ID]))
    .update({
      usage_tasks: add("usage_tasks", 1),
      usage_seconds_milli: add("usage_seconds_milli", thousandths(usage.seconds)),
      usage_images: add("usage_images", whole(usage.images)),
      usage_points_milli: add("usage_points_milli", thousandths(usage.points)),
      usage_tokens: add("usage_tokens", whole(usage.tokens)),
    });
}
