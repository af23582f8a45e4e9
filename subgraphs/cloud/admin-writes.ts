/**
 * The admin writes of the cloud subgraph (issue 3 "Catalog", issue 16, issue 23 §1): each runs
 * with its audit row in one transaction (src/audit/log.ts `audited`); the role check is
 * subgraphs/shared/admin-access.ts `guardAdminFields`. Inputs are parsed as admin.ts parses them.
 */
import type { Knex } from "knex";
import { AppError } from "../../src/errors.ts";
import { toMoney } from "../../src/money.ts";
import { upsertProduct, upsertVendor } from "../../src/cloud/catalog.ts";
import type { ProductStatus, VendorStatus } from "../../src/cloud/states.ts";
import { checkCustomerId, getCustomerBalance, setCreditLine, topUpCustomer } from "../../src/cloud/customers.ts";
import {
  createKey,
  getKeyInfo,
  getKeyListing,
  setKeyStatus,
  topUpKey,
  updateKeySettings,
  type KeySettingsChange,
  type KeyStatus,
} from "../../src/auth/keys.ts";
import { newestEntryOf } from "../../src/ledger/entries.ts";
import { getDelivery, resendDelivery } from "../../src/events/deliveries.ts";
import { audited } from "../../src/audit/log.ts";
import { adminApiKeyOf, apiKeyOf, graphqlKeyField, keyListing, ledgerEntryOf, lower, renamingField, yuanField, type KeySettingsInput } from "./admin.ts";
import type { CloudContext } from "./context.ts";

/** The transaction an audited write runs in. */
type Trx = Knex.Transaction;

interface BillingCycleInput {
  cycle: string;
  months?: number | null;
  price: string;
}

/** `before` of an audit row: the object, or null when reading it fails (it does not exist yet). */
const orNull = <T>(read: Promise<T>) => read.catch(() => null);

/** A ledger entry's id as the audit log stores it. */
const entryId = (entry: { id: number | string }) => Number(entry.id);

/**
 * `Mutation` resolvers of the admin API. Every write runs with its audit row in one transaction
 * (src/audit/log.ts `audited`): the domain function gets the transaction (its own transaction
 * nests as a savepoint), so a write that fails leaves no row, and none commits without one.
 */
