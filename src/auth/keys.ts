/**
 * API keys (generation spec part 5; DESIGN §2 CLI `keys`, §8 scopes).
 * Only the SHA-256 hash of a key is stored; the key itself is shown once, at creation.
 */
import { createHash, randomBytes } from "node:crypto";
import type { Knex } from "knex";
import { AppError } from "../errors.ts";
import { credit } from "../ledger/index.ts";
import { nowIso, type Db } from "../db/index.ts";
import { newId } from "../ids.ts";
import type { MilliYuan } from "../money.ts";

/** Every scope a key can hold (DESIGN §8); a key created without scopes holds them all. */
export const ALL_SCOPES = [
  "generation",
  "catalog:read",
  "orders:read",
  "orders:write",
  "domains:read",
  "domains:write",
  "usage:read",
  "resources:read",
  "billing:read",
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

/** The authenticated caller of a request: its key and the account the key belongs to. */
export interface Caller {
  keyId: string;
  accountId: string;
  scopes: readonly string[];
  allowIps: readonly string[] | null;
  rateLimit: number | null;
  /** Whether every request must carry a valid `X-Service-Signature`. */
  requireSignature: boolean;
  /** Secret of request signatures and callback signatures. Never logged or returned. */
  signingSecret: string | null;
}

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
  return createHash("sha256").update(key).digest("hex");
}

/**
 * Creates an API key, and its account when `accountId` is not given.
 * @returns the key (shown once), its id, account id and webhook secret
 * @throws AppError `not_found` when `accountId` names no account; `invalid_request` for an unknown scope
 */
export async function createKey(db: Db, options: CreateKeyOptions): Promise<CreatedKey> {
  const scopes = options.scopes?.length ? options.scopes : [...ALL_SCOPES];
  const unknown = scopes.filter((s) => !(ALL_SCOPES as readonly string[]).includes(s));
  if (unknown.length) throw new AppError("invalid_request", `Unknown scope: ${unknown.join(", ")}`);
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
 * Turns an `Authorization` header value into the caller (spec part 5).
 * Accepts `Bearer <key>` (case-insensitive scheme) or a bare key.
 * @returns the caller
 * @throws AppError `unauthorized` (401) for a missing or unknown key, `key_disabled` (403)
 */
export async function authenticate(db: Db | Knex.Transaction, authorization: string | null | undefined): Promise<Caller> {
  const key = parseAuthorization(authorization);
  if (!key) throw new AppError("unauthorized");
  const row = await db("api_keys").where("key_hash", hashKey(key)).first();
  if (!row) throw new AppError("unauthorized");
  if (row.status !== "active") throw new AppError("key_disabled");
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

/** The key in an Authorization header value, or null. */
export function parseAuthorization(value: string | null | undefined): string | null {
  if (!value) return null;
  const trimmed = value.trim();
  const match = /^bearer\s+(.+)$/i.exec(trimmed);
  const key = (match ? match[1] : trimmed).trim();
  return key.length > 0 && key.length <= 200 ? key : null;
}

/**
 * Enables or disables a key.
 * @throws AppError `not_found` when no key has that id
 */
export async function setKeyStatus(db: Db, keyId: string, status: "active" | "disabled"): Promise<void> {
  const updated = await db("api_keys").where("id", keyId).update({ status });
  if (updated !== 1) throw new AppError("not_found", "API key not found");
}

/**
 * Tops up the account of a key: one ledger entry and the balance, in one transaction.
 * @param amount positive milli-yuan
 * @returns the balance after, in milli-yuan
 * @throws AppError `not_found` when no key has that id
 */
export async function topUpKey(db: Db, keyId: string, amount: MilliYuan): Promise<MilliYuan> {
  return db.transaction(async (trx) => {
    const row = await trx("api_keys").where("id", keyId).first("account_id");
    if (!row) throw new AppError("not_found", "API key not found");
    return credit(trx, "topup", { accountId: row.account_id, keyId, amount, reason: "top-up" });
  });
}
