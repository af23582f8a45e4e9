/**
 * Simulated CDN usage at the service layer (docs/api/cloud.md §4 `/usage/bandwidth`,
 * `/usage/traffic`, §6 `usage.threshold_reached`; docs/architecture.md §8; issue 3 item 6), on a real
 * SQLite database. Time is driven by resources created in the past and by the `now` option of the
 * threshold check, never by sleeping.
 */
import { appErrorOf as failure } from "../support/errors.ts";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Db } from "../../src/db/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { bandwidthUsage, checkUsageThresholds, cumulativeTrafficBytes, setUsageThreshold, trafficUsage } from "../../src/cloud/usage.ts";

const T0 = "2025-01-01T00:00:00.000Z";
const DAY = 86_400_000;

let db: Db;
let testDb: TestDb;
let seq = 0;

interface Tenant {
  accountId: string;
  keyId: string;
  caller: { keyId: string; accountId: string };
}

async function insertTenant(): Promise<Tenant> {
  const n = ++seq;
  const accountId = `acc_usage${n}`;
  const keyId = `key_usage${n}`;
  await db("accounts").insert({ id: accountId, name: `tenant ${n}`, balance: 0, credit_line: 0, created_at: T0 });
  await db("api_keys").insert({
    id: keyId,
    account_id: accountId,
    name: `key ${n}`,
    key_hash: randomBytes(32).toString("hex"),
    key_prefix: "sy_test",
    status: "active",
    scopes: "[]",
    created_at: T0,
  });
  return { accountId, keyId, caller: { keyId, accountId } };
}

/** Inserts an active CDN order and its resource; returns the resource id and order id. */
async function insertResource(tenant: Tenant, createdAt: string, status = "active"): Promise<{ resourceId: string; orderId: string }> {
  const n = ++seq;
  const orderId = `ord_usage${n}`;
  const resourceId = `res_usage${n}`;
  await db("orders").insert({
    id: orderId,
    account_id: tenant.accountId,
    key_id: tenant.keyId,
    client_order_no: `client-${n}`,
    product_id: "prod_cdn",
    quantity: 1,
    billing_cycle: "monthly",
    customer_id: "cust_1",
    metadata: JSON.stringify({ domain: "www.example.com" }),
    amount: 1000,
    payment_status: "paid",
    provisioning_status: "active",
    status: "active",
    resource_id: resourceId,
    created_at: createdAt,
    updated_at: createdAt,
  });
  await db("resources").insert({
    id: resourceId,
    account_id: tenant.accountId,
    order_id: orderId,
    product_id: "prod_cdn",
    customer_id: "cust_1",
    status,
    expires_at: "2099-01-01T00:00:00.000Z",
    created_at: createdAt,
    updated_at: createdAt,
  });
  return { resourceId, orderId };
}

let alice: Tenant;
let bob: Tenant;
let resource: string;

beforeAll(async () => {
  testDb = await openTestDb("switchyard-usage-");
  db = testDb.db;
  await migrate(db);
  await db("vendors").insert({ id: "ven_test", name: "Test vendor", status: "active", created_at: T0 });
  await db("products").insert({
    id: "prod_cdn",
    vendor_id: "ven_test",
    category: "cdn",
    name: "CDN",
    status: "available",
    billing_cycles: JSON.stringify([{ cycle: "monthly", months: 1, price: 1000 }]),
    stock: null,
    required_fields: "[]",
    created_at: T0,
    updated_at: T0,
  });
  alice = await insertTenant();
  bob = await insertTenant();
  resource = (await insertResource(alice, T0)).resourceId;
});

afterAll(async () => {
  await testDb?.close();
});

