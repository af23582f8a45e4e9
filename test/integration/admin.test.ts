/**
 * The admin GraphQL mutations through the router (docs/architecture.md §2 `ADMIN_TOKEN`; issue 3 "Catalog"):
 * an admin manages the catalog, keys and money with `Authorization: Bearer <ADMIN_TOKEN>`; no API
 * key can stand in for the token; without ADMIN_TOKEN the admin API is off.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { verifyLedger } from "../../src/ledger/index.ts";

const ADMIN_TOKEN = "test-admin-token";
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

const UPSERT_VENDOR = `mutation($input: AdminUpsertVendorInput!) { adminUpsertVendor(input: $input) { vendor { id name status } } }`;
const UPSERT_PRODUCT = `mutation($input: AdminUpsertProductInput!) {
  adminUpsertProduct(input: $input) { product { id name category status stock requiredFields vendor { id name } billingCycles { cycle months price { amount currency } } } } }`;
const CREATE_KEY = `mutation($input: AdminCreateApiKeyInput!) { adminCreateApiKey(input: $input) { key id accountId webhookSecret } }`;
const SET_KEY_STATUS = `mutation($input: AdminSetApiKeyStatusInput!) { adminSetApiKeyStatus(input: $input) { apiKey { id accountId status scopes } } }`;
const TOP_UP_ACCOUNT = `mutation($input: AdminTopUpAccountInput!) { adminTopUpAccount(input: $input) { keyId accountId balance { amount currency } } }`;
const TOP_UP_CUSTOMER = `mutation($input: AdminTopUpCustomerInput!) {
  adminTopUpCustomer(input: $input) { customerBalance { customerId available { amount } creditLine { amount } } } }`;
const SET_CREDIT_LINE = `mutation($input: AdminSetCustomerCreditLineInput!) {
  adminSetCustomerCreditLine(input: $input) { customerBalance { customerId available { amount } creditLine { amount } } } }`;

let t: TestStack;

/** Runs an admin mutation with the admin token. */
const asAdmin = (query: string, input: Record<string, unknown>) => t.graphql(query, { input }, undefined, admin);

/** Creates an API key through the admin API. */
async function adminKey(input: Record<string, unknown> = {}) {
  const created = await asAdmin(CREATE_KEY, { name: "admin-made", ...input });
  expect(created.status).toBe(200);
  expect(created.body.errors).toBeUndefined();
  return created.body.data.adminCreateApiKey as { key: string; id: string; accountId: string; webhookSecret: string };
}

beforeAll(async () => {
  t = await startTestStack({ ADMIN_TOKEN });
});
afterAll(() => t?.close());

