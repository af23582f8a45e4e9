/**
 * API keys (docs/api/generation.md §5; docs/architecture.md §2 CLI `keys`, §8 scopes).
 * Only the SHA-256 hash of a key is stored; the key itself is shown once, at creation.
 *
 * Longer than 400 lines on purpose: an API key's life (create, check, list, status, top-up,
 * settings) shares one row type and its converters; split, those would be exported across files
 * and an import cycle would come back (the listing is what the settings update returns).
 */
import { randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { AppError, notOneOfError } from "../errors.ts";
import { credit } from "../ledger/index.ts";
import { isValidAllowListEntry } from "./allow-list.ts";
import { ALL_SCOPES } from "./scopes.ts";
import type { Caller } from "./caller.ts";
import { KEY_DISABLED_EVENT } from "./revocation.ts";
import { appendOutbox } from "../events/outbox.ts";
import { isSqlite, nowIso, type Db } from "../db/index.ts";
import { statementBatcherPerDb } from "../db/batch.ts";
import { selectRows } from "../db/rows.ts";
import { newId } from "../ids.ts";
import { sha256Hex } from "../digest.ts";
import type { MilliYuan } from "../money.ts";
import { byCreation, keysetPage, type Page, type PageRequest } from "../pagination.ts";
import { newestEntryOf, type LedgerEntryView } from "../ledger/entries.ts";
import { isBlank } from "../text.ts";
import { audited, type AuditActor } from "../audit/log.ts";

export type { Caller } from "./caller.ts";

/** What `keys create` returns: the only time the key itself is shown. */
export interface CreatedKey {
  id: string;
  key: string;
  account_id: string;
  webhook_secret: string;
}

/** Options of {@link createKey}; amounts in milli-yuan. */
export interface CreateKeyOptions {
  name: string;
  accountId?: string;
  /** Opening balance in milli-yuan, written as a top-up ledger entry. */
  balance?: MilliYuan;
  scopes?: string[];
  allowIps?: string[];
  rateLimit?: number;
  callbackUrl?: string;
  requireSignature?: boolean;
}

/** SHA-256 hex of a key: what is stored and looked up. */
export function hashKey(key: string): string {
  return sha256Hex(key);
}

/** Largest single top-up of a key's account (and opening balance): 100 million yuan, in milli-yuan. */
export const MAX_KEY_TOPUP: MilliYuan = 100_000_000_000;
/** Largest rate limit, requests per second: the range of the `api_keys.rate_limit` integer column. */
export const MAX_RATE_LIMIT = 2_147_483_647;

function invalidKeyOption(field: string, message: string): AppError {
  return new AppError("validation_failed", message, { field });
}

/**
 * Checks the options of {@link createKey} before anything is written.
 * @returns the scopes the key will hold (every scope when none are given)
 * @throws AppError `validation_failed` (422) with `details.field` = the option name (`name`,
 *   `balance`, `scopes`, `allowIps`, `rateLimit`, `callbackUrl`)
 */
function validateKeyOptions(options: CreateKeyOptions): string[] {
  if (typeof options.name !== "string" || isBlank(options.name) || options.name.length > 200 || options.name.includes("\u0000")) {
    throw invalidKeyOption("name", "name must be a non-empty string of at most 200 characters");
  }
  if (options.balance != null && (!Number.isSafeInteger(options.balance) || options.balance < 0 || options.balance > MAX_KEY_TOPUP)) {
    throw invalidKeyOption("balance", `balance must be zero or a positive integer of milli-yuan up to ${MAX_KEY_TOPUP}`);
  }
  const scopes = options.scopes?.length ? options.scopes : [...ALL_SCOPES];
  const unknown = scopes.filter((s) => !(ALL_SCOPES as readonly string[]).includes(s));
  if (unknown.length) throw invalidKeyOption("scopes", `Unknown scope: ${unknown.join(", ")}`);
  if (options.allowIps != null) {
    if (!Array.isArray(options.allowIps) || options.allowIps.length > 100) throw invalidKeyOption("allowIps", "allowIps must list at most 100 CIDR ranges");
    options.allowIps.forEach((entry, i) => {
      if (typeof entry !== "string" || !isValidAllowListEntry(entry))
        throw invalidKeyOption(`allowIps[${i}]`, `allowIps[${i}] must be an IP address or a CIDR range`);
    });
  }
  if (options.rateLimit != null && (!Number.isSafeInteger(options.rateLimit) || options.rateLimit < 1 || options.rateLimit > MAX_RATE_LIMIT)) {
    throw invalidKeyOption("rateLimit", `rateLimit must be a positive integer of requests per second up to ${MAX_RATE_LIMIT}`);
  }
  if (options.callbackUrl != null) {
    let url: URL | null = null;
    try {
      url =
        typeof options.callbackUrl === "string" && options.callbackUrl.length <= 2000 && !options.callbackUrl.includes("\u0000")
          ? new URL(options.callbackUrl)
          : null;
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== "https:" && url.protocol !== "http:") || !url.hostname) {
      throw invalidKeyOption("callbackUrl", "callbackUrl must be an http or https URL");
    }
  }
  return scopes;
}