describe("bandwidth", () => {
  it("gives the same curve for the same input, whatever the time-zone spelling", async () => {
    const query = { resourceId: resource, start: "2025-02-01T00:00:00Z", end: "2025-02-02T00:00:00Z" };
    const first = await bandwidthUsage(db, alice.caller, query);
    const second = await bandwidthUsage(db, alice.caller, query);
    expect(second).toEqual(first);
    const offset = await bandwidthUsage(db, alice.caller, { resourceId: resource, start: "2025-02-01T08:00:00+08:00", end: "2025-02-01T19:00:00-05:00" });
    expect(offset).toEqual(first);
    expect(first.points.some((p) => p.bps > 0)).toBe(true);
  });

  it("differs between resources", async () => {
    const other = (await insertResource(alice, T0)).resourceId;
    const query = { start: "2025-02-01T00:00:00Z", end: "2025-02-01T06:00:00Z" };
    const a = await bandwidthUsage(db, alice.caller, { resourceId: resource, ...query });
    const b = await bandwidthUsage(db, alice.caller, { resourceId: other, ...query });
    expect(a.points.map((p) => p.bps)).not.toEqual(b.points.map((p) => p.bps));
  });

  const intervals: [string, string, string, number, number][] = [
    ["one hour", "2025-02-01T00:00:00Z", "2025-02-01T01:00:00Z", 300, 12],
    ["one day", "2025-02-01T00:00:00Z", "2025-02-02T00:00:00Z", 300, 288],
    ["two days", "2025-02-01T00:00:00Z", "2025-02-03T00:00:00Z", 3600, 48],
    ["seven days", "2025-02-01T00:00:00Z", "2025-02-08T00:00:00Z", 3600, 168],
    ["ten days", "2025-02-01T00:00:00Z", "2025-02-11T00:00:00Z", 14_400, 60],
    ["31 days", "2025-02-01T00:00:00Z", "2025-03-04T00:00:00Z", 14_400, 186],
    ["an unaligned hour", "2025-02-01T00:02:30Z", "2025-02-01T01:02:30Z", 300, 13],
  ];
  it.each(intervals)("uses a fixed, aligned interval for %s, with the peak as the largest point", async (_name, start, end, interval, count) => {
    const usage = await bandwidthUsage(db, alice.caller, { resourceId: resource, start, end });
    expect(usage.resourceId).toBe(resource);
    expect(usage.intervalSeconds).toBe(interval);
    expect(usage.points).toHaveLength(count);
    usage.points.forEach((point, i) => {
      const t = Date.parse(point.time);
      expect(t % (interval * 1000)).toBe(0);
      if (i > 0) expect(t - Date.parse(usage.points[i - 1]!.time)).toBe(interval * 1000);
      expect(Number.isInteger(point.bps)).toBe(true);
    });
    expect(Date.parse(usage.points[0]!.time)).toBeLessThanOrEqual(Date.parse(start));
    expect(usage.peakBps).toBe(Math.max(...usage.points.map((p) => p.bps)));
    expect(usage.peakBps).toBeGreaterThan(0);
  });

  it("averages 300-second slots into coarser points", async () => {
    const fine = await bandwidthUsage(db, alice.caller, { resourceId: resource, start: "2025-02-01T00:00:00Z", end: "2025-02-02T00:00:00Z" });
    const coarse = await bandwidthUsage(db, alice.caller, { resourceId: resource, start: "2025-02-01T00:00:00Z", end: "2025-02-03T00:00:00Z" });
    const firstHour = fine.points.slice(0, 12).reduce((sum, p) => sum + p.bps, 0);
    expect(coarse.points[0]!.bps).toBe(Math.floor(firstHour / 12));
  });

  it("is zero before the resource was created and in the future", async () => {
    const late = (await insertResource(alice, "2025-03-10T12:00:00.000Z")).resourceId;
    const usage = await bandwidthUsage(db, alice.caller, { resourceId: late, start: "2025-03-10T00:00:00Z", end: "2025-03-11T00:00:00Z" });
    const before = usage.points.filter((p) => Date.parse(p.time) < Date.parse("2025-03-10T12:00:00Z"));
    const after = usage.points.filter((p) => Date.parse(p.time) >= Date.parse("2025-03-10T12:00:00Z"));
    expect(before).toHaveLength(144);
    expect(before.every((p) => p.bps === 0)).toBe(true);
    expect(after.every((p) => p.bps > 0)).toBe(true);
    const future = new Date(Date.now() + 2 * DAY).toISOString();
    const ahead = await bandwidthUsage(db, alice.caller, { resourceId: resource, start: future, end: new Date(Date.parse(future) + 3_600_000).toISOString() });
    expect(ahead.peakBps).toBe(0);
  });

  const badRanges: [string, Record<string, unknown>, string][] = [
    ["an unparsable start", { start: "yesterday" }, "start"],
    ["an unparsable end", { end: "2025-02-01 10:00" }, "end"],
    ["a start without a time zone", { start: "2025-02-01T00:00:00" }, "start"],
    ["an end that is only a date", { end: "2025-02-02" }, "end"],
    ["an impossible date", { start: "2025-02-30T00:00:00Z" }, "start"],
    ["an impossible hour", { end: "2025-02-02T24:00:00Z" }, "end"],
    ["a missing start", { start: undefined }, "start"],
    ["a start after the end", { start: "2025-02-03T00:00:00Z" }, "start"],
    ["a start equal to the end", { start: "2025-02-02T00:00:00Z" }, "start"],
    ["a range longer than 31 days", { start: "2025-01-01T00:00:00Z", end: "2025-02-01T00:00:01Z" }, "end"],
    ["a missing resource id", { resourceId: "" }, "resource_id"],
  ];
  it.each(badRanges)("is 400 invalid_request for %s", async (_name, overrides, field) => {
    const error = await failure(
      bandwidthUsage(db, alice.caller, { resourceId: resource, start: "2025-02-01T00:00:00Z", end: "2025-02-02T00:00:00Z", ...overrides } as any),
    );
    expect(error.code).toBe("invalid_request");
    expect(error.status).toBe(400);
    expect(error.details).toEqual({ field });
  });

  it("accepts exactly 31 days", async () => {
    const usage = await bandwidthUsage(db, alice.caller, { resourceId: resource, start: "2025-01-01T00:00:00Z", end: "2025-02-01T00:00:00Z" });
    expect(usage.points).toHaveLength(186);
  });

  it("is 404 Resource not found for another account's or an unknown resource", async () => {
    for (const [caller, id] of [
      [bob.caller, resource],
      [alice.caller, "res_missing"],
    ] as const) {
      const error = await failure(bandwidthUsage(db, caller, { resourceId: id, start: "2025-02-01T00:00:00Z", end: "2025-02-02T00:00:00Z" }));
      expect(error.code).toBe("not_found");
      expect(error.message).toBe("Resource not found");
    }
  });
});

