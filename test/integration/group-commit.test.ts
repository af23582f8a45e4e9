/**
 * Group commit (ADR 0011, src/db/group-commit.ts): concurrent write transactions share one
 * SQLite transaction, each in a savepoint; a failing one rolls back alone, and every caller is
 * answered only after the COMMIT that made its rows durable. On PostgreSQL each call is its own
 * transaction, so the same outcomes hold there too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSqlite, migrate, openDb, type Db } from "../../src/db/index.ts";
import { groupCommit } from "../../src/db/group-commit.ts";
import { createKey } from "../../src/auth/keys.ts";
import { debit, verifyLedger } from "../../src/ledger/index.ts";
import { AppError } from "../../src/errors.ts";
import { parseYuan } from "../../src/money.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";

describe("group commit", () => {
  let database: TestDatabase;
  let db: Db;
  /** A second connection to the same database: it sees committed rows only. */
  let reader: Db;

  beforeAll(async () => {
    database = await createTestDatabase("switchyard-group-");
    db = openDb({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
    await migrate(db);
    reader = openDb({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
  });
  /** Records the statements run on `db` that match `pattern`, until `stop()`. */
  const recordSql = (pattern: RegExp) => {
    const seen: string[] = [];
    const listener = (query: { sql?: string }) => {
      if (pattern.test(query.sql ?? "")) seen.push(query.sql!);
    };
    db.on("query", listener);
    return { seen, stop: () => void db.off("query", listener) };
  };
  afterAll(async () => {
    await reader?.destroy();
    await db?.destroy();
    await database?.drop();
  });

  it("commits the calls of one moment together; one refused debit rolls back alone and writes nothing", async () => {
    const key = await createKey(db, { name: "group", balance: parseYuan("12") });
    const commit = groupCommit(db);
    const { seen: transactions, stop } = recordSql(/^\s*begin/i);
    const submit = (n: number) =>
      commit(async (trx) => {
        await debit(trx, { accountId: key.account_id, keyId: key.id, amount: 5000, ref: `group:${key.id}:${n}`, reason: "group test" });
        await trx("outbox").insert({
          topic: "test.group",
          account_id: key.account_id,
          aggregate_id: `g${n}`,
          payload: "{}",
          created_at: new Date().toISOString(),
        });
        // Seen by the caller only once durable: another connection reads it.
        return n;
      }).then(
        async (value) => ({ value, visible: Boolean(await reader("ledger_entries").where("ref", `group:${key.id}:${n}`).first()) }),
        (error) => ({ error }),
      );
    const outcomes = await Promise.all([submit(1), submit(2), submit(3)]);
    stop();

    // 12 yuan covers two of three 5-yuan debits: one is refused, the others commit. On SQLite the
    // group runs them in order, so the third is the refused one; on PostgreSQL each is its own
    // concurrent transaction and any one of the three may lose the race.
    const refusedAt = outcomes.findIndex((o) => "error" in o);
    if (isSqlite(db)) expect(refusedAt).toBe(2);
    const accepted = outcomes.filter((_, i) => i !== refusedAt);
    expect(accepted).toHaveLength(2);
    for (const outcome of accepted) expect(outcome).toMatchObject({ visible: true });
    const refused = outcomes[refusedAt] as { error: unknown };
    expect(refused.error).toBeInstanceOf(AppError);
    expect((refused.error as AppError).code).toBe("insufficient_balance");
    if (isSqlite(db)) expect(transactions).toHaveLength(1);
    const loser = refusedAt + 1;
    expect(await reader("ledger_entries").where("ref", `group:${key.id}:${loser}`).first()).toBeUndefined();
    expect(
      await reader("outbox")
        .where({ topic: "test.group", aggregate_id: `g${loser}` })
        .first(),
    ).toBeUndefined();
    expect((await reader("outbox").where("topic", "test.group").select("aggregate_id")).map((r: any) => r.aggregate_id).sort()).toEqual(
      [1, 2, 3].filter((n) => n !== loser).map((n) => `g${n}`),
    );
    expect(Number((await reader("accounts").where("id", key.account_id).first("balance")).balance)).toBe(2000);
    expect(await verifyLedger(reader)).toEqual([]);
  });

  it("rolls back only the call whose statement violates a constraint; the group's other calls commit", async () => {
    const key = await createKey(db, { name: "group-unique", balance: parseYuan("100") });
    const commit = groupCommit(db);
    const charge = (ref: string) =>
      commit((trx) => debit(trx, { accountId: key.account_id, keyId: key.id, amount: 1000, ref, reason: "group test" })).then(
        (balance) => ({ balance }),
        (error) => ({ failed: String((error as Error).message) }),
      );
    // The second call repeats the first's ref (ledger refs are unique): it fails, its debit undone.
    const outcomes = await Promise.all([charge(`u:${key.id}:a`), charge(`u:${key.id}:a`), charge(`u:${key.id}:b`)]);
    if (isSqlite(db)) {
      // One group, in call order: the repeat is the one refused.
      expect(outcomes[0]).toEqual({ balance: 99_000 });
      expect(outcomes[1]).toMatchObject({ failed: expect.stringMatching(/unique|duplicate/i) });
      expect(outcomes[2]).toEqual({ balance: 98_000 });
    } else {
      // PostgreSQL runs the three as concurrent transactions: either of the two with the same ref
      // may be the one refused, and the balances follow the commit order.
      const failed = outcomes.filter((o) => "failed" in o);
      expect(failed).toEqual([{ failed: expect.stringMatching(/unique|duplicate/i) }]);
      expect(outcomes.indexOf(failed[0]!)).toBeLessThan(2);
      expect(
        outcomes
          .filter((o) => "balance" in o)
          .map((o) => (o as { balance: number }).balance)
          .sort(),
      ).toEqual([98_000, 99_000]);
    }
    expect(Number((await reader("accounts").where("id", key.account_id).first("balance")).balance)).toBe(98_000);
    expect(await reader("ledger_entries").where("account_id", key.account_id).where("kind", "debit").count({ n: "*" }).first()).toMatchObject({ n: 2 });
    expect(await verifyLedger(reader)).toEqual([]);
  });

  it("runs a one-statement call without a savepoint; its failing statement is undone alone and the group's other calls commit", async () => {
    const key = await createKey(db, { name: "group-one", balance: parseYuan("100") });
    const commit = groupCommit(db);
    const event = (id: string) => ({ topic: "test.one", account_id: key.account_id, aggregate_id: id, payload: "{}", created_at: new Date().toISOString() });
    const { seen: savepoints, stop } = recordSql(/^\s*savepoint/i);
    const outcomes = await Promise.all([
      commit((trx) => debit(trx, { accountId: key.account_id, keyId: key.id, amount: 1000, ref: `one:${key.id}:a`, reason: "group test" })),
      commit((trx) => trx("outbox").insert(event("o1")), { oneStatement: true }),
      // Two rows in one INSERT, the second violating NOT NULL: the statement is backed out whole.
      commit((trx) => trx("outbox").insert([event("o2"), { ...event("o3"), topic: null }]), { oneStatement: true }).catch((error: Error) => ({
        failed: error.message,
      })),
      commit((trx) => debit(trx, { accountId: key.account_id, keyId: key.id, amount: 1000, ref: `one:${key.id}:b`, reason: "group test" })),
    ]);
    stop();
    expect(outcomes[2]).toMatchObject({ failed: expect.stringMatching(/not null|null value/i) });
    // In call order in one group on SQLite; on PostgreSQL concurrent transactions commit in any order.
    if (isSqlite(db)) expect([outcomes[0], outcomes[3]]).toEqual([99_000, 98_000]);
    else expect([outcomes[0], outcomes[3]].sort()).toEqual([98_000, 99_000]);
    // Savepoints only for the two debits, when the four shared a group (SQLite).
    if (isSqlite(db)) expect(savepoints.length).toBeLessThanOrEqual(2);
    expect((await reader("outbox").where("topic", "test.one").select("aggregate_id")).map((r: any) => r.aggregate_id)).toEqual(["o1"]);
    expect(Number((await reader("accounts").where("id", key.account_id).first("balance")).balance)).toBe(98_000);
    expect(await verifyLedger(reader)).toEqual([]);
  });

  it("answers a call that runs alone after its own commit, and its failure with its own error", async () => {
    const commit = groupCommit(db);
    await expect(commit(async () => Promise.reject(new AppError("invalid_request", "alone")))).rejects.toMatchObject({ code: "invalid_request" });
    const key = await createKey(db, { name: "group-alone", balance: parseYuan("1") });
    await expect(commit((trx) => debit(trx, { accountId: key.account_id, keyId: key.id, amount: 1000, ref: `alone:${key.id}` }))).resolves.toBe(0);
    expect(await reader("ledger_entries").where("ref", `alone:${key.id}`).first()).toBeTruthy();
  });
});
