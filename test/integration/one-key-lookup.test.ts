/**
 * One key lookup per client request (issue 25 §1, "one context per request"): when the router and
 * both subgraphs share the process, a request reaching both reads its key once; over HTTP each
 * subgraph still reads and checks the key itself (every boundary checks for itself).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { measureStatements } from "../support/sql-count.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

/** Fields of both subgraphs: `viewer` and its tasks (generation), its orders (cloud). */
const BOTH_SUBGRAPHS = "{ viewer { id tasks(first: 5) { totalCount } orders(first: 5) { totalCount } } }";

// One lookup, or on PostgreSQL a batch of concurrent lookups (`= any(…)`, ADR 0032).
const keyLookups = (statements: { sql: string }[]) => statements.filter((s) => /[`"]key_hash[`"] = (\?|\$1|any\()/.test(s.sql));

describe.each([
  ["in-process", {}, 1],
  ["over HTTP", { SUBGRAPH_TRANSPORT: "http" }, 2],
] as const)("a request reaching both subgraphs, %s", (_name, env, lookups) => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack(env);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it(`reads its key ${lookups === 1 ? "once" : "once per subgraph"}`, async () => {
    const { key, account_id: accountId } = await t.createKey();
    const { result, statements } = await measureStatements(t.stack.db!, () => t.graphql(BOTH_SUBGRAPHS, {}, key));
    expect(result.body.errors).toBeUndefined();
    expect(result.body.data.viewer.id).toContain(accountId.slice(4));
    expect(keyLookups(statements)).toHaveLength(lookups);
  });

  it("never answers one request with the key of another sent with it", async () => {
    const [first, second] = await Promise.all([t.createKey(), t.createKey()]);
    const [a, b, refused] = await Promise.all([
      t.graphql(BOTH_SUBGRAPHS, {}, first.key),
      t.graphql(BOTH_SUBGRAPHS, {}, second.key),
      t.graphql(BOTH_SUBGRAPHS, {}, "sy_not_a_key"),
    ]);
    expect(a.body.data.viewer.id).not.toBe(b.body.data.viewer.id);
    expect(a.body.errors).toBeUndefined();
    expect(b.body.errors).toBeUndefined();
    expect(refused.body.errors?.[0]?.extensions?.code).toBe("unauthorized");
  });
});