describe("traffic", () => {
  it("gives one item per day, inclusive, whose sum is exactly the total", async () => {
    const usage = await trafficUsage(db, alice.caller, { resourceId: resource, start: "2025-02-01", end: "2025-03-03" });
    expect(usage.resourceId).toBe(resource);
    expect(usage.items).toHaveLength(31);
    expect(usage.items[0]!.date).toBe("2025-02-01");
    expect(usage.items.at(-1)!.date).toBe("2025-03-03");
    expect(usage.items.every((item) => Number.isSafeInteger(item.bytes) && item.bytes > 0)).toBe(true);
    expect(usage.totalBytes).toBe(usage.items.reduce((sum, item) => sum + item.bytes, 0));
    expect(await trafficUsage(db, alice.caller, { resourceId: resource, start: "2025-02-01", end: "2025-03-03" })).toEqual(usage);
  });

  it("agrees with the 300-second bandwidth curve of the same day", async () => {
    const traffic = await trafficUsage(db, alice.caller, { resourceId: resource, start: "2025-02-10", end: "2025-02-10" });
    const bandwidth = await bandwidthUsage(db, alice.caller, { resourceId: resource, start: "2025-02-10T00:00:00Z", end: "2025-02-11T00:00:00Z" });
    const bytes = bandwidth.points.reduce((sum, p) => sum + Math.floor((p.bps * 300) / 8), 0);
    expect(traffic.items).toEqual([{ date: "2025-02-10", bytes }]);
    expect(traffic.totalBytes).toBe(bytes);
  });

  it("counts nothing before the resource was created", async () => {
    const late = (await insertResource(alice, "2025-04-02T00:00:00.000Z")).resourceId;
    const usage = await trafficUsage(db, alice.caller, { resourceId: late, start: "2025-03-31", end: "2025-04-02" });
    expect(usage.items.map((i) => i.bytes > 0)).toEqual([false, false, true]);
    expect(usage.totalBytes).toBe(usage.items[2]!.bytes);
    expect(cumulativeTrafficBytes(late, "2025-04-02T00:00:00.000Z", Date.parse("2025-04-03T00:00:00Z"))).toBe(usage.items[2]!.bytes);
  });

  const badRanges: [string, Record<string, unknown>, string][] = [
    ["an unparsable start", { start: "Feb 1" }, "start"],
    ["a date-time as end", { end: "2025-02-02T00:00:00Z" }, "end"],
    ["an impossible date", { end: "2025-02-29" }, "end"],
    ["a start after the end", { start: "2025-02-03", end: "2025-02-02" }, "start"],
    ["32 days", { start: "2025-02-01", end: "2025-03-04" }, "end"],
    ["a missing end", { end: undefined }, "end"],
  ];
  it.each(badRanges)("is 400 invalid_request for %s", async (_name, overrides, field) => {
    const error = await failure(trafficUsage(db, alice.caller, { resourceId: resource, start: "2025-02-01", end: "2025-02-02", ...overrides } as any));
    expect(error.code).toBe("invalid_request");
    expect(error.details).toEqual({ field });
  });

  it("accepts a single day", async () => {
    const usage = await trafficUsage(db, alice.caller, { resourceId: resource, start: "2025-02-01", end: "2025-02-01" });
    expect(usage.items).toHaveLength(1);
  });

  it("is 404 Resource not found for another account's resource", async () => {
    const error = await failure(trafficUsage(db, bob.caller, { resourceId: resource, start: "2025-02-01", end: "2025-02-02" }));
    expect(error.code).toBe("not_found");
    expect(error.message).toBe("Resource not found");
  });
});

