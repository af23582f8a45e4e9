/**
 * The CLI reads numbers, amounts and cursors as strictly as the APIs do (issue 20 finding 9;
 * README "CLI"): an option that is not a plain decimal (`1e2`, `0x10`, ` 5`, `5\n`) is bad usage
 * (exit 2, nothing written), and `keys list --after` takes only a cursor it printed. Runs the real
 * `bin/switchyard` on SQLite or (TEST_DATABASE=postgres) PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Db } from "../../src/db/index.ts";
import { createKey } from "../../src/auth/keys.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { runCli } from "../support/process.ts";

let database: TestDb;
let db: Db;
let env: Record<string, string>;
let keyId: string;
let accountId: string;

beforeAll(async () => {
  database = await openTestDb("switchyard-cli-strict-");
  env = { ...database.env, CHANNEL_KEY_SECRET: "x".repeat(32) };
  db = database.db;
  await migrate(db);
  const created = await createKey(db, { name: "strict" });
  await createKey(db, { name: "strict 2" });
  keyId = created.id;
  accountId = created.account_id;
});
afterAll(() => database?.close());

/** Rows of the tables a refused command must not write. */
async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of ["api_keys", "ledger_entries", "customers", "products", "channels"])
    out[table] = Number((await db(table).count({ n: "*" }).first())?.n ?? 0);
  return out;
}

describe("CLI options: plain decimals only", () => {
  it("refuses lenient whole numbers and amounts as bad usage (exit 2) and writes nothing", { timeout: 180_000 }, async () => {
    const before = await counts();
    const cases: [string[], RegExp][] = [
      [["keys", "create", "--name", "x", "--rate-limit", "0x10"], /--rate-limit must be a positive integer/],
      [["keys", "create", "--name", "x", "--rate-limit", "1e2"], /--rate-limit must be a positive integer/],
      [["keys", "create", "--name", "x", "--rate-limit", " 5"], /--rate-limit must be a positive integer/],
      [["keys", "create", "--name", "x", "--balance", " 5"], /--balance must be an amount in yuan/],
      [["keys", "topup", keyId, "--amount", "5\n"], /--amount must be an amount in yuan/],
      [["keys", "topup", keyId, "--amount", "1e2"], /--amount must be an amount in yuan/],
      [["keys", "list", "--limit", " 5"], /--limit must be a whole number from 1 to 1000/],
      [["keys", "list", "--limit", "1e2"], /--limit must be a whole number from 1 to 1000/],
      [["customers", "topup", "cust-1", "--account", accountId, "--amount", "+5"], /--amount must be an amount in yuan/],
      [["customers", "credit", "cust-1", "--account", accountId, "--limit", "5 "], /--limit must be an amount in yuan/],
      [
        ["catalog", "product", "upsert", "--vendor", "v", "--category", "cdn", "--name", "n", "--stock", "1e2"],
        /--stock must be a non-negative integer or unlimited/,
      ],
      [["catalog", "product", "upsert", "--vendor", "v", "--category", "cdn", "--name", "n", "--cycle", "monthly= 30"], /--cycle must be an amount in yuan/],
      [
        ["channels", "add", "--name", "c", "--base-url", "http://127.0.0.1:1", "--api-key", "k", "--models", "45", "--weight", "1e2"],
        /--weight must be a whole number/,
      ],
      [
        ["channels", "add", "--name", "c", "--base-url", "http://127.0.0.1:1", "--api-key", "k", "--models", "0x2D", "--priority", "1"],
        /--models must be a whole number/,
      ],
      [["webhooks", "resend", "1e3"], /webhooks resend needs a numeric DELIVERY_ID/],
    ];
    const runs = await Promise.all(cases.map(([args]) => runCli(args, env)));
    runs.forEach((run, i) => {
      const [args, message] = cases[i]!;
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 2, stdout: "" });
      expect(run.stderr, args.join(" ")).toMatch(message);
    });
    expect(await counts()).toEqual(before);
  });

  it("refuses a lenient number in a setting, naming the variable", { timeout: 60_000 }, async () => {
    const run = await runCli(["keys", "list"], { ...env, DB_STATEMENTS_PER_REQUEST: "1e3" });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^switchyard: Invalid configuration: DB_STATEMENTS_PER_REQUEST: must be a whole number of at least 1/);
  });
});

describe("keys list --after", () => {
  it("takes the cursor it printed and refuses one it never printed as bad usage", { timeout: 120_000 }, async () => {
    const first = await runCli(["keys", "list", "--limit", "1", "--json"], env);
    expect(first.code, first.stderr).toBe(0);
    const cursor = /next page: --after (\S+)/.exec(first.stderr)?.[1];
    expect(cursor).toEqual(expect.any(String));
    const second = await runCli(["keys", "list", "--limit", "1", "--json", "--after", cursor!], env);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)[0].id).not.toBe(JSON.parse(first.stdout)[0].id);
    for (const bad of ["WyJhYmMiXQ", Buffer.from("[1.5,2]").toString("base64url"), "!!!"]) {
      const run = await runCli(["keys", "list", "--after", bad], env);
      expect({ bad, code: run.code, stdout: run.stdout }).toEqual({ bad, code: 2, stdout: "" });
      expect(run.stderr).toMatch(/--after must be a cursor printed by keys list/);
    }
  });
});
