/**
 * `viewer.usageByDay` (the /client chart's series): the calling key's spending and billed units
 * per UTC day, through the router, on SQLite and (TEST_DATABASE=postgres) PostgreSQL. Tasks are
 * made through the REST API and settle for real; past days are made by moving rows' `created_at`
 * into the past, never by waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSqlite, type Db } from "../../src/db/index.ts";
import { usageByDayQuery } from "../../src/generation/usage.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

/** One day of `Viewer.usageByDay`, as the queries below select it. */
type UsageDay = { date: string; spent: { amount: string; currency?: string }; billedSeconds: number; billedImages?: number };

const USAGE = `query Usage($days: Int) { viewer { usageByDay(days: $days) { date spent { amount currency } billedSeconds billedImages } } }`;
const DAY_MS = 86_400_000;
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);

let t: TestStack;
let db: Db;

beforeAll(async () => {
  t = await startTestStack();
  db = t.stack.db!;
});
afterAll(async () => {
  await t?.close();
});

/** Submits through REST and waits until the task has settled. */
async function settled(key: string, path: "/api/v1/video/generations" | "/api/v1/images/generations", body: Record<string, unknown>) {
  const submitted = await t.rest("POST", path, { key, body });
  expect(submitted.status).toBe(200);
  const taskId = submitted.body.data.task_id as string;
  await t.waitForTask(key, taskId);
  return taskId;
}

/** Moves a task's row, or one of its ledger entries, to noon UTC of a past day. */
async function moveTask(taskId: string, daysAgo: number) {
  const at = `${day(daysAgo)}T12:00:00.000Z`;
  await db("tasks").where("id", taskId).update({ created_at: at, updated_at: at });
}
async function moveEntry(taskId: string, kind: "debit" | "refund", daysAgo: number) {
  expect(
    await db("ledger_entries")
      .where({ task_id: taskId, kind })
      .update({ created_at: `${day(daysAgo)}T12:00:00.000Z` }),
  ).toBe(1);
}