describe("admin catalog management", () => {
  it("creates a vendor and a product that an API key then sees in GET /openapi/v1/products", async () => {
    const vendor = await asAdmin(UPSERT_VENDOR, { name: "Cumulus Hosting" });
    expect(vendor.status).toBe(200);
    expect(vendor.body.errors).toBeUndefined();
    const vendorId = vendor.body.data.adminUpsertVendor.vendor.id;
    expect(vendor.body.data.adminUpsertVendor.vendor).toMatchObject({ id: expect.stringMatching(/^vnd_/), name: "Cumulus Hosting", status: "ACTIVE" });

    const product = await asAdmin(UPSERT_PRODUCT, {
      id: "prd_admin_storage",
      vendorId,
      category: "storage",
      name: "Object storage, 1 TB",
      stock: 25,
      requiredFields: ["bucket"],
      billingCycles: [
        { cycle: "monthly", price: "19.9" },
        { cycle: "yearly", price: "199.125" },
        { cycle: "fortnight-trial", months: 2, price: "0.5" },
      ],
    });
    expect(product.body.errors).toBeUndefined();
    expect(product.body.data.adminUpsertProduct.product).toEqual({
      id: "prd_admin_storage",
      name: "Object storage, 1 TB",
      category: "storage",
      status: "AVAILABLE",
      stock: 25,
      requiredFields: ["bucket"],
      vendor: { id: vendorId, name: "Cumulus Hosting" },
      billingCycles: [
        { cycle: "monthly", months: 1, price: { amount: "19.90", currency: "CNY" } },
        { cycle: "yearly", months: 12, price: { amount: "199.125", currency: "CNY" } },
        { cycle: "fortnight-trial", months: 2, price: { amount: "0.50", currency: "CNY" } },
      ],
    });

    const { key } = await adminKey({ scopes: ["catalog:read"] });
    const listed = await t.rest("GET", "/openapi/v1/products?category=storage", { key });
    expect(listed.status).toBe(200);
    expect(listed.body.data.items).toEqual([
      expect.objectContaining({
        product_id: "prd_admin_storage",
        vendor_id: vendorId,
        category: "storage",
        name: "Object storage, 1 TB",
        status: "available",
        stock: 25,
        required_fields: ["bucket"],
        billing_cycles: [
          expect.objectContaining({ cycle: "monthly", price: 19.9 }),
          expect.objectContaining({ cycle: "yearly", price: 199.125 }),
          expect.objectContaining({ cycle: "fortnight-trial", price: 0.5 }),
        ],
      }),
    ]);
    const vendors = await t.rest("GET", "/openapi/v1/vendors?limit=100", { key });
    expect(vendors.body.data.items).toContainEqual(expect.objectContaining({ vendor_id: vendorId, name: "Cumulus Hosting", status: "active" }));

    // An upsert with the same id replaces the product: taken off sale, it no longer shows as available.
    const withdrawn = await asAdmin(UPSERT_PRODUCT, {
      id: "prd_admin_storage",
      vendorId,
      category: "storage",
      name: "Object storage, 1 TB",
      status: "OFFLINE",
      billingCycles: [{ cycle: "monthly", price: "19.9" }],
    });
    expect(withdrawn.body.data.adminUpsertProduct.product).toMatchObject({ status: "OFFLINE", stock: null, requiredFields: [] });
    const available = await t.rest("GET", "/openapi/v1/products?category=storage&status=available", { key });
    expect(available.body.data.items).toEqual([]);
  });

  it("answers 422 validation_failed naming the field for a price that is not a yuan amount, or an unknown vendor", async () => {
    const base = { vendorId: "vnd_nimbus", category: "cdn", name: "Bad price" };
    for (const [price, field] of [
      ["12.3456", "billingCycles[0].price"],
      ["ten", "billingCycles[0].price"],
      ["0", "billingCycles[0].price"],
    ] as const) {
      const r = await asAdmin(UPSERT_PRODUCT, { ...base, billingCycles: [{ cycle: "monthly", price }] });
      // The payload is null next to the error; `data` is not null, so HTTP 200 (docs/adr/0006).
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual({ adminUpsertProduct: null });
      expect(r.body.errors[0].extensions).toMatchObject({ code: "validation_failed", field, http: { status: 422 } });
    }
    const unknownVendor = await asAdmin(UPSERT_PRODUCT, { ...base, vendorId: "vnd_nope", billingCycles: [{ cycle: "monthly", price: "1" }] });
    expect(unknownVendor.status).toBe(200);
    expect(unknownVendor.body.errors[0].extensions.http).toEqual({ status: 422 });
    expect(unknownVendor.body.errors[0].extensions).toMatchObject({ code: "validation_failed", field: "vendorId" });
    const noMonths = await asAdmin(UPSERT_PRODUCT, { ...base, billingCycles: [{ cycle: "weekly", price: "1" }] });
    expect(noMonths.body.errors[0].extensions).toMatchObject({ code: "validation_failed", field: "billingCycles[0].months" });
    const badAmount = await asAdmin(TOP_UP_CUSTOMER, { accountId: "acc_any", customerId: "c1", amount: "1,5" });
    expect(badAmount.status).toBe(200);
    expect(badAmount.body.errors[0].extensions.http).toEqual({ status: 422 });
    expect(badAmount.body.errors[0].extensions).toMatchObject({ code: "validation_failed", field: "amount" });
  });
});

