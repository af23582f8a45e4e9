/**
 * `switchyard channels` as an operator runs it (README "Channels", "CLI"; issue 20 findings 3 and
 * 10): the provider's key read from a file, stdin or an environment variable instead of the
 * command line; base URLs with credentials refused; what a failing provider says printed without
 * a key; a manual disable of a model's last channel obeyed with a warning. Real CLI processes on
 * one SQLite database; a fake provider over HTTP receives the key the CLI stored.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { runCli } from "../support/process.ts";

/** CLI processes start slowly on a loaded two-core machine. */
const SLOW = 180_000;

describe("channels from the CLI: where the key comes from, what is refused, what is printed", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-channels-cli-"));
  const env = { DATA_DIR: dataDir, CHANNEL_KEY_SECRET: "channels-cli-secret-0123456789abcdef", LOG_LEVEL: "warn" };
  let fake: FakeUpstream;
  beforeAll(async () => {
    fake = await startFakeUpstream();
  });
  afterAll(async () => {
    await fake?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** The key the provider received on the last request (the CLI's `channels test` sends it). */
  async function keyProviderSees(channelId: string): Promise<string | undefined> {
    const tested = await runCli(["channels", "test", channelId, "--json"], env);
    expect(tested.code, tested.stderr).toBe(0);
    return fake.requests.at(-1)?.authorization?.replace(/^Bearer /, "");
  }
  const add = (name: string, extra: string[], options: { input?: string; env?: Record<string, string>; models?: string } = {}) =>
    runCli(
      ["channels", "add", "--name", name, "--base-url", fake.url, "--models", options.models ?? "69", "--json", ...extra],
      { ...env, ...options.env },
      options,
    );
  /** Adds a channel whose key is read from a file holding `key`. @returns the channel as `--json` prints it */
  async function addWithKeyFile(name: string, key: string, models?: string) {
    const file = path.join(dataDir, `${name}.key`);
    fs.writeFileSync(file, key);
    const run = await add(name, ["--api-key-file", file], { models });
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout);
  }

  it(
    "records add, update, disable and enable in the audit log as the CLI's, with no key in any row",
    async () => {
      const channel = await addWithKeyFile("audited", "key-audited-0009", "51");
      expect((await runCli(["channels", "update", channel.id, "--priority", "3"], env)).code).toBe(0);
      expect((await runCli(["channels", "disable", channel.id], env)).code).toBe(0);
      expect((await runCli(["channels", "enable", channel.id], env)).code).toBe(0);
      const audit = await runCli(["audit", "list", "--object", channel.id, "--json"], env);
      expect(audit.code, audit.stderr).toBe(0);
      const rows = JSON.parse(audit.stdout) as { action: string; actor: string; object_type: string; before: unknown; after: unknown }[];
      expect(rows.map((r) => [r.action, r.actor, r.object_type])).toEqual([
        ["channels.enable", "cli", "channel"],
        ["channels.disable", "cli", "channel"],
        ["channels.update", "cli", "channel"],
        ["channels.add", "cli", "channel"],
      ]);
      expect(JSON.stringify(rows[2]!.after)).toContain('"priority":3');
      expect(audit.stdout).not.toContain("key-audited-0009");
    },
    SLOW,
  );

  it(
    "reads the key from --api-key-file, --api-key-stdin or --api-key-env (trailing line break dropped), and warns about --api-key",
    async () => {
      const file = path.join(dataDir, "provider.key");
      fs.writeFileSync(file, "key-from-file-0001\n");
      const fromFile = await add("from-file", ["--api-key-file", file]);
      expect(fromFile.code, fromFile.stderr).toBe(0);
      expect(fromFile.stderr).not.toMatch(/warning/);
      const fromStdin = await add("from-stdin", ["--api-key-stdin"], { input: "key-from-stdin-0002\r\n" });
      expect(fromStdin.code, fromStdin.stderr).toBe(0);
      const fromEnv = await add("from-env", ["--api-key-env", "PROVIDER_KEY"], { env: { PROVIDER_KEY: "key-from-env-0003" } });
      expect(fromEnv.code, fromEnv.stderr).toBe(0);
      const onCommandLine = await add("on-command-line", ["--api-key", "key-on-command-line-0004"]);
      expect(onCommandLine.code, onCommandLine.stderr).toBe(0);
      expect(onCommandLine.stderr).toMatch(
        /^warning: --api-key is visible in the process list and the shell history; prefer --api-key-file or --api-key-stdin$/m,
      );
      for (const run of [fromFile, fromStdin, fromEnv, onCommandLine]) expect(run.stdout).not.toMatch(/key-(from|on)-/);

      expect(await keyProviderSees(JSON.parse(fromFile.stdout).id)).toBe("key-from-file-0001");
      expect(await keyProviderSees(JSON.parse(fromStdin.stdout).id)).toBe("key-from-stdin-0002");
      expect(await keyProviderSees(JSON.parse(fromEnv.stdout).id)).toBe("key-from-env-0003");

      // `channels update` takes the same sources.
      const rotated = await runCli(["channels", "update", JSON.parse(fromFile.stdout).id, "--api-key-stdin", "--json"], env, { input: "key-rotated-0005\n" });
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(await keyProviderSees(JSON.parse(fromFile.stdout).id)).toBe("key-rotated-0005");
    },
    SLOW,
  );

  it(
    "refuses two key sources, an unset variable, an empty key and an unreadable file, storing nothing",
    async () => {
      const before = JSON.parse((await runCli(["channels", "list", "--json"], env)).stdout).length;
      const cases: [string[], RegExp, number, string?][] = [
        [["--api-key", "k-0001", "--api-key-env", "PROVIDER_KEY"], /give the key once: --api-key-file, --api-key-stdin, --api-key-env or --api-key/, 2],
        [["--api-key-env", "NOT_SET_ANYWHERE"], /--api-key-env NOT_SET_ANYWHERE: the variable is not set/, 2],
        [["--api-key-stdin"], /--api-key-stdin: the key is empty/, 2, "\n"],
        [["--api-key-file", path.join(dataDir, "missing.key")], /cannot read --api-key-file .*missing\.key: ENOENT/, 1],
        [[], /channels add needs the provider's key/, 2],
      ];
      for (const [extra, message, code, input] of cases) {
        const run = await add("refused", extra, { input });
        expect({ extra, code: run.code }).toEqual({ extra, code });
        expect(run.stderr).toMatch(message);
      }
      expect(JSON.parse((await runCli(["channels", "list", "--json"], env)).stdout)).toHaveLength(before);
    },
    SLOW,
  );

  it(
    "refuses a base URL with credentials on add and update without printing the password",
    async () => {
      const added = await runCli(
        ["channels", "add", "--name", "creds", "--base-url", "https://admin:hunter2pass@provider.example", "--api-key-env", "K", "--models", "69"],
        { ...env, K: "k-0006" },
      );
      expect(added.code).toBe(1);
      expect(added.stderr).toMatch(/^switchyard: baseUrl must not contain credentials \(user:password@\): give the provider's key as apiKey$/m);
      expect(added.stderr + added.stdout).not.toMatch(/hunter2pass/);
      const listed = JSON.parse((await runCli(["channels", "list", "--json"], env)).stdout);
      const some = listed.find((c: any) => !c.implicit);
      const updated = await runCli(["channels", "update", some.id, "--base-url", "http://user:hunter2pass@127.0.0.1:9"], env);
      expect(updated.code).toBe(1);
      expect(updated.stderr).toMatch(/baseUrl must not contain credentials/);
      expect(updated.stderr + updated.stdout).not.toMatch(/hunter2pass/);
      const after = JSON.parse((await runCli(["channels", "list", "--json"], env)).stdout);
      expect(after.find((c: any) => c.id === some.id).baseUrl).toBe(some.baseUrl);
    },
    SLOW,
  );

  it(
    "prints what a failing provider says with every configured key redacted (channels test)",
    async () => {
      const added = await addWithKeyFile("echoing", "key-echoed-by-provider-0007");
      // Another stored channel's key, a bearer token and an sk- key in the same complaint.
      fake.setHistoryMode("fail", "bad key-echoed-by-provider-0007 (also key-from-env-0003), Bearer abcdefgh12345678, sk-live-0123456789abcdef");
      try {
        const tested = await runCli(["channels", "test", added.id, "--json"], env);
        expect(tested.code).toBe(1);
        expect(JSON.parse(tested.stdout)).toMatchObject({
          ok: false,
          error: "http: HTTP 500: bad [redacted] (also [redacted]), Bearer [redacted], [redacted]",
        });
      } finally {
        fake.setHistoryMode("echo");
      }
    },
    SLOW,
  );

  it(
    "disables the last enabled channel of a model when an operator asks, and warns that the model has none",
    async () => {
      const only = await addWithKeyFile("only-45", "key-only-0008", "45");
      // No server ran on this database (no chn_default): the new channel is model 45's only one.
      const disabled = await runCli(["channels", "disable", only.id, "--json"], env);
      expect(disabled.code).toBe(0);
      expect(JSON.parse(disabled.stdout)).toMatchObject({ status: "DISABLED", disabledReason: "disabled by an operator" });
      expect(disabled.stderr).toMatch(/^warning: no enabled channel serves model 45 now: its submissions are refused until one is enabled$/m);
    },
    SLOW,
  );
});
