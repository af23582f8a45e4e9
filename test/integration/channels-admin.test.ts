/**
 * Channel management (README "Channels"; docs/api/generation.md "Admin: channels"): admin
 * GraphQL through the router and the `switchyard channels` CLI on the same database. The key is
 * never returned; only the admin token is accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { runCli } from "../support/process.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { createTestDatabase } from "../support/db.ts";

const ADMIN_TOKEN = "channels-admin-token";
const SECRET = "channels-admin-secret-0123456789abcdef";
const CHANNEL = `id name baseUrl models modelMapping { modelId upstreamModel } priority weight status disabledReason consecutiveFailures nextProbeAt implicit
  stats { submissions successes failures successRate latencyMsAvg openTasks } createdAt updatedAt`;

describe("channel administration", () => {
  let t: TestStack;
  let fake: FakeUpstream;
  let env: Record<string, string>;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    fake = await startFakeUpstream();
    // One database for the stack and the CLI.
    database = await createTestDatabase();
    env = { ...database.env, CHANNEL_KEY_SECRET: SECRET, LOG_LEVEL: "silent" };
    t = await startTestStack({ ADMIN_TOKEN, ...env });
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
    await database?.drop();
  });

  it("adds, lists, updates, disables and tests a channel through admin GraphQL, never showing its key", async () => {
    const added = await t.graphql(
      `mutation($in: AdminAddChannelInput!) { adminAddChannel(input: $in) { channel { ${CHANNEL} } } }`,
      {
        in: {
          name: "backup",
          baseUrl: fake.url,
          apiKey: "backup-secret-key",
          models: [52, 39],
          modelMapping: [{ modelId: 52, upstreamModel: "seedance-pro" }],
          priority: -5,
          weight: 7,
        },
      },
      undefined,
      admin,
    );
    expect(added.body.errors).toBeUndefined();
    const channel = added.body.data.adminAddChannel.channel;
    expect(channel).toMatchObject({
      name: "backup",
      models: [52, 39],
      priority: -5,
      weight: 7,
      status: "ENABLED",
      implicit: false,
      stats: { submissions: 0, successRate: null, openTasks: 0 },
    });
    expect(JSON.stringify(added.body)).not.toContain("backup-secret-key");

    const listed = await t.graphql(`{ adminChannels { ${CHANNEL} } }`, {}, undefined, admin);
    expect(listed.body.data.adminChannels.map((c: any) => c.id)).toEqual(["chn_default", channel.id]);
    expect(listed.body.data.adminChannels[0]).toMatchObject({ implicit: true, models: [] });

    const updated = await t.graphql(
      `mutation { adminUpdateChannel(input: { id: "${channel.id}", weight: 3, priority: -1 }) { channel { weight priority name } } }`,
      {},
      undefined,
      admin,
    );
    expect(updated.body.data.adminUpdateChannel.channel).toEqual({ weight: 3, priority: -1, name: "backup" });
    const implicitUpdate = await t.graphql(`mutation { adminUpdateChannel(input: { id: "chn_default", weight: 3 }) { channel { id } } }`, {}, undefined, admin);
    expect(implicitUpdate.body.errors[0].extensions.code).toBe("invalid_request");
    const badWeight = await t.graphql(`mutation { adminUpdateChannel(input: { id: "${channel.id}", weight: 0 }) { channel { id } } }`, {}, undefined, admin);
    expect(badWeight.body.errors[0].message).toMatch(/weight must be a whole number from 1 to 1000/);

    const disabled = await t.graphql(
      `mutation { adminSetChannelStatus(input: { id: "${channel.id}", enabled: false }) { channel { status disabledReason } } }`,
      {},
      undefined,
      admin,
    );
    expect(disabled.body.data.adminSetChannelStatus.channel).toEqual({ status: "DISABLED", disabledReason: "disabled by an operator" });

    const tested = await t.graphql(`mutation { adminTestChannel(input: { id: "${channel.id}" }) { ok latencyMs error channel { id } } }`, {}, undefined, admin);
    expect(tested.body.data.adminTestChannel).toMatchObject({ ok: true, error: null, channel: { id: channel.id } });
    expect(fake.requests.at(-1)).toMatchObject({ method: "GET", path: "/api/v1/usage", authorization: "Bearer backup-secret-key" });
    fake.setHistoryMode("fail");
    const failing = await t.graphql(`mutation { adminTestChannel(input: { id: "${channel.id}" }) { ok error } }`, {}, undefined, admin);
    expect(failing.body.data.adminTestChannel).toEqual({ ok: false, error: "http: HTTP 500: usage exploded" });
    fake.setHistoryMode("echo");
  });

  it("refuses a base URL with credentials on add and update (400, the password never echoed) and stores nothing", async () => {
    const add = await t.graphql(
      `mutation($in: AdminAddChannelInput!) { adminAddChannel(input: $in) { channel { id } } }`,
      { in: { name: "creds", baseUrl: "https://admin:hunter2pass@provider.example", apiKey: "creds-key-0001", models: [52] } },
      undefined,
      admin,
    );
    expect(add.body.data.adminAddChannel).toBeNull();
    expect(add.body.errors[0]).toMatchObject({
      message: "baseUrl must not contain credentials (user:password@): give the provider's key as apiKey",
      extensions: { code: "invalid_request", http: { status: 400 } },
    });
    expect(JSON.stringify(add.body)).not.toContain("hunter2pass");
    expect(await t.stack.db!("channels").where({ name: "creds" })).toEqual([]);

    const stored = await t.stack.channels!.add({ name: "plain", baseUrl: fake.url, apiKey: "plain-key-0002", models: [52] });
    for (const baseUrl of ["http://user:hunter2pass@127.0.0.1:9", "https://token-only@provider.example"]) {
      const update = await t.graphql(
        `mutation($in: AdminUpdateChannelInput!) { adminUpdateChannel(input: $in) { channel { baseUrl } } }`,
        { in: { id: stored.id, baseUrl } },
        undefined,
        admin,
      );
      expect(update.body.errors[0]).toMatchObject({
        message: expect.stringMatching(/^baseUrl must not contain credentials/),
        extensions: { code: "invalid_request" },
      });
      expect(JSON.stringify(update.body)).not.toMatch(/hunter2pass|token-only/);
    }
    expect((await t.stack.db!("channels").where({ id: stored.id }).first()).base_url).toBe(fake.url);
  });

  it("shows a base URL stored with credentials before they were refused without them, and keeps them out of its failure texts", async () => {
    const legacy = await t.stack.channels!.add({ name: "legacy", baseUrl: fake.url, apiKey: "legacy-key-0003", models: [52] });
    const port = new URL(fake.url).port;
    await t.stack.db!("channels")
      .where({ id: legacy.id })
      .update({ base_url: `http://olduser:hunter2pass@127.0.0.1:${port}` });
    const tested = await t.graphql(`mutation { adminTestChannel(input: { id: "${legacy.id}" }) { ok error channel { baseUrl } } }`, {}, undefined, admin);
    // fetch refuses a URL with credentials; the refusal names the URL, redacted.
    expect(tested.body.data.adminTestChannel).toMatchObject({ ok: false, channel: { baseUrl: `http://[redacted]@127.0.0.1:${port}` } });
    expect(tested.body.data.adminTestChannel.error).toContain(`http://[redacted]@127.0.0.1:${port}`);
    const listed = await t.graphql(`{ adminChannels { baseUrl } }`, {}, undefined, admin);
    expect(JSON.stringify([tested.body, listed.body])).not.toMatch(/hunter2pass|olduser/);
    await t.stack.channels!.setStatus(legacy.id, false);
  });

  it("manages channels from the CLI on the same database", async () => {
    const added = await runCli(
      ["channels", "add", "--name", "cli", "--base-url", fake.url, "--api-key", "cli-secret-key", "--models", "45", "--priority", "-9", "--json"],
      env,
    );
    expect(added.code, added.stderr).toBe(0);
    const channel = JSON.parse(added.stdout);
    expect(channel).toMatchObject({ name: "cli", models: [45], priority: -9, status: "ENABLED" });
    expect(added.stdout).not.toContain("cli-secret-key");
    expect((await runCli(["channels", "disable", channel.id], env)).code).toBe(0);
    const listed = await runCli(["channels", "list", "--json"], env);
    expect(JSON.parse(listed.stdout).find((c: any) => c.id === channel.id)).toMatchObject({ status: "DISABLED" });
    const tested = await runCli(["channels", "test", channel.id, "--json"], env);
    expect(tested.code).toBe(0);
    expect(JSON.parse(tested.stdout)).toMatchObject({ id: channel.id, ok: true });
    const missing = await runCli(["channels", "add", "--name", "x"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/channels add needs --base-url/);
  }, 120_000); // six CLI processes, each starting Node on a shared two-core machine

  it("refuses an API key and a wrong token (401)", async () => {
    const key = await t.createKey("1");
    const attempts: Record<string, string>[] = [{ authorization: `Bearer ${key.key}` }, { authorization: "Bearer wrong" }, {}];
    for (const headers of attempts) {
      const answer = await t.graphql(`{ adminChannels { id } }`, {}, undefined, headers);
      expect(answer.body.errors[0].extensions.code).toBe("unauthorized");
    }
  });
});