describe("admin keys and money", () => {
  it("creates a key shown once, tops up its account and a customer, sets a credit line: balances, ledger and transactions agree", async () => {
    const created = await adminKey({ balance: "5", callbackUrl: "https://hooks.example.com/switchyard" });
    expect(created).toMatchObject({
      key: expect.stringMatching(/^sy_/),
      id: expect.stringMatching(/^key_/),
      accountId: expect.stringMatching(/^acc_/),
      webhookSecret: expect.stringMatching(/^whsec_/),
    });

    const topUp = await asAdmin(TOP_UP_ACCOUNT, { keyId: created.id, amount: "2.125" });
    expect(topUp.body.data.adminTopUpAccount).toEqual({ keyId: created.id, accountId: created.accountId, balance: { amount: "7.125", currency: "CNY" } });
    const usage = await t.rest("GET", "/api/v1/usage", { key: created.key });
    expect(usage.body.data.balance).toBe(7.125);

    const customer = await asAdmin(TOP_UP_CUSTOMER, { accountId: created.accountId, customerId: "cust-admin", amount: "100.5" });
    expect(customer.body.data.adminTopUpCustomer.customerBalance).toEqual({
      customerId: "cust-admin",
      available: { amount: "100.50" },
      creditLine: { amount: "0.00" },
    });
    const credit = await asAdmin(SET_CREDIT_LINE, { accountId: created.accountId, customerId: "cust-admin", limit: "50" });
    expect(credit.body.data.adminSetCustomerCreditLine.customerBalance).toEqual({
      customerId: "cust-admin",
      available: { amount: "100.50" },
      creditLine: { amount: "50.00" },
    });

    const balance = await t.rest("GET", "/openapi/v1/billing/balance?customer_id=cust-admin", { key: created.key });
    expect(balance.body.data).toMatchObject({ customer_id: "cust-admin", available: 100.5, credit_line: 50 });
    const transactions = await t.rest("GET", "/openapi/v1/billing/transactions?customer_id=cust-admin", { key: created.key });
    expect(transactions.body.data.items).toEqual([expect.objectContaining({ customer_id: "cust-admin", type: "topup", amount: 100.5, balance_after: 100.5 })]);

    const entries = await t.stack.db!("ledger_entries").where("account_id", created.accountId).orderBy("id").select("customer_id", "kind", "amount");
    expect(entries.map((e: any) => [e.customer_id, e.kind, Number(e.amount)])).toEqual([
      [null, "topup", 5000],
      [null, "topup", 2125],
      ["cust-admin", "topup", 100500],
    ]);
    const event = await t.stack.db!("outbox").where({ account_id: created.accountId, topic: "billing.transaction.created" }).first();
    expect(event).toBeTruthy();
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
  });

  it("disables and re-enables a key", async () => {
    const created = await adminKey();
    const disabled = await asAdmin(SET_KEY_STATUS, { keyId: created.id, status: "DISABLED" });
    expect(disabled.body.data.adminSetApiKeyStatus.apiKey).toMatchObject({ id: created.id, accountId: created.accountId, status: "DISABLED" });
    expect((await t.rest("GET", "/openapi/v1/vendors", { key: created.key })).status).toBe(403);
    await asAdmin(SET_KEY_STATUS, { keyId: created.id, status: "ACTIVE" });
    expect((await t.rest("GET", "/openapi/v1/vendors", { key: created.key })).status).toBe(200);
    const missing = await asAdmin(SET_KEY_STATUS, { keyId: "key_nope", status: "ACTIVE" });
    expect(missing.status).toBe(200);
    expect(missing.body.data).toEqual({ adminSetApiKeyStatus: null });
    expect(missing.body.errors[0].extensions.http).toEqual({ status: 404 });
  });
});

describe("admin authentication", () => {
  it("is unauthorized (401 in the error) for a wrong or absent token and writes nothing", async () => {
    const attempts: Record<string, string>[] = [{ authorization: "Bearer not-the-token" }, { authorization: `Basic ${ADMIN_TOKEN}` }, {}];
    for (const headers of attempts) {
      const r = await t.graphql(UPSERT_VENDOR, { input: { id: "vnd_intruder", name: "Intruder" } }, undefined, headers);
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual({ adminUpsertVendor: null });
      expect(r.body.errors[0]).toMatchObject({ message: "Invalid or missing admin token", extensions: { code: "unauthorized", http: { status: 401 } } });
    }
    expect(await t.stack.db!("vendors").where("id", "vnd_intruder").first()).toBeUndefined();
  });

  it("is unauthorized (401 in the error) for a valid API key used as the bearer token", async () => {
    const { key, id } = await t.createKey("1");
    const r = await t.graphql(TOP_UP_ACCOUNT, { input: { keyId: id, amount: "1000" } }, key);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ adminTopUpAccount: null });
    expect(r.body.errors[0]).toMatchObject({ message: "Invalid or missing admin token", extensions: { code: "unauthorized", http: { status: 401 } } });
    expect((await t.rest("GET", "/api/v1/usage", { key })).body.data.balance).toBe(1);
  });
});

describe("admin API without ADMIN_TOKEN", () => {
  it("answers forbidden (403 in the error) Admin API is disabled to every admin mutation, whatever the token", async () => {
    const off = await startTestStack();
    try {
      const { key, id } = await off.createKey("1");
      const attempts: [string, Record<string, unknown>][] = [
        [UPSERT_VENDOR, { name: "X" }],
        [UPSERT_PRODUCT, { vendorId: "vnd_nimbus", category: "cdn", name: "X", billingCycles: [{ cycle: "monthly", price: "1" }] }],
        [CREATE_KEY, { name: "X" }],
        [SET_KEY_STATUS, { keyId: id, status: "DISABLED" }],
        [TOP_UP_ACCOUNT, { keyId: id, amount: "1" }],
        [TOP_UP_CUSTOMER, { accountId: "acc_x", customerId: "c", amount: "1" }],
        [SET_CREDIT_LINE, { accountId: "acc_x", customerId: "c", limit: "1" }],
      ];
      for (const [query, input] of attempts) {
        for (const headers of [admin, { authorization: `Bearer ${key}` }]) {
          const r = await off.graphql(query, { input }, undefined, headers);
          expect(r.status).toBe(200);
          expect(Object.values(r.body.data)).toEqual([null]);
          expect(r.body.errors[0]).toMatchObject({ message: "Admin API is disabled", extensions: { code: "forbidden", http: { status: 403 } } });
        }
      }
    } finally {
      await off.close();
    }
  });
});
