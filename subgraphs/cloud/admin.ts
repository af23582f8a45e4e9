/**
 * The admin reads of the cloud subgraph and what its writes share (docs/architecture.md §2.7;
 * issue 3 "Catalog"; issue 16: the console's reads across accounts, docs/api/cloud.md §12; the
 * writes are admin-writes.ts). Each field checks the operator and its role first (401/403, never
 * through API-key authentication; subgraphs/shared/admin-access.ts), then turns decimal yuan
 * strings into milli-yuan (422 `validation_failed` naming the field) and calls the same functions
 * of `src/` as the CLI.
 */
import { AppError } from "../../src/errors.ts";
import { parseYuan, toMoney, type MilliYuan } from "../../src/money.ts";
import { getKeyListing, listKeys, type KeyInfo, type KeyListing, type KeyStatus } from "../../src/auth/keys.ts";
import { listAllDeliveries, listAllOrders, listCustomerWallets, type CustomerWallet } from "../../src/cloud/admin-reads.ts";
import { entriesOfOrders, type LedgerEntryView } from "../../src/ledger/entries.ts";
import type { OrderRecord } from "../../src/cloud/order-records.ts";
import { pageOf, toConnection } from "../shared/connection.ts";
import type { CloudContext } from "./context.ts";

/** The settings of an API key that the create and update inputs share (GraphQL, camelCase). */
export type KeySettingsInput = {
  scopes?: string[] | null;
  allowedIps?: string[] | null;
  rateLimit?: number | null;
  callbackUrl?: string | null;
  requireSignature?: boolean | null;
};

/**
 * Parses a decimal yuan string of an admin input.
 * @param field the input field, reported in `details.field`
 * @returns the amount in milli-yuan (sign kept: the domain function judges the range)
 * @throws AppError `validation_failed` (422) when it is not a decimal with at most three decimals
 */
export function yuanField(value: unknown, field: string): MilliYuan {
  try {
    if (typeof value !== "string") throw new RangeError("not a string");
    return parseYuan(value);
  } catch {
    throw new AppError("validation_failed", `${field} must be an amount in yuan as a decimal string with at most three decimals, for example "30.00"`, {
      field,
    });
  }
}

/** Re-labels the field of a validation error raised by `src/` with the name the GraphQL input uses. */
export async function renamingField<T>(work: () => Promise<T>, rename: (field: string) => string): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof AppError && typeof error.details?.field === "string") {
      const field = rename(error.details.field);
      if (field !== error.details.field) throw new AppError(error.code, error.message.split(error.details.field).join(field), { ...error.details, field });
    }
    throw error;
  }
}

/** A key setting's name as the GraphQL inputs spell it (`src/` says `allowIps`). */
export const graphqlKeyField = (field: string) => field.replace(/^allowIps/, "allowedIps");

/** A key's settings in the shape of the `ApiKey` type. */
export function apiKeyOf(info: KeyInfo) {
  return {
    id: info.id,
    accountId: info.accountId,
    status: info.status.toUpperCase(),
    scopes: info.scopes,
    rateLimit: info.rateLimit,
    allowedIps: info.allowIps,
    requireSignature: info.requireSignature,
  };
}

/** A key in the shape of the `AdminApiKey` type (money as `Money`). */
export function adminApiKeyOf(key: KeyListing) {
  return {
    ...apiKeyOf(key),
    name: key.name,
    callbackUrl: key.callbackUrl,
    balance: toMoney(key.balance),
    spent: toMoney(key.spent),
    taskCount: key.taskCount,
    createdAt: key.createdAt,
  };
}

/** A ledger entry in the shape of the `AdminLedgerEntry` type. */
export function ledgerEntryOf(entry: LedgerEntryView) {
  return { ...entry, amount: toMoney(entry.amount), balanceAfter: toMoney(entry.balanceAfter) };
}

/** The listing of a key that must exist (it was just written). */
export async function keyListing(ctx: CloudContext, keyId: string) {
  const key = await getKeyListing(ctx.db, keyId);
  if (!key) throw new AppError("not_found", "API key not found");
  return adminApiKeyOf(key);
}

/** A wallet in the shape of the `AdminCustomerWallet` type. */
function customerWalletOf(wallet: CustomerWallet) {
  return { ...wallet, available: toMoney(wallet.available), frozen: toMoney(wallet.frozen), creditLine: toMoney(wallet.creditLine) };
}

/** An order and its ledger entries in the shape of the `AdminOrder` type. */
function orderOf(order: OrderRecord, entries: LedgerEntryView[]) {
  return {
    ...order,
    amount: toMoney(order.amount),
    paymentStatus: order.paymentStatus.toUpperCase(),
    provisioningStatus: order.provisioningStatus.toUpperCase(),
    status: order.status.toUpperCase(),
    ledgerEntries: entries.map(ledgerEntryOf),
  };
}

/** `Query` resolvers of the admin console (issue 16; docs/api/cloud.md §12). */
export const adminQueries = {
  adminApiKeys: async (
    _: unknown,
    args: { first?: number | null; after?: string | null; search?: string | null; accountId?: string | null; status?: string | null },
    ctx: CloudContext,
  ) => {
    await ctx.requireAdmin();
    const page = await listKeys(
      ctx.db,
      { search: args.search ?? undefined, accountId: args.accountId ?? undefined, status: lower<KeyStatus>(args.status) ?? undefined },
      pageOf(args),
    );
    return toConnection({ ...page, items: page.items.map(adminApiKeyOf) });
  },
  adminApiKey: async (_: unknown, { id }: { id: string }, ctx: CloudContext) => {
    await ctx.requireAdmin();
    const key = await getKeyListing(ctx.db, id);
    return key ? adminApiKeyOf(key) : null;
  },
  adminCustomerWallets: async (
    _: unknown,
    args: { first?: number | null; after?: string | null; accountId?: string | null; search?: string | null },
    ctx: CloudContext,
  ) => {
    await ctx.requireAdmin();
    const page = await listCustomerWallets(ctx.db, { accountId: args.accountId, search: args.search }, pageOf(args));
    return toConnection({ ...page, items: page.items.map(customerWalletOf) });
  },
  adminOrders: async (
    _: unknown,
    args: { first?: number | null; after?: string | null; accountId?: string | null; status?: string | null; customerId?: string | null },
    ctx: CloudContext,
  ) => {
    await ctx.requireAdmin();
    const page = await listAllOrders(ctx.db, { accountId: args.accountId, status: lower(args.status), customerId: args.customerId }, pageOf(args));
    const entries = await entriesOfOrders(
      ctx.db,
      page.items.map((o) => o.id),
    );
    return toConnection({ ...page, items: page.items.map((o) => orderOf(o, entries.get(o.id) ?? [])) });
  },
  adminWebhookDeliveries: async (
    _: unknown,
    args: { first?: number | null; after?: string | null; accountId?: string | null; status?: string | null; aggregateId?: string | null },
    ctx: CloudContext,
  ) => {
    await ctx.requireAdmin();
    const page = await listAllDeliveries(ctx.db, { accountId: args.accountId, status: args.status, aggregateId: args.aggregateId }, pageOf(args));
    return toConnection(page);
  },
};

export const lower = <T extends string>(value: string | null | undefined) => (value == null ? null : (value.toLowerCase() as T));