describe("viewer.usageByDay", () => {
  it("sums each UTC day exactly (debits minus refunds, billed seconds and images), with zero days present and other keys left out", async () => {
    const owner = await t.createKey("100");
    const other = await t.createKey("100", { accountId: owner.account_id });

    // Three days ago: a 5 s video (5.000) and two images (2 × 0.300).
    const video = await settled(owner.key, "/api/v1/video/generations", { prompt: "a heron", model_id: 52, seconds: 5 });
    const images = await settled(owner.key, "/api/v1/images/generations", { prompt: "a kite", model_id: 45, count: 2 });
    for (const id of [video, images]) {
      await moveTask(id, 3);
      await moveEntry(id, "debit", 3);
    }
    // Yesterday: a failed video, debited and refunded the same day (nets to zero, bills nothing).
    const failedSameDay = await settled(owner.key, "/api/v1/video/generations", { prompt: "a storm #fail", model_id: 52, seconds: 5 });
    await moveTask(failedSameDay, 1);
    await moveEntry(failedSameDay, "debit", 1);
    await moveEntry(failedSameDay, "refund", 1);
    // Debited yesterday, refunded today: yesterday +5.000, today −5.000.
    const refundedToday = await settled(owner.key, "/api/v1/video/generations", { prompt: "a flood #fail", model_id: 52, seconds: 5 });
    await moveTask(refundedToday, 1);
    await moveEntry(refundedToday, "debit", 1);
    // Today: an 8 s video (8.000) and one image (0.300).
    await settled(owner.key, "/api/v1/video/generations", { prompt: "a fox", model_id: 52, seconds: 8 });
    await settled(owner.key, "/api/v1/images/generations", { prompt: "a boat", model_id: 45, count: 1 });
    // 40 days ago: outside the default window.
    const old = await settled(owner.key, "/api/v1/video/generations", { prompt: "an old one", model_id: 52, seconds: 5 });
    await moveTask(old, 40);
    await moveEntry(old, "debit", 40);
    // The other key of the same account: not the caller's usage.
    await settled(other.key, "/api/v1/video/generations", { prompt: "someone else", model_id: 52, seconds: 10 });

    const { status, body } = await t.graphql(USAGE, {}, owner.key);
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    const series = body.data.viewer.usageByDay as UsageDay[];
    expect(series).toHaveLength(30);
    expect(series.map((d) => d.date)).toEqual(Array.from({ length: 30 }, (_, i) => day(29 - i)));
    const byDate = new Map(series.map((d) => [d.date, d]));
    const zero = (date: string) => ({ date, spent: { amount: "0.00", currency: "CNY" }, billedSeconds: 0, billedImages: 0 });
    expect(byDate.get(day(3))).toEqual({ date: day(3), spent: { amount: "5.60", currency: "CNY" }, billedSeconds: 5, billedImages: 2 });
    expect(byDate.get(day(2))).toEqual(zero(day(2)));
    expect(byDate.get(day(1))).toEqual({ date: day(1), spent: { amount: "5.00", currency: "CNY" }, billedSeconds: 0, billedImages: 0 });
    expect(byDate.get(day(0))).toEqual({ date: day(0), spent: { amount: "3.30", currency: "CNY" }, billedSeconds: 8, billedImages: 1 });
    expect(series.filter((d) => ![day(3), day(1), day(0)].includes(d.date))).toEqual(
      series.filter((d) => ![day(3), day(1), day(0)].includes(d.date)).map((d) => zero(d.date)),
    );

    // 90 days reach the old task; the sum of the days is then the key's whole spending.
    const wide = await t.graphql(`{ viewer { spent { amount } usageByDay(days: 90) { date spent { amount } billedSeconds } } }`, {}, owner.key);
    const all = wide.body.data.viewer.usageByDay as UsageDay[];
    expect(all).toHaveLength(90);
    expect(all.find((d) => d.date === day(40))).toMatchObject({ spent: { amount: "5.00" }, billedSeconds: 5 });
    const milli = (amount: string) => Math.round(Number(amount) * 1000);
    expect(all.reduce((sum, d) => sum + milli(d.spent.amount), 0)).toBe(milli(wide.body.data.viewer.spent.amount));
    expect(milli(wide.body.data.viewer.spent.amount)).toBe(18_900);

    const one = await t.graphql(USAGE, { days: 1 }, owner.key);
    expect(one.body.data.viewer.usageByDay).toEqual([byDate.get(day(0))]);
  });

  it("refuses days outside 1-90 with invalid_request (400) on field days", async () => {
    const { key } = await t.createKey("1");
    for (const days of [0, -1, 91, 1000]) {
      const { body } = await t.graphql(USAGE, { days }, key);
      expect(body.data.viewer.usageByDay).toBeNull();
      expect(body.errors).toHaveLength(1);
      expect(body.errors[0].message).toBe("days must be an integer from 1 to 90");
      expect(body.errors[0].extensions).toMatchObject({ code: "invalid_request", http: { status: 400 }, field: "days" });
    }
  });

  it("needs the key, like the other usage fields", async () => {
    const { body } = await t.graphql(`{ viewer { usageByDay { date } } }`);
    expect(body.data.viewer).toBeNull();
    expect(body.errors[0].extensions.code).toBe("unauthorized");
  });

  it("reads both tables through their (key_id, created_at) index, bounded to the window", async () => {
    const query = usageByDayQuery(db, "key_x", "2025-01-01T00:00:00.000Z", "2025-01-31T00:00:00.000Z").toSQL();
    if (isSqlite(db)) {
      const plan: { detail: string }[] = await db.raw(`explain query plan ${query.sql}`, query.bindings as any[]);
      const details = plan.map((row) => row.detail);
      expect(details).toContainEqual(
        expect.stringMatching(/^SEARCH ledger_entries USING INDEX ledger_entries_key_id_created_at_index \(key_id=\? AND created_at>\? AND created_at<\?\)$/),
      );
      expect(details).toContainEqual(
        expect.stringMatching(/^SEARCH tasks USING INDEX tasks_key_id_created_at_id_index \(key_id=\? AND created_at>\? AND created_at<\?\)$/),
      );
      expect(details.join("\n")).not.toMatch(/\bSCAN (ledger_entries|tasks)\b/);
    } else {
      // An empty test table is cheapest to scan; forbid that to see which index the query can use.
      // On an empty table the console's (created_at, status) index (migration 011) costs the same
      // as the key's and may win the tie; it is dropped inside this rolled-back transaction, so
      // the plan shows whether the key's index serves the query, bounded to the window.
      const plan = await db
        .transaction(async (trx) => {
          await trx.raw("set local enable_seqscan = off");
          await trx.raw("drop index if exists tasks_created_at_status_index");
          const lines = (await trx.raw(`explain ${query.sql}`, query.bindings as any[])).rows
            .map((row: Record<string, string>) => row["QUERY PLAN"])
            .join("\n");
          throw Object.assign(new Error("rollback"), { lines });
        })
        .catch((error: { lines?: string }) => {
          if (error.lines === undefined) throw error;
          return error.lines;
        });
      expect(plan).toMatch(
        /Index (Only )?Scan using ledger_entries_key_id_created_at_index on ledger_entries[\s\S]*Index Cond: \(\(\(key_id\)::text = 'key_x'::text\) AND \(\(created_at\)::text >= /,
      );
      expect(plan).toMatch(/(Index|Bitmap Index) Scan (using|on) tasks_key_id_created_at_id_index/);
    }
  });
});