/**
 * Creates a key as `switchyard keys create` does (docs/architecture.md §2): {@link createKey}
 * with its audit row `keys.create` in the same transaction, naming the opening balance's ledger
 * entry, which is what `switchyard verify` asks of every opening balance.
 * @param actor who creates it (the CLI: `CLI_ACTOR`)
 * @param options as {@link createKey}
 * @returns the key (shown once) and the opening balance's ledger entry, null without a balance
 * @throws as {@link createKey}; the transaction then rolls back, audit row included
 */
export async function createKeyAudited(
  db: Db,
  actor: AuditActor,
  options: CreateKeyOptions,
): Promise<{ created: CreatedKey; opening: LedgerEntryView | null }> {
  return audited(
    db,
    actor,
    {
      action: "keys.create",
      objectType: "api_key",
      objectIdOf: (r) => r.created.id,
      after: (r) => ({ ...r.created, openingEntry: r.opening }),
      ledgerEntryOf: (r) => (r.opening ? Number(r.opening.id) : null),
    },
    async (trx) => {
      const created = await createKey(trx, options);
      return { created, opening: options.balance ? await newestEntryOf(trx, created.account_id) : null };
    },
  );
}

/**
 * Creates an API key, and its account when `accountId` is not given.
 * @param options name (1-200 characters), account, opening balance (milli-yuan), scopes (default
 *   all), source-IP allow-list (addresses or CIDRs), rate limit (requests per second), callback URL
 *   (http or https), whether requests must be signed
 * @returns the key (shown once), its id, account id and webhook secret
 * @throws AppError `not_found` when `accountId` names no account; `validation_failed` (422,
 *   `details.field` = the option) for a bad option, an unknown scope included
 * @see docs/architecture.md §2 `keys create`, §8 scopes; docs/api/generation.md §5
 */
export async function createKey(db: Db, options: CreateKeyOptions): Promise<CreatedKey> {
  const scopes = validateKeyOptions(options);
  const key = `sy_${randomBytes(24).toString("base64url")}`;
  const id = newId("key");
  const webhookSecret = `whsec_${randomBytes(24).toString("hex")}`;
  const createdAt = nowIso();
  let accountId = options.accountId;
  await db.transaction(async (trx) => {
    if (accountId) {
      const exists = await trx("accounts").where("id", accountId).first("id");
      if (!exists) throw new AppError("not_found", "Account not found");
    } else {
      accountId = newId("acc");
      await trx("accounts").insert({ id: accountId, name: options.name, balance: 0, credit_line: 0, created_at: createdAt });
    }
    await trx("api_keys").insert({
      id,
      account_id: accountId,
      name: options.name,
      key_hash: hashKey(key),
      key_prefix: key.slice(0, 10),
      status: "active",
      scopes: JSON.stringify(scopes),
      allow_ips: options.allowIps?.length ? JSON.stringify(options.allowIps) : null,
      rate_limit: options.rateLimit ?? null,
      callback_url: options.callbackUrl ?? null,
      webhook_secret: webhookSecret,
      require_signature: options.requireSignature ?? false,
      created_at: createdAt,
    });
    if (options.balance && options.balance > 0) {
      await credit(trx, "topup", { accountId: accountId!, keyId: id, amount: options.balance, reason: "opening balance" });
    }
  });
  return { id, key, account_id: accountId!, webhook_secret: webhookSecret };
}