describe("usage thresholds", () => {
  const created = "2025-05-01T00:00:00.000Z";
  const createdMs = Date.parse(created);

  async function events(resourceId: string) {
    return (
      await db<{ payload: string; topic: string; aggregate_id: string }>("outbox")
        .where({ topic: "usage.threshold_reached", aggregate_id: resourceId })
        .orderBy("id")
    ).map((row) => ({
      ...row,
      payload: JSON.parse(row.payload),
    }));
  }

  it("validates the threshold and the resource", async () => {
    for (const bad of [0, -5, 1.5, Number.MAX_SAFE_INTEGER + 1, "100" as any]) {
      const error = await failure(setUsageThreshold(db, alice.caller, resource, bad));
      expect(error.code).toBe("validation_failed");
      expect(error.details).toEqual({ field: "threshold_bytes" });
    }
    const foreign = await failure(setUsageThreshold(db, bob.caller, resource, 1000));
    expect(foreign.code).toBe("not_found");
    expect(foreign.message).toBe("Resource not found");
  });

  it("emits usage.threshold_reached once when cumulative traffic crosses the threshold", async () => {
    const { resourceId, orderId } = await insertResource(alice, created);
    const threshold = cumulativeTrafficBytes(resourceId, created, createdMs + DAY);
    expect(await setUsageThreshold(db, alice.caller, resourceId, threshold)).toEqual({ resourceId, thresholdBytes: threshold });

    expect(await checkUsageThresholds(db, { now: createdMs + DAY / 2 })).toBe(0);
    expect(await checkUsageThresholds(db, { now: createdMs + DAY - 300_000 })).toBe(0);
    expect(await events(resourceId)).toHaveLength(0);

    expect(await checkUsageThresholds(db, { now: new Date(createdMs + DAY) })).toBe(1);
    expect(await checkUsageThresholds(db, { now: createdMs + 2 * DAY })).toBe(0);
    expect(await checkUsageThresholds(db)).toBe(0);

    const emitted = await events(resourceId);
    expect(emitted).toHaveLength(1);
    expect(emitted[0]).toMatchObject({ account_id: alice.accountId, key_id: alice.keyId });
    expect(emitted[0]!.payload).toEqual({ resource_id: resourceId, order_id: orderId, threshold_bytes: threshold, used_bytes: threshold });
    expect(await db("resources").where("id", resourceId).first("threshold_notified_bytes")).toEqual({ threshold_notified_bytes: threshold });
  });

  it("re-arms when the threshold changes, and not when the same value is set again", async () => {
    const { resourceId } = await insertResource(alice, created);
    await setUsageThreshold(db, alice.caller, resourceId, 1_000);
    expect(await checkUsageThresholds(db)).toBe(1);
    await setUsageThreshold(db, alice.caller, resourceId, 1_000);
    expect(await checkUsageThresholds(db)).toBe(0);
    await setUsageThreshold(db, alice.caller, resourceId, 2_000);
    expect(await checkUsageThresholds(db)).toBe(1);
    await setUsageThreshold(db, alice.caller, resourceId, null);
    expect(await checkUsageThresholds(db)).toBe(0);
    await setUsageThreshold(db, alice.caller, resourceId, 2_000);
    expect(await checkUsageThresholds(db)).toBe(1);
    // A threshold not reached yet waits.
    await setUsageThreshold(db, alice.caller, resourceId, Number.MAX_SAFE_INTEGER);
    expect(await checkUsageThresholds(db)).toBe(0);
    expect((await events(resourceId)).map((e) => e.payload.threshold_bytes)).toEqual([1_000, 2_000, 2_000]);
  });

  it("emits once even when two workers check at the same time", async () => {
    const { resourceId } = await insertResource(alice, created);
    await setUsageThreshold(db, alice.caller, resourceId, 5_000);
    const counts = await Promise.all([checkUsageThresholds(db), checkUsageThresholds(db), checkUsageThresholds(db)]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await events(resourceId)).toHaveLength(1);
  });

  it("skips resources that are not active", async () => {
    const { resourceId } = await insertResource(alice, created, "expired");
    await setUsageThreshold(db, alice.caller, resourceId, 1);
    expect(await checkUsageThresholds(db)).toBe(0);
    expect(await events(resourceId)).toHaveLength(0);
  });
});