export const adminMutations = {
  adminUpsertVendor: async (_: unknown, { input }: { input: { id?: string | null; name: string; status?: string | null } }, ctx: CloudContext) => {
    await ctx.requireAdmin();
    const vendor = await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminUpsertVendor",
        objectType: "vendor",
        objectId: input.id ?? null,
        before: async (trx: Trx) => (input.id ? ((await trx("vendors").where("id", input.id).first()) ?? null) : null),
        objectIdOf: (v) => v.id,
      },
      (trx: Trx) => upsertVendor(trx, { id: input.id ?? null, name: input.name, status: lower<VendorStatus>(input.status) }),
    );
    ctx.vendors.clear(vendor.id);
    return { vendor };
  },

  adminUpsertProduct: async (
    _: unknown,
    {
      input,
    }: {
      input: {
        id?: string | null;
        vendorId: string;
        category: string;
        name: string;
        description?: string | null;
        status?: string | null;
        billingCycles: BillingCycleInput[];
        stock?: number | null;
        requiredFields?: string[] | null;
      };
    },
    ctx: CloudContext,
  ) => {
    await ctx.requireAdmin();
    const billingCycles = (input.billingCycles ?? []).map((c, i) => ({
      cycle: c.cycle,
      months: c.months ?? null,
      price: yuanField(c.price, `billingCycles[${i}].price`),
    }));
    const product = await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminUpsertProduct",
        objectType: "product",
        objectId: input.id ?? null,
        before: async (trx: Trx) => (input.id ? ((await trx("products").where("id", input.id).first()) ?? null) : null),
        objectIdOf: (p) => p.id,
      },
      (trx: Trx) =>
        upsertProduct(trx, {
          id: input.id ?? null,
          vendorId: input.vendorId,
          category: input.category,
          name: input.name,
          description: input.description ?? null,
          status: lower<ProductStatus>(input.status),
          billingCycles,
          stock: input.stock ?? null,
          requiredFields: input.requiredFields ?? [],
        }),
    );
    ctx.products.clear(product.id);
    return { product };
  },

  adminCreateApiKey: async (
    _: unknown,
    {
      input,
    }: {
      input: KeySettingsInput & {
        name: string;
        accountId?: string | null;
        balance?: string | null;
      };
    },
    ctx: CloudContext,
  ) => {
    await ctx.requireAdmin();
    const balance = input.balance == null ? undefined : yuanField(input.balance, "balance");
    const { created, opening } = await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminCreateApiKey",
        objectType: "api_key",
        objectIdOf: (r) => r.created.id,
        after: async (r, trx) => ({ ...(await getKeyListing(trx, r.created.id)), openingEntry: r.opening }),
        ledgerEntryOf: (r) => (r.opening ? entryId(r.opening) : null),
      },
      async (trx: Trx) => {
        const made = await renamingField(
          () =>
            createKey(trx, {
              name: input.name,
              accountId: input.accountId ?? undefined,
              balance,
              scopes: input.scopes ?? undefined,
              allowIps: input.allowedIps ?? undefined,
              rateLimit: input.rateLimit ?? undefined,
              callbackUrl: input.callbackUrl ?? undefined,
              requireSignature: input.requireSignature ?? undefined,
            }),
          graphqlKeyField,
        );
        const entry = balance ? await newestEntryOf(trx, made.account_id) : null;
        return { created: made, opening: entry && entry.keyId === made.id ? entry : null };
      },
    );
    return {
      key: created.key,
      id: created.id,
      accountId: created.account_id,
      webhookSecret: created.webhook_secret,
      // A value, not a thunk: compiled execution (ADR 0029) calls only resolvers, never a property.
      apiKey: await keyListing(ctx, created.id),
      ledgerEntry: opening ? ledgerEntryOf(opening) : null,
    };
  },

  adminSetApiKeyStatus: async (_: unknown, { input }: { input: { keyId: string; status: string } }, ctx: CloudContext) => {
    await ctx.requireAdmin();
    const status = input.status.toLowerCase() as KeyStatus;
    await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminSetApiKeyStatus",
        objectType: "api_key",
        objectId: input.keyId,
        before: (trx: Trx) => getKeyInfo(trx, input.keyId),
        after: (_r: unknown, trx: Trx) => getKeyInfo(trx, input.keyId),
      },
      (trx: Trx) => setKeyStatus(trx, input.keyId, status),
    );
    const info = await getKeyInfo(ctx.db, input.keyId);
    if (!info) throw new AppError("not_found", "API key not found");
    return { apiKey: apiKeyOf(info), adminApiKey: await keyListing(ctx, info.id) };
  },

  adminTopUpAccount: async (_: unknown, { input }: { input: { keyId: string; amount: string } }, ctx: CloudContext) => {
    await ctx.requireAdmin();
    const amount = yuanField(input.amount, "amount");
    const entry = await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminTopUpAccount",
        objectType: "api_key",
        objectId: input.keyId,
        before: (trx: Trx) => getKeyListing(trx, input.keyId),
        after: async (e, trx) => ({ ledgerEntry: e, listing: await getKeyListing(trx, input.keyId) }),
        ledgerEntryOf: entryId,
      },
      (trx: Trx) => topUpKey(trx, input.keyId, amount),
    );
    return { keyId: input.keyId, accountId: entry.accountId, balance: toMoney(entry.balanceAfter), ledgerEntry: ledgerEntryOf(entry) };
  },

  adminTopUpCustomer: async (_: unknown, { input }: { input: { accountId: string; customerId: string; amount: string } }, ctx: CloudContext) => {
    await ctx.requireAdmin();
    const customerId = checkCustomerId(input.customerId, "customerId");
    const amount = yuanField(input.amount, "amount");
    const entry = await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminTopUpCustomer",
        objectType: "customer",
        objectId: `${input.accountId}/${customerId}`,
        before: (trx: Trx) => orNull(getCustomerBalance(trx, input.accountId, customerId)),
        after: async (e, trx) => ({ ledgerEntry: e, wallet: await getCustomerBalance(trx, input.accountId, customerId) }),
        ledgerEntryOf: entryId,
      },
      (trx: Trx) => topUpCustomer(trx, { accountId: input.accountId, customerId, amount, requestId: ctx.requestId, reason: "top-up (admin)" }),
    );
    return { customerBalance: await getCustomerBalance(ctx.db, input.accountId, customerId), ledgerEntry: ledgerEntryOf(entry) };
  },

  adminSetCustomerCreditLine: async (_: unknown, { input }: { input: { accountId: string; customerId: string; limit: string } }, ctx: CloudContext) => {
    await ctx.requireAdmin();
    const customerId = checkCustomerId(input.customerId, "customerId");
    const limit = yuanField(input.limit, "limit");
    const customerBalance = await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminSetCustomerCreditLine",
        objectType: "customer",
        objectId: `${input.accountId}/${customerId}`,
        before: (trx: Trx) => orNull(getCustomerBalance(trx, input.accountId, customerId)),
      },
      (trx: Trx) => setCreditLine(trx, input.accountId, customerId, limit),
    );
    return { customerBalance };
  },

  adminUpdateApiKey: async (
    _: unknown,
    {
      input,
    }: {
      input: KeySettingsInput & {
        keyId: string;
      };
    },
    ctx: CloudContext,
  ) => {
    await ctx.requireAdmin();
    // Absent stays, explicit null clears (GraphQL keeps the difference in the arguments).
    const change: KeySettingsChange = {};
    if (input.scopes !== undefined) change.scopes = input.scopes ?? [];
    if (input.allowedIps !== undefined) change.allowIps = input.allowedIps;
    if (input.rateLimit !== undefined) change.rateLimit = input.rateLimit;
    if (input.callbackUrl !== undefined) change.callbackUrl = input.callbackUrl;
    if (input.requireSignature != null) change.requireSignature = input.requireSignature;
    const key = await audited(
      ctx.db,
      ctx.auditActor(),
      { action: "adminUpdateApiKey", objectType: "api_key", objectId: input.keyId, before: (trx: Trx) => getKeyListing(trx, input.keyId) },
      (trx: Trx) => renamingField(() => updateKeySettings(trx, input.keyId, change), graphqlKeyField),
    );
    return { apiKey: adminApiKeyOf(key) };
  },

  adminResendDelivery: async (_: unknown, { input }: { input: { deliveryId: string } }, ctx: CloudContext) => {
    await ctx.requireAdmin();
    const delivery = await audited(
      ctx.db,
      ctx.auditActor(),
      {
        action: "adminResendDelivery",
        objectType: "delivery",
        objectId: String(input.deliveryId),
        before: (trx: Trx) => orNull(getDelivery(trx, input.deliveryId)),
      },
      (trx: Trx) => resendDelivery(trx, input.deliveryId),
    );
    return { delivery };
  },
};