/**
 * Turns an `Authorization` header value into the caller (docs/api/generation.md §5).
 * Accepts `Bearer <key>` (case-insensitive scheme) or a bare key.
 * @returns the caller
 * @throws AppError `unauthorized` (401) for a missing or unknown key, `key_disabled` (403)
 */
export async function authenticate(db: Db | Knex.Transaction, authorization: string | null | undefined): Promise<Caller> {
  return toCaller(await keyRowOf(authorization, (hash) => keyRowByHash(db, hash)));
}

/** A key's running totals and its account's balance as read with the key (docs/architecture.md §3.7). */
export interface KeyTotals {
  /** The account's balance, milli-yuan. */
  balance: MilliYuan;
  /** The key's generation debits minus refunds, milli-yuan. */
  spent: MilliYuan;
  billedSeconds: number;
  billedImages: number;
}

/**
 * {@link authenticate} for a read-only operation: the same key lookup, with the key's running
 * totals and its account's balance read in the same statement (one row by unique index, then by
 * primary key), so a dashboard asking for them runs no statement of its own (bench/README.md
 * "Round 3 step I"). The totals are as of the lookup: a caller that may write after it (a
 * mutation) must read them again (subgraphs/shared/auth.ts decides).
 * @returns the caller and its totals
 * @throws AppError `unauthorized` (401) for a missing or unknown key, `key_disabled` (403)
 */
export async function authenticateWithTotals(db: Db, authorization: string | null | undefined): Promise<{ caller: Caller; totals: KeyTotals }> {
  type Row = CallerRow & Record<"balance" | "spent" | "billed_seconds" | "billed_images", number | string>;
  const row = await keyRowOf(authorization, (hash) => selectRows<Row>(db, KEY_AND_TOTALS_BY_HASH, [hash]).then((rows) => rows[0]));
  return {
    caller: toCaller(row),
    totals: { balance: Number(row.balance), spent: Number(row.spent), billedSeconds: Number(row.billed_seconds), billedImages: Number(row.billed_images) },
  };
}

/**
 * The active key's row of an `Authorization` value, read by `read` from the key's hash.
 * @throws AppError `unauthorized`, `key_disabled`
 */
async function keyRowOf<Row extends CallerRow>(authorization: string | null | undefined, read: (hash: string) => Promise<Row | undefined>): Promise<Row> {
  const key = parseAuthorization(authorization);
  if (!key) throw new AppError("unauthorized");
  const row = await read(hashKey(key));
  if (!row) throw new AppError("unauthorized");
  if (row.status !== "active") throw new AppError("key_disabled");
  return row;
}

function toCaller(row: CallerRow): Caller {
  return {
    keyId: row.id,
    accountId: row.account_id,
    scopes: JSON.parse(row.scopes),
    allowIps: row.allow_ips ? JSON.parse(row.allow_ips) : null,
    rateLimit: row.rate_limit ?? null,
    requireSignature: Boolean(row.require_signature),
    signingSecret: row.webhook_secret ?? null,
  };
}

/** What {@link authenticate} reads of a key: its policy, never its name, totals or hash. */
interface CallerRow {
  id: string;
  account_id: string;
  status: string;
  scopes: string;
  allow_ips: string | null;
  rate_limit: number | null;
  require_signature: boolean | number;
  webhook_secret: string | null;
}

/** A key by the hash of the key (unique index). */
const KEY_BY_HASH =
  'select "id", "account_id", "status", "scopes", "allow_ips", "rate_limit", "require_signature", "webhook_secret" from "api_keys" where "key_hash" = ? limit 1';

/** {@link KEY_BY_HASH} with the key's running totals and its account's balance. */
const KEY_AND_TOTALS_BY_HASH =
  'select "k"."id", "k"."account_id", "k"."status", "k"."scopes", "k"."allow_ips", "k"."rate_limit", "k"."require_signature", "k"."webhook_secret", "k"."spent", "k"."billed_seconds", "k"."billed_images", "a"."balance" from "api_keys" as "k" inner join "accounts" as "a" on "a"."id" = "k"."account_id" where "k"."key_hash" = ? limit 1';
