import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "../support/process.ts";

describe("the switchyard CLI and `start` as a newcomer runs them", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-cli-"));
  const env = { DATA_DIR: dataDir, PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0", TASK_POLL_INTERVAL_MS: "50", SIMULATOR_STEP_MS: "50" };
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  // Two real processes start one after the other: slow on a busy two-core machine.
  it("prints the URL and a demo key on first start; the key works; SIGTERM exits cleanly; a restart prints no new key", { timeout: 90_000 }, async () => {
    const first = startCli(["start"], env);
    const [, url] = await first.waitFor(/Switchyard router:\s+(http:\/\/\S+)/);
    const [, key] = await first.waitFor(/Demo API key[^:]*: (sy_\S+)/);
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
  });

  it("exits 0 on a SIGTERM that arrives while it is still starting, without announcing itself", { timeout: 60_000 }, async () => {
    const ownDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-cli-early-"));
    try {
      const proc = startCli(["start"], { ...env, DATA_DIR: ownDir });
      // The database file appears when the start opens it: the stack is half built.
      const dbFile = path.join(ownDir, "switchyard.db");
      while (!fs.existsSync(dbFile)) await new Promise((resolve) => setTimeout(resolve, 5));
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
});
