/**
 * `switchyard channels` with channel types (issue 24 §4; README "Channels"): a Kling channel added
 * with its access key and secret key from files, probed through the fake Kling (which checks the
 * JWT the stored keys sign), never printed; `channels list --json` answering exactly the shape of
 * admin GraphQL's `Channel` (the same function, read from the same database); the text list's
 * type and success-rate columns; a gemini-veo and a dashscope channel added with an API key file
 * and probed. Real CLI processes on one SQLite database.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { channelAnswer, channelViews } from "../../src/generation/channels/view.ts";
import { startFakeDashScope } from "../support/providers/dashscope.ts";
import { startFakeVeo } from "../support/providers/gemini-veo.ts";
import { startFakeKling, type FakeKling } from "../support/providers/kling.ts";
import { runCli } from "../support/process.ts";

/** CLI processes start slowly on a loaded two-core machine. */
const SLOW = 180_000;

describe("channels of a type from the CLI", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-channels-cli-types-"));
  const env = { DATA_DIR: dataDir, CHANNEL_KEY_SECRET: "channels-cli-secret-0123456789abcdef", LOG_LEVEL: "warn" };
  let kling: FakeKling;
  beforeAll(async () => {
    kling = await startFakeKling();
  });
  afterAll(async () => {
    await kling?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    "adds a Kling channel from key files, probes it with a token the fake accepts, and prints no key",
    async () => {
      const accessFile = path.join(dataDir, "kling.ak");
      const secretFile = path.join(dataDir, "kling.sk");
      fs.writeFileSync(accessFile, `${kling.credentials.accessKey}\n`);
      fs.writeFileSync(secretFile, `${kling.credentials.secretKey}\n`);
      const added = await runCli(
        [
          "channels",
          "add",
          "--type",
          "kling",
          "--name",
          "kling",
          "--base-url",
          kling.url,
          "--models",
          "52,39",
          "--access-key-file",
          accessFile,
          "--secret-key-file",
          secretFile,
          "--json",
        ],
        env,
      );
      expect(added.code, added.stderr).toBe(0);
      const channel = JSON.parse(added.stdout);
      expect(channel).toMatchObject({ type: "KLING", models: [52, 39], status: "ENABLED" });
      const tested = await runCli(["channels", "test", channel.id, "--json"], env);
      expect(tested.code, tested.stderr).toBe(0);
      expect(JSON.parse(tested.stdout)).toMatchObject({ ok: true });
      const sent = kling.requests.at(-1)!;
      expect(sent.path).toBe("/v1/videos/text2video?pageNum=1&pageSize=1");
      expect(sent.authorization).toMatch(/^Bearer eyJ/);
      for (const secret of Object.values(kling.credentials)) expect(added.stdout + added.stderr + tested.stdout + tested.stderr).not.toContain(secret);
      // A Kling channel without its secret key is a usage error naming the options.
      const missing = await runCli(
        ["channels", "add", "--type", "kling", "--name", "half", "--base-url", kling.url, "--models", "52", "--access-key-file", accessFile],
        env,
      );
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/channels add --type kling needs --secret-key-file, --secret-key-stdin, --secret-key-env or --secret-key/);
    },
    SLOW,
  );

  it(
    "lists channels as JSON in exactly the shape of adminChannels, and as text with the type and a success rate",
    async () => {
      const listed = await runCli(["channels", "list", "--json"], env);
      expect(listed.code, listed.stderr).toBe(0);
      const db = openDb({ databaseUrl: undefined, dataDir });
      try {
        expect(JSON.parse(listed.stdout)).toEqual((await channelViews(db)).map(channelAnswer));
      } finally {
        await db.destroy();
      }
      const parsed = JSON.parse(listed.stdout);
      expect(parsed).toEqual([
        expect.objectContaining({
          type: "KLING",
          models: [52, 39],
          stats: expect.objectContaining({ openTasks: 0, successRate: null, providerUsageTasks: 0 }),
        }),
      ]);
      expect(Object.keys(parsed[0]).sort()).toEqual(
        [
          "id",
          "name",
          "type",
          "baseUrl",
          "models",
          "modelMapping",
          "priority",
          "weight",
          "status",
          "disabledReason",
          "consecutiveFailures",
          "nextProbeAt",
          "implicit",
          "stats",
          "createdAt",
          "updatedAt",
        ].sort(),
      );
      const text = await runCli(["channels", "list"], env);
      expect(text.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+TYPE\s+STATUS\s+PRIORITY\s+WEIGHT\s+MODELS\s+TRIED\s+OK RATE\s+OPEN\s+NEXT PROBE\s+BASE URL$/);
      expect(text.stdout).toMatch(/\skling\s+ENABLED\s/);
    },
    SLOW,
  );

  it(
    "adds a gemini-veo channel whose probe carries the key in x-goog-api-key, and a dashscope channel whose wrong key fails its probe in DashScope's words, no key printed",
    async () => {
      const [veo, dashscope] = await Promise.all([startFakeVeo(), startFakeDashScope()]);
      try {
        const veoKey = path.join(dataDir, "veo.key");
        fs.writeFileSync(veoKey, `${veo.credentials.apiKey}\n`);
        const added = await runCli(
          ["channels", "add", "--type", "gemini-veo", "--name", "veo", "--base-url", veo.url, "--models", "52", "--api-key-file", veoKey, "--json"],
          env,
        );
        expect(added.code, added.stderr).toBe(0);
        const channel = JSON.parse(added.stdout);
        expect(channel).toMatchObject({ type: "GEMINI_VEO", models: [52], status: "ENABLED" });
        const tested = await runCli(["channels", "test", channel.id, "--json"], env);
        expect(tested.code, tested.stderr).toBe(0);
        expect(veo.requests.at(-1)!.path).toBe("/v1beta/models?pageSize=1");
        const wrongKey = path.join(dataDir, "dashscope.key");
        fs.writeFileSync(wrongKey, `${dashscope.wrongCredentials.apiKey}\n`);
        const bad = JSON.parse(
          (
            await runCli(
              ["channels", "add", "--type", "dashscope", "--name", "wan", "--base-url", dashscope.url, "--models", "52", "--api-key-file", wrongKey, "--json"],
              env,
            )
          ).stdout,
        );
        expect(bad.type).toBe("DASHSCOPE");
        const failed = await runCli(["channels", "test", bad.id, "--json"], env);
        expect(failed.code).toBe(1);
        expect(failed.stdout + failed.stderr).toContain("HTTP 401: InvalidApiKey: Invalid API-key provided.");
        const printed = added.stdout + added.stderr + tested.stdout + tested.stderr + failed.stdout + failed.stderr;
        for (const secret of [veo.credentials.apiKey!, dashscope.wrongCredentials.apiKey!]) expect(printed).not.toContain(secret);
      } finally {
        await Promise.all([veo.close(), dashscope.close()]);
      }
    },
    SLOW,
  );
});