/** Keys by the hashes of many keys, in one statement (PostgreSQL: `= any` of a text array). */
const KEYS_BY_HASHES =
  'select "key_hash", "id", "account_id", "status", "scopes", "allow_ips", "rate_limit", "require_signature", "webhook_secret" from "api_keys" where "key_hash" = any(?::varchar[])';

/** Concurrent key lookups on PostgreSQL, one {@link KEYS_BY_HASHES} statement per batch. */
const keysByHashes = statementBatcherPerDb(async (db: Db, hashes: string[]) => {
  const rows = await selectRows<CallerRow & { key_hash: string }>(db, KEYS_BY_HASHES, [[...new Set(hashes)]]);
  const byHash = new Map(rows.map((row) => [row.key_hash, row]));
  return hashes.map((hash): CallerRow | undefined => byHash.get(hash));
});

/**
 * The key row of a hash, read after the call (never from a cache). On PostgreSQL outside a
 * transaction the concurrent lookups share one statement (src/db/batch.ts, ADR 0032): one
 * connection checkout and one round trip for every lookup queued meanwhile, each still its own
 * read of the row as it stands after the request asked.
 */
function keyRowByHash(db: Db | Knex.Transaction, hash: string): Promise<CallerRow | undefined> {
  if (isSqlite(db) || (db as Partial<Knex.Transaction>).isTransaction) return selectRows<CallerRow>(db, KEY_BY_HASH, [hash]).then((rows) => rows[0]);
  return keysByHashes(db as Db, hash);
}

/** The key in an Authorization header value, or null. */
export function parseAuthorization(value: string | null | undefined): string | null {
  if (!value) return null;
  const trimmed = value.trim();
  const match = /^bearer\s+(.+)$/i.exec(trimmed);
  const key = (match ? match[1] : trimmed).trim();
  return key.length > 0 && key.length <= 200 ? key : null;
}

/** Key states. */
export const KEY_STATUSES = ["active", "disabled"] as const;
/** A key's state: only an `active` key authenticates. */
export type KeyStatus = (typeof KEY_STATUSES)[number];

/** What an admin may read about a key (never the key, its hash or its secret). */
export interface KeyInfo {
  id: string;
  accountId: string;
  name: string;
  status: KeyStatus;
  scopes: string[];
  allowIps: string[] | null;
  rateLimit: number | null;
  requireSignature: boolean;
  /** ISO 8601. */
  createdAt: string;
}

/**
 * Reads a key's settings.
 * @returns the key's facts, or null when no key has that id
 */
export async function getKeyInfo(db: Db | Knex.Transaction, keyId: string): Promise<KeyInfo | null> {
  if (typeof keyId !== "string" || keyId.length === 0 || keyId.length > 40) return null;
  const row = await db("api_keys").where("id", keyId).first();
  return row ? toKeyInfo(row) : null;
}

/** An `api_keys` row (JSON columns as text; booleans as 0/1 on SQLite). */
interface KeyRow {
  id: string;
  account_id: string;
  name: string;
  status: KeyStatus;
  scopes: string;
  allow_ips: string | null;
  rate_limit: number | null;
  require_signature: boolean | number;
  created_at: string;
}

function toKeyInfo(row: KeyRow): KeyInfo {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    status: row.status,
    scopes: JSON.parse(row.scopes),
    allowIps: row.allow_ips ? JSON.parse(row.allow_ips) : null,
    rateLimit: row.rate_limit ?? null,
    requireSignature: Boolean(row.require_signature),
    createdAt: row.created_at,
  };
}

/** A key as an operator lists it: its settings, its callback URL and its account's balance. */
export interface KeyListing extends KeyInfo {
  callbackUrl: string | null;
  /** Balance of the key's account in milli-yuan (balances belong to accounts). */
  balance: MilliYuan;
  /** Debits minus refunds of the key in milli-yuan (its running total). */
  spent: MilliYuan;
  /** The key's tasks (its running total). */
  taskCount: number;
}

