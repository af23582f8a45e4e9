/**
 * Usage of a key (generation spec part 4 `GET /api/v1/usage`; DESIGN §8): balance, spent,
 * billed seconds and images, and the recent requests of the calling key.
 */
import { fitText, type Db } from "../db/index.ts";
import { balanceOf } from "../ledger/index.ts";
import type { Caller } from "../auth/keys.ts";
import type { MilliYuan } from "../money.ts";
import { getModel, IMAGE_MODEL_ID } from "./catalog.ts";
import { priceOf } from "./pricing.ts";

/** Money totals of a key, in milli-yuan, and billed units. */
export interface UsageTotals {
  /** The account's balance, milli-yuan. */
  balance: MilliYuan;
  /** Debits minus refunds of this key, milli-yuan. */
  spent: MilliYuan;
  /** Seconds × count over this key's video tasks that were not refunded. */
  billedSeconds: number;
  /** Images charged after settlement over this key's image tasks. */
  billedImages: number;
}

/** One entry of the request log. */
export interface RequestRecord {
  method: string;
  path: string;
  status: number;
  at: string;
}

/**
 * Computes the totals of the calling key.
 * @returns balance and spent in milli-yuan, billed seconds and images
 */
export async function usageTotals(db: Db, caller: Caller): Promise<UsageTotals> {
  const [balance, spentRow, videoRow, imageRow] = await Promise.all([
    balanceOf(db, caller.accountId),
    db("ledger_entries").where("key_id", caller.keyId).whereIn("kind", ["debit", "refund"]).sum({ total: "amount" }).first(),
    db("tasks").where({ key_id: caller.keyId, kind: "video", refunded: 0 }).whereNot("status", 2).sum({ total: db.raw("seconds * count") }).first(),
    db("tasks").where({ key_id: caller.keyId, kind: "image" }).sum({ total: db.raw("price - refunded") }).first(),
  ]);
  const perImage = priceOf(getModel(IMAGE_MODEL_ID)!, { seconds: null, resolution: "1k", count: 1 });
  return {
    balance,
    spent: 0 - Number(spentRow?.total ?? 0),
    billedSeconds: Number(videoRow?.total ?? 0),
    billedImages: Number(imageRow?.total ?? 0) / perImage,
  };
}

/**
 * The most recent requests of the calling key, newest first.
 * @param limit 1-100
 */
export async function recentRequests(db: Db, caller: Caller, limit: number): Promise<RequestRecord[]> {
  const rows = await db("request_log").where("key_id", caller.keyId).orderBy("id", "desc").limit(limit);
  return rows.map((r: any) => ({ method: r.method, path: r.path, status: Number(r.status), at: r.at }));
}

/** Records one request of a key in the request log. */
export async function recordRequest(db: Db, entry: RequestRecord & { keyId: string; requestId?: string | null }): Promise<void> {
  // Fitted to the columns (varchar: PostgreSQL rejects longer values, SQLite would keep them).
  await db("request_log").insert({
    key_id: entry.keyId,
    method: fitText(entry.method, 10),
    path: fitText(entry.path, 300),
    status: entry.status,
    request_id: fitText(entry.requestId, 80),
    at: entry.at,
  });
}
