/**
 * The admin mutations of the cloud subgraph (docs/architecture.md §2 `ADMIN_TOKEN`; issue 3 "Catalog": admins
 * manage the catalog with the CLI or admin GraphQL mutations). Each one checks the admin token
 * first (401/403, never through API-key authentication), then turns decimal yuan strings into
 * milli-yuan (422 `validation_failed` naming the field) and calls the same functions of `src/` as
 * the CLI.
 */
import { AppError } from "../../src/errors.ts";
import { parseYuan, toMoney, type MilliYuan } from "../../src/money.ts";
import { upsertProduct, upsertVendor } from "../../src/cloud/catalog.ts";
import type { ProductStatus, VendorStatus } from "../../src/cloud/states.ts";
import { checkCustomerId, getCustomerBalance, setCreditLine, topUpCustomer } from "../../src/cloud/customers.ts";
import { createKey, getKeyInfo, setKeyStatus, topUpKey, type KeyInfo, type KeyStatus } from "../../src/auth/keys.ts";
import type { CloudContext } from "./context.ts";

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
    throw new AppError("validation_failed", `${field} must be an amount in yuan as a decimal string with at most three decimals, for example "30.00"`, { field });
  }
}

/** Re-labels the field of a validation error raised by `src/` with the name the GraphQL input uses. */
async function renamingField<T>(work: () => Promise<T>, rename: (field: string) => string): Promise<T> {
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

/** A key's settings in the shape of the `ApiKey` type. */
function apiKeyOf(info: KeyInfo) {
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

const lower = <T extends string>(value: string | null | undefined) => (value == null ? null : (value.toLowerCase() as T));

interface BillingCycleInput {
  cycle: string;
  months?: number | null;
  price: string;
}

/** `Mutation` resolvers of the admin API. */
export const adminMutations = {
  adminUpsertVendor: async (_: unknown, { input }: { input: { id?: string | null; name: string; status?: string | null } }, ctx: CloudContext) => {
    ctx.requireAdmin();
    const vendor = await upsertVendor(ctx.db, { id: input.id ?? null, name: input.name, status: lower<VendorStatus>(input.status) });
    ctx.vendors.clear(vendor.id);
    return { vendor };
  },

  adminUpsertProduct: async (
    _: unknown,
    { input }: { input: { id?: string | null; vendorId: string; category: string; name: string; description?: string | null; status?: string | null; billingCycles: BillingCycleInput[]; stock?: number | null; requiredFields?: string[] | null } },
    ctx: CloudContext,
  ) => {
    ctx.requireAdmin();
    const billingCycles = (input.billingCycles ?? []).map((c, i) => ({ cycle: c.cycle, months: c.months ?? null, price: yuanField(c.price, `billingCycles[${i}].price`) }));
    const product = await upsertProduct(ctx.db, {
      id: input.id ?? null,
      vendorId: input.vendorId,
      category: input.category,
      name: input.name,
      description: input.description ?? null,
      status: lower<ProductStatus>(input.status),
      billingCycles,
      stock: input.stock ?? null,
      requiredFields: input.requiredFields ?? [],
    });
    ctx.products.clear(product.id);
    return { product };
  },

  adminCreateApiKey: async (
    _: unknown,
    { input }: { input: { name: string; accountId?: string | null; balance?: string | null; scopes?: string[] | null; allowedIps?: string[] | null; rateLimit?: number | null; callbackUrl?: string | null; requireSignature?: boolean | null } },
    ctx: CloudContext,
  ) => {
    ctx.requireAdmin();
    const balance = input.balance == null ? undefined : yuanField(input.balance, "balance");
    const created = await renamingField(
      () =>
        createKey(ctx.db, {
          name: input.name,
          accountId: input.accountId ?? undefined,
          balance,
          scopes: input.scopes ?? undefined,
          allowIps: input.allowedIps ?? undefined,
          rateLimit: input.rateLimit ?? undefined,
          callbackUrl: input.callbackUrl ?? undefined,
          requireSignature: input.requireSignature ?? undefined,
        }),
      (field) => field.replace(/^allowIps/, "allowedIps"),
    );
    return { key: created.key, id: created.id, accountId: created.account_id, webhookSecret: created.webhook_secret };
  },

  adminSetApiKeyStatus: async (_: unknown, { input }: { input: { keyId: string; status: string } }, ctx: CloudContext) => {
    ctx.requireAdmin();
    await setKeyStatus(ctx.db, input.keyId, input.status.toLowerCase() as KeyStatus);
    const info = await getKeyInfo(ctx.db, input.keyId);
    if (!info) throw new AppError("not_found", "API key not found");
    return { apiKey: apiKeyOf(info) };
  },

  adminTopUpAccount: async (_: unknown, { input }: { input: { keyId: string; amount: string } }, ctx: CloudContext) => {
    ctx.requireAdmin();
    const amount = yuanField(input.amount, "amount");
    const balance = await topUpKey(ctx.db, input.keyId, amount);
    const info = await getKeyInfo(ctx.db, input.keyId);
    if (!info) throw new AppError("not_found", "API key not found");
    return { keyId: info.id, accountId: info.accountId, balance: toMoney(balance) };
  },

  adminTopUpCustomer: async (_: unknown, { input }: { input: { accountId: string; customerId: string; amount: string } }, ctx: CloudContext) => {
    ctx.requireAdmin();
    const customerId = checkCustomerId(input.customerId, "customerId");
    const amount = yuanField(input.amount, "amount");
    await topUpCustomer(ctx.db, { accountId: input.accountId, customerId, amount, requestId: ctx.requestId, reason: "top-up (admin)" });
    return { customerBalance: await getCustomerBalance(ctx.db, input.accountId, customerId) };
  },

  adminSetCustomerCreditLine: async (_: unknown, { input }: { input: { accountId: string; customerId: string; limit: string } }, ctx: CloudContext) => {
    ctx.requireAdmin();
    const customerId = checkCustomerId(input.customerId, "customerId");
    const limit = yuanField(input.limit, "limit");
    return { customerBalance: await setCreditLine(ctx.db, input.accountId, customerId, limit) };
  },
};
