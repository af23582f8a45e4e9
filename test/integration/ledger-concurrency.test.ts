/**
 * The balance under concurrent submissions (docs/architecture.md §3: a debit never takes a balance below zero,
 * even under concurrent requests; docs/api/generation.md §4 rule 5: insufficient balance is 402).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../../src/ledger/index.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

/** The ledger columns these tests read (milli-yuan, as the driver returns them). */
type LedgerRow = { kind: string; amount: number | string; balance_after: number | string };

/** Model 52, 5 s, count 1: 5.00 yuan. */
const FIVE_YUAN_VIDEO = { prompt: "a red kite over a beach", model_id: 52, seconds: 5 };

describe("concurrent submissions against one balance", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t?.close());

  it("accepts exactly as many of 30 simultaneous submissions as the balance covers and never overdraws", async () => {
    const key = await t.createKey("50");
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        t.rest("POST", "/api/v1/video/generations", { key: key.key, body: { ...FIVE_YUAN_VIDEO, prompt: `${FIVE_YUAN_VIDEO.prompt} #${i}` } }),
      ),
    );

    const accepted = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 402);
    expect(accepted).toHaveLength(10);
    expect(refused).toHaveLength(20);
    for (const r of accepted) expect(r.body.data).toMatchObject({ status: 0, amount: 5 });
    for (const r of refused) expect(r.body).toEqual({ code: 402, message: "Insufficient balance" });

    const taskIds = accepted.map((r) => r.body.data.task_id);
    expect(new Set(taskIds).size).toBe(10);

    const usage = await t.rest("GET", "/api/v1/usage?limit=100", { key: key.key });
    expect(usage.status).toBe(200);
    expect(usage.body.data.balance).toBe(0);
    expect(usage.body.data.spent).toBe(50);
    expect((usage.body.data.tasks as { task_id: string }[]).map((task) => task.task_id).sort()).toEqual([...taskIds].sort());

    const db = t.stack.db!;
    const tasks = await db<{ id: string }>("tasks").where("key_id", key.id).select("id");
    expect(tasks.map((row) => row.id).sort()).toEqual([...taskIds].sort());
    const account = await db("accounts").where("id", key.account_id).first("balance");
    expect(Number(account.balance)).toBe(0);
    const entries = await db<LedgerRow>("ledger_entries").where("account_id", key.account_id).select("kind", "amount", "balance_after");
    expect(entries.filter((e) => e.kind === "topup")).toHaveLength(1);
    const debits = entries.filter((e) => e.kind === "debit");
    expect(debits).toHaveLength(10);
    for (const e of debits) expect(Number(e.amount)).toBe(-5000);
    // Each debit saw the balance of the one before: 45, 40, ... 0, none below zero.
    expect(debits.map((e) => Number(e.balance_after)).sort((a, b) => b - a)).toEqual(Array.from({ length: 10 }, (_, i) => 45_000 - i * 5000));
    expect(entries).toHaveLength(11);
    expect(await verifyLedger(db)).toEqual([]);
  });

  it("writes nothing for a submission refused with 402: no task and no ledger entry beyond the top-up", async () => {
    const key = await t.createKey("4.999");
    const response = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: FIVE_YUAN_VIDEO });
    expect(response.status).toBe(402);
    expect(response.body).toEqual({ code: 402, message: "Insufficient balance" });

    const db = t.stack.db!;
    expect(await db("tasks").where("key_id", key.id).select("id")).toEqual([]);
    expect(await db("tasks").where("account_id", key.account_id).select("id")).toEqual([]);
    const entries = await db<LedgerRow>("ledger_entries").where("account_id", key.account_id).select("kind", "amount");
    expect(entries.map((e) => ({ kind: e.kind, amount: Number(e.amount) }))).toEqual([{ kind: "topup", amount: 4999 }]);

    const usage = await t.rest("GET", "/api/v1/usage", { key: key.key });
    expect(usage.body.data).toMatchObject({ balance: 4.999, spent: 0, billed_seconds: 0, tasks: [] });
    expect(await verifyLedger(db)).toEqual([]);
  });
});
