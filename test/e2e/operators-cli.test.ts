/**
 * `switchyard operators …`, `audit list` and `verify` as an operator runs them (issue 23 §1;
 * README "CLI", "Console"): the first owner made with a password from stdin (never an argument),
 * a token shown once, operator changes and money writes in the audit log without a secret, and
 * `verify` failing on a money write that has no audit row.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/process.ts";
import { migrate, openDb } from "../../src/db/index.ts";
import { topUpKey } from "../../src/auth/keys.ts";

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-operators-cli-"));
const env = { DATA_DIR: dataDir };
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe("switchyard operators and audit", () => {
  it("makes the first owner from a password on stdin, a token shown once, and audits it all without a secret; verify fails on an unaudited top-up", {
    timeout: 180_000,
  }, async () => {
    const short = await runCli(["operators", "create", "--email", "ops@example.com", "--role", "owner", "--password-stdin"], env, { input: "short\n" });
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("password must have 12 to 256 characters");
    const created = await runCli(["operators", "create", "--email", "Ops@Example.com", "--role", "owner", "--password-stdin", "--json"], env, {
      input: "a long enough password\n",
    });
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ email: "ops@example.com", role: "owner", status: "active" });
    const badRole = await runCli(["operators", "create", "--email", "x@example.com", "--role", "admin"], env);
    expect(badRole.code).toBe(1);
    const token = await runCli(["operators", "token", "create", "ops@example.com", "--name", "ci", "--json"], env);
    const { token: secret } = JSON.parse(token.stdout);
    expect(secret).toMatch(/^syop_opt_[0-9a-z]+_[A-Za-z0-9_-]{43}$/);
    const revoked = await runCli(["operators", "token", "create", "ops@example.com", "--name", "leaked", "--json"], env);
    expect((await runCli(["operators", "token", "revoke", JSON.parse(revoked.stdout).id], env)).code).toBe(0);
    const key = JSON.parse((await runCli(["keys", "create", "--name", "audited", "--balance", "5", "--json"], env)).stdout);
    expect((await runCli(["keys", "topup", key.id, "--amount", "1.5"], env)).code).toBe(0);
    expect((await runCli(["operators", "disable", "ops@example.com"], env)).stdout).toContain("disabled");
    const listed = JSON.parse((await runCli(["operators", "list", "--json"], env)).stdout);
    expect(listed).toEqual([expect.objectContaining({ email: "ops@example.com", status: "disabled" })]);

    const audit = await runCli(["audit", "list", "--json"], env);
    const rows = JSON.parse(audit.stdout) as { action: string; actor: string; ledger_entry_id: number | null }[];
    expect(rows.map((r) => r.action)).toEqual([
      "operators.disable",
      "keys.topup",
      "keys.create",
      "operators.token.revoke",
      "operators.token.create",
      "operators.token.create",
      "operators.create",
      "audit.started",
    ]);
    expect(new Set(rows.slice(0, -1).map((r) => r.actor))).toEqual(new Set(["cli"]));
    expect(rows.find((r) => r.action === "keys.topup")!.ledger_entry_id).not.toBeNull();
    for (const secretText of [secret, secret.split("_").at(-1), key.key, key.webhook_secret, "a long enough password"])
      expect(audit.stdout).not.toContain(secretText);
    expect(JSON.parse((await runCli(["audit", "list", "--object", key.id, "--json"], env)).stdout)).toHaveLength(2);

    expect((await runCli(["verify"], env)).code).toBe(0);
    const db = openDb({ dataDir });
    try {
      await migrate(db);
      const entry = await topUpKey(db, key.id, 1000); // behind the operators' back
      const verify = await runCli(["verify"], env);
      expect(verify.code).toBe(1);
      expect(verify.stdout).toContain(`operator_money_write_unaudited\tledger_entry ${entry.id}\t`);
    } finally {
      await db.destroy();
    }
  });
});
