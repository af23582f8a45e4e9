import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { waitForState } from "../support/events.ts";
import { runCli, startCli } from "../support/process.ts";

describe("the switchyard CLI and `start` as a newcomer runs them", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-cli-"));
  const env = { DATA_DIR: dataDir, PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0", TASK_POLL_INTERVAL_MS: "50", SIMULATOR_STEP_MS: "50" };
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  // Two real processes start one after the other: slow on a busy two-core machine.
  it("prints the URL and a demo key with its id on first start; the key works; SIGTERM exits cleanly; a restart prints no new key", {
    timeout: 90_000,
  }, async () => {
    const first = startCli(["start"], { ...env, LOG_LEVEL: "info" });
    const [, url] = await first.waitFor(/Switchyard router:\s+(http:\/\/\S+)/);
    const [, key, keyId] = await first.waitFor(/Demo API key[^:]*: (sy_\S+) \(id (key_\w+)\)/);
    await first.waitFor(/"event":"ready"/);
    // stderr names the database; stdout is the banner in one block, then JSON log lines only.
    expect(first.output()).toContain(`database: sqlite ${path.join(dataDir, "switchyard.db")}\n`);
    const stdoutLines = first
      .output()
      .replace(/^database: .*\n/m, "")
      .split("\n")
      .filter(Boolean);
    const banner = stdoutLines.filter((line) => !line.startsWith("{"));
    expect(banner.map((line) => line.split(":")[0])).toEqual([
      "Switchyard router",
      "Web pages",
      "Generation subgraph",
      "Cloud subgraph",
      "Demo API key (100.00 CNY, shown once)",
    ]);
    const firstBannerLine = stdoutLines.indexOf(banner[0]!);
    expect(stdoutLines.slice(firstBannerLine, firstBannerLine + banner.length)).toEqual(banner);
    // The console and readiness are in the banner, and the README shows these lines as printed.
    expect(banner[0]).toContain(`ready ${url}/readyz`);
    expect(banner[1]).toContain(`${url}/admin (console)`);
    const readme = fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    for (const line of banner.slice(0, 2)) expect(readme).toContain(line.replaceAll(url!, "http://127.0.0.1:4000"));
    for (const line of stdoutLines.filter((l) => l.startsWith("{"))) expect(() => JSON.parse(line)).not.toThrow();
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    const submit = await fetch(`${url}/api/v1/images/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "a lighthouse", model_id: 45, count: 2 }),
    });
    expect(submit.status).toBe(200);
    expect((await submit.json()).data.amount).toBe(0.6);
    expect(await first.stop("SIGTERM")).toBe(0);

    const second = startCli(["start"], env);
    const [, url2] = await second.waitFor(/Switchyard router:\s+(http:\/\/\S+)/);
    expect(second.output()).not.toMatch(/Demo API key/);
    const usage = await fetch(`${url2}/api/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
    expect((await usage.json()).data.spent).toBe(0.6);
    expect(await second.stop("SIGTERM")).toBe(0);

    // The id printed beside the demo key is the one every `keys` command takes.
    const shown = await runCli(["keys", "show", keyId!, "--json"], env);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: keyId, name: "demo", status: "active", balance: "99.40" });
  });

  it("exits 0 on a SIGTERM that arrives while it is still starting, without announcing itself", { timeout: 60_000 }, async () => {
    const ownDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-cli-early-"));
    try {
      const proc = startCli(["start"], { ...env, DATA_DIR: ownDir });
      // The database file appears when the start opens it: the stack is half built.
      const dbFile = path.join(ownDir, "switchyard.db");
      const watcher = fs.watch(ownDir);
      try {
        await waitForState(watcher, "change", async () => fs.existsSync(dbFile), Boolean, 30_000);
      } finally {
        watcher.close();
      }
      expect(await proc.stop("SIGTERM")).toBe(0);
      expect(proc.output()).not.toMatch(/Switchyard router:/);
    } finally {
      fs.rmSync(ownDir, { recursive: true, force: true });
    }
  });

  it("creates a key with --json, tops it up, disables it, and verify reports clean books", async () => {
    const created = await runCli(["keys", "create", "--name", "acme", "--balance", "12.5", "--json"], env);
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout.trim());
    expect(Object.keys(key).sort()).toEqual(["account_id", "id", "key", "webhook_secret"]);
    const topup = await runCli(["keys", "topup", key.id, "--amount", "0.125", "--json"], env);
    expect(JSON.parse(topup.stdout.trim())).toEqual({ id: key.id, balance: "12.625" });
    expect((await runCli(["keys", "disable", key.id], env)).code).toBe(0);
    expect((await runCli(["keys", "topup", "key_nope", "--amount", "1"], env)).code).toBe(1);
    expect((await runCli(["keys", "create", "--balance", "1"], env)).code).toBe(2);
    const verify = await runCli(["verify"], env);
    expect(verify.stdout).toMatch(/no discrepancies/);
    expect(verify.code).toBe(0);
  });

  it("verify exits 1 and names a running total that is not the sum of its rows", async () => {
    const created = JSON.parse((await runCli(["keys", "create", "--name", "drift", "--balance", "3", "--json"], env)).stdout);
    const db = openDb({ dataDir });
    try {
      await db("api_keys").where("id", created.id).update({ spent: 1234 });
    } finally {
      await db.destroy();
    }
    const verify = await runCli(["verify"], env);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain(`total_mismatch\t${created.id}\tapi_keys.spent: stored 1234 != sum of its rows 0\n1 discrepancies`);
    const repair = openDb({ dataDir });
    try {
      await repair("api_keys").where("id", created.id).update({ spent: 0 });
    } finally {
      await repair.destroy();
    }
    expect((await runCli(["verify"], env)).code).toBe(0);
  });

  it("lists keys newest first, filtered by account and status, as a table or JSON, a page at a time", async () => {
    const create = async (args: string[]) => JSON.parse((await runCli(["keys", "create", ...args, "--json"], env)).stdout);
    const shop = await create(["--name", "shop", "--balance", "20"]);
    const shopReader = await create(["--name", "shop reader", "--account", shop.account_id, "--scopes", "catalog:read,orders:read"]);
    const other = await create(["--name", "other", "--balance", "1.125"]);
    expect((await runCli(["keys", "disable", shopReader.id], env)).code).toBe(0);

    const ofShop = await runCli(["keys", "list", "--account", shop.account_id, "--json"], env);
    expect(ofShop.code).toBe(0);
    const listed = JSON.parse(ofShop.stdout);
    expect(listed).toEqual([
      {
        id: shopReader.id,
        name: "shop reader",
        account_id: shop.account_id,
        status: "disabled",
        scopes: ["catalog:read", "orders:read"],
        balance: "20.00",
        created_at: expect.any(String),
      },
      {
        id: shop.id,
        name: "shop",
        account_id: shop.account_id,
        status: "active",
        scopes: expect.arrayContaining(["generation", "orders:write"]),
        balance: "20.00",
        created_at: expect.any(String),
      },
    ]);
    expect(new Date(listed[0].created_at).toISOString()).toBe(listed[0].created_at);

    const active = JSON.parse((await runCli(["keys", "list", "--account", shop.account_id, "--status", "active", "--json"], env)).stdout);
    expect(active.map((k: { id: string }) => k.id)).toEqual([shop.id]);

    const table = await runCli(["keys", "list", "--status", "active"], env);
    expect(table.code).toBe(0);
    const [header, ...rows] = table.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^ID\s+NAME\s+ACCOUNT\s+STATUS\s+BALANCE\s+CREATED\s+SCOPES$/);
    expect(rows[0]).toMatch(new RegExp(`^${other.id}\\s+other\\s+${other.account_id}\\s+active\\s+1\\.125\\s+\\S+\\s+all$`));
    expect(rows.some((row) => row.startsWith(shopReader.id))).toBe(false);

    // One at a time: stderr gives the cursor of the next page, which holds the next key.
    const firstPage = await runCli(["keys", "list", "--limit", "1", "--json"], env);
    expect(JSON.parse(firstPage.stdout).map((k: { id: string }) => k.id)).toEqual([other.id]);
    const [, cursor] = firstPage.stderr.match(/next page: --after (\S+)/)!;
    const secondPage = await runCli(["keys", "list", "--limit", "1", "--after", cursor!, "--json"], env);
    expect(JSON.parse(secondPage.stdout).map((k: { id: string }) => k.id)).toEqual([shopReader.id]);

    expect((await runCli(["keys", "list", "--status", "gone"], env)).code).toBe(2);
    expect((await runCli(["keys", "list", "--limit", "0"], env)).code).toBe(2);
  });

  it("shows one key's settings and balance, never its secret, and exits 1 for an unknown id", async () => {
    const created = JSON.parse(
      (
        await runCli(
          [
            "keys",
            "create",
            "--name",
            "hooks",
            "--balance",
            "3",
            "--allow-ip",
            "10.0.0.0/8",
            "--rate-limit",
            "5",
            "--callback-url",
            "https://shop.example/hooks",
            "--require-signature",
            "--json",
          ],
          env,
        )
      ).stdout,
    );
    const json = await runCli(["keys", "show", created.id, "--json"], env);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      id: created.id,
      name: "hooks",
      account_id: created.account_id,
      status: "active",
      scopes: expect.any(Array),
      balance: "3.00",
      created_at: expect.any(String),
      allow_ips: ["10.0.0.0/8"],
      rate_limit: 5,
      callback_url: "https://shop.example/hooks",
      require_signature: true,
    });
    const text = await runCli(["keys", "show", created.id], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^key id:\\s+${created.id}\n`));
    expect(text.stdout).toMatch(/^balance:\s+3\.00 CNY$/m);
    expect(text.stdout).toMatch(/^rate limit:\s+5 per second$/m);
    for (const secret of [created.key, created.webhook_secret]) expect(json.stdout + text.stdout).not.toContain(secret);

    const missing = await runCli(["keys", "show", "key_nope"], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^switchyard: API key not found$/m);
  });
});