/** Filter of {@link listKeys}; unset fields do not filter. */
export interface KeyFilter {
  accountId?: string;
  status?: KeyStatus;
  /**
   * A key id or account id (exact), or part of a key's name (case-insensitive). Matched while the
   * page is read in (`created_at`, `id`) index order, so a page stops at `first + 1` matches.
   */
  search?: string;
}

function keyListingQuery(db: Db | Knex.Transaction): Knex.QueryBuilder {
  return db("api_keys as k").join("accounts as a", "a.id", "k.account_id").select("k.*", "a.balance as balance");
}

function toKeyListing(
  row: KeyRow & { callback_url: string | null; balance: number | string; spent?: number | string; task_count?: number | string },
): KeyListing {
  return {
    ...toKeyInfo(row),
    callbackUrl: row.callback_url ?? null,
    balance: Number(row.balance),
    spent: Number(row.spent ?? 0),
    taskCount: Number(row.task_count ?? 0),
  };
}

/**
 * Lists keys, newest first, a page at a time (docs/architecture.md §2 CLI `keys list`).
 * @param filter optional account id and status
 * @param page `first` keys after the opaque cursor `after`
 * @returns the page, with the total count of matching keys
 * @throws AppError `validation_failed` (422, field `status`) for an unknown status;
 *   `invalid_request` (400) for a bad cursor
 */
export async function listKeys(db: Db | Knex.Transaction, filter: KeyFilter, page: PageRequest): Promise<Page<KeyListing>> {
  const query = keyListingQuery(db);
  if (filter.accountId) query.where("k.account_id", filter.accountId);
  if (filter.status !== undefined) {
    if (!(KEY_STATUSES as readonly string[]).includes(filter.status)) throw notOneOfError("validation_failed", "status", KEY_STATUSES);
    query.where("k.status", filter.status);
  }
  const search = filter.search?.trim();
  if (search) {
    if (search.length > 200) throw invalidKeyOption("search", "search must be at most 200 characters");
    const pattern = `%${search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query.where((w) => w.where("k.id", search).orWhere("k.account_id", search).orWhereRaw("lower(k.name) like ? escape '\\'", [pattern]));
  }
  return keysetPage(query, byCreation("k"), page, toKeyListing);
}

/**
 * Reads one key as {@link listKeys} lists it (docs/architecture.md §2 CLI `keys show`).
 * @returns the key, or null when no key has that id
 */
export async function getKeyListing(db: Db | Knex.Transaction, keyId: string): Promise<KeyListing | null> {
  if (typeof keyId !== "string" || keyId.length === 0 || keyId.length > 40) return null;
  const row = await keyListingQuery(db).where("k.id", keyId).first();
  return row ? toKeyListing(row) : null;
}

/**
 * Writes the outbox row {@link KEY_DISABLED_EVENT} of a key, in the transaction that changed it:
 * once published, its open subscriptions end everywhere (src/auth/revocation.ts).
 * @param extra further payload fields (`reason`)
 */
async function announceKeyRevoked(trx: Knex.Transaction, keyId: string, extra: Record<string, unknown> = {}): Promise<void> {
  const row = await trx("api_keys").where("id", keyId).first("account_id");
  await appendOutbox(trx, { topic: KEY_DISABLED_EVENT, accountId: row.account_id, aggregateId: keyId, payload: { key_id: keyId, ...extra } });
}

/**
 * Enables or disables a key (the CLI `keys disable|enable` and the admin mutation
 * `adminSetApiKeyStatus` both call this). Disabling also writes the outbox row `key.disabled` in
 * the same transaction: once published, every router ends the key's open subscriptions
 * (graphql-ws close 4403, SSE streams ended) and the subgraphs end its streams with `key_disabled`
 * (src/auth/revocation.ts; security issue "Trust at the edges", item 5). Disabling a disabled key
 * announces it again (idempotent).
 * @param status `active` or `disabled`
 * @throws AppError `validation_failed` (422, field `status`) for another status; `not_found`
 *   (404) when no key has that id
 */
export async function setKeyStatus(db: Db, keyId: string, status: KeyStatus): Promise<void> {
  if (!(KEY_STATUSES as readonly string[]).includes(status)) throw notOneOfError("validation_failed", "status", KEY_STATUSES);
  await db.transaction(async (trx) => {
    // Write first: on SQLite a transaction that reads before it writes cannot wait for another
    // process's write lock (the upgrade fails at once with "database is locked"); a first write
    // waits out the busy timeout. The CLI disables keys while a server writes.
    const updated = await trx("api_keys").where("id", keyId).update({ status });
    if (!updated) throw new AppError("not_found", "API key not found");
    if (status === "disabled") await announceKeyRevoked(trx, keyId);
  });
}

/**
 * Tops up the account of a key: one ledger entry and the balance, in one transaction.
 * @param amount positive milli-yuan, at most {@link MAX_KEY_TOPUP}
 * @returns the `topup` entry it wrote (amount and balance after in milli-yuan; the operator console shows it)
 * @throws AppError `validation_failed` (422, field `amount`) for an amount that is not a positive
 *   integer up to the maximum; `not_found` (404) when no key has that id
 */
export async function topUpKey(db: Db, keyId: string, amount: MilliYuan): Promise<LedgerEntryView> {
  if (!Number.isSafeInteger(amount) || amount <= 0 || amount > MAX_KEY_TOPUP) {
    throw invalidKeyOption("amount", `amount must be a positive integer of milli-yuan up to ${MAX_KEY_TOPUP}`);
  }
  return db.transaction(async (trx) => {
    const row = await trx("api_keys").where("id", keyId).first("account_id");
    if (!row) throw new AppError("not_found", "API key not found");
    await credit(trx, "topup", { accountId: row.account_id, keyId, amount, reason: "top-up" });
    return (await newestEntryOf(trx, row.account_id))!;
  });
}

/** Settings of a key an operator may change; an absent field stays as it is. */
export interface KeySettingsChange {
  /** Empty: every scope. */
  scopes?: string[];
  /** Empty or null: any source address. */
  allowIps?: string[] | null;
  /** Requests per second; null: unlimited. */
  rateLimit?: number | null;
  /** http(s) URL; null: no callbacks. */
  callbackUrl?: string | null;
  requireSignature?: boolean;
}

/**
 * Changes a key's scopes, source-IP allow-list, rate limit, callback URL or signature rule (the
 * admin mutation `adminUpdateApiKey`), checked as {@link createKey} checks them. Routers share one
 * upstream subscription per key and judge scopes when it starts (router/subscription-fanout.ts),
 * so a change of scopes or allow-list also writes the outbox row `key.disabled` in the same
 * transaction: every open subscription of the key ends (graphql-ws 4403) and its clients
 * reconnect under the new settings; the key itself stays active.
 * @returns the key after the change
 * @throws AppError `validation_failed` (422, `details.field` = the option: `scopes`,
 *   `allowIps[i]`, `rateLimit`, `callbackUrl`); `not_found` (404) when no key has that id
 */
export async function updateKeySettings(db: Db, keyId: string, change: KeySettingsChange): Promise<KeyListing> {
  const scopes = validateKeyOptions({
    name: "-",
    scopes: change.scopes,
    allowIps: change.allowIps ?? undefined,
    rateLimit: change.rateLimit ?? undefined,
    callbackUrl: change.callbackUrl ?? undefined,
  });
  const update: Record<string, unknown> = {};
  if (change.scopes !== undefined) update.scopes = JSON.stringify(scopes);
  if (change.allowIps !== undefined) update.allow_ips = change.allowIps?.length ? JSON.stringify(change.allowIps) : null;
  if (change.rateLimit !== undefined) update.rate_limit = change.rateLimit;
  if (change.callbackUrl !== undefined) update.callback_url = change.callbackUrl;
  if (change.requireSignature !== undefined) update.require_signature = change.requireSignature;
  await db.transaction(async (trx) => {
    // Write first (see setKeyStatus): the CLI may write while a server does.
    const updated = Object.keys(update).length
      ? await trx("api_keys").where("id", keyId).update(update)
      : (await trx("api_keys").where("id", keyId).first("id"))
        ? 1
        : 0;
    if (!updated) throw new AppError("not_found", "API key not found");
    if (update.scopes !== undefined || update.allow_ips !== undefined) await announceKeyRevoked(trx, keyId, { reason: "settings_changed" });
  });
  return (await getKeyListing(db, keyId))!;
}
