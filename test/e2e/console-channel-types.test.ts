/**
 * The console's channel form with channel types (issue 24 "Done when"): in Debian's chromium,
 * an operator adds a Kling channel with its access key and secret key, sees it listed with its
 * type, a customer's task runs through it (the fake Kling checks the JWT the stored keys sign),
 * the result is fetched through the router's signed URL, and the channel's provider-reported
 * usage shows up in the list. The keys never appear on the page after submitting.
 */
import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { channelTypeEnum } from "../../src/generation/channels/view.ts";
import { CHANNEL_TYPE_IDS } from "../../src/generation/upstream/channel-types.ts";
import { ARTIFACTS, DESKTOP, LAUNCH } from "../support/browser.ts";
import { startFakeKling, type FakeKling } from "../support/providers/kling.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const ADMIN_TOKEN = "e2e-channel-types-token";

describe("console: a Kling channel added in the form serves a task", () => {
  let t: TestStack;
  let browser: Browser;
  let kling: FakeKling;
  const problems: string[] = [];

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    kling = await startFakeKling();
    [t, browser] = await Promise.all([
      startTestStack({ ADMIN_TOKEN, CHANNEL_KEY_SECRET: "0123456789abcdef0123456789abcdef", CHANNEL_PROBE_BASE_MS: "600000" }),
      chromium.launch(LAUNCH),
    ]);
    await t.stack.channels!.setStatus("chn_default", false);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await kling?.close();
    expect(problems).toEqual([]);
  });

  it("adds the channel with its two keys, runs a task through it, and shows the provider's usage", async () => {
    const context = await browser.newContext({ viewport: DESKTOP, locale: "en-US" });
    context.setDefaultTimeout(15_000);
    const page = await context.newPage();
    page.on("pageerror", (error) => problems.push(error.message));
    page.on("dialog", (dialog) => dialog.accept());
    await page.goto(`${t.url}/admin`);
    await page.locator("#signin[data-ready]").waitFor();
    await page.locator("#token-box summary").click();
    await page.locator("#token").fill(ADMIN_TOKEN);
    await page.locator("#signin-button").click();
    await page.locator("#console").waitFor({ state: "visible" });
    await page.locator('[data-view="channels"]').click();

    // Every type of the registry is offered, and the type decides the credential fields.
    const offered = await page.locator("#ch-type option").evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
    expect(offered).toEqual(CHANNEL_TYPE_IDS.map(channelTypeEnum));
    await page.locator("#ch-type").selectOption("GEMINI_VEO");
    expect(await page.locator("#ch-api-key").isVisible()).toBe(true);
    expect(await page.locator("#ch-access-key").isVisible()).toBe(false);
    await page.locator("#ch-type").selectOption("SWITCHYARD");
    expect(await page.locator("#ch-api-key").isVisible()).toBe(true);
    await page.locator("#ch-type").selectOption("KLING");
    expect(await page.locator("#ch-api-key").isVisible()).toBe(false);
    await page.locator("#ch-name").fill("kling-console");
    await page.locator("#ch-base-url").fill(kling.url);
    await page.locator("#ch-models").fill("52");
    await page.locator("#ch-access-key").fill(kling.credentials.accessKey!);
    await page.locator("#ch-secret-key").fill(kling.credentials.secretKey!);
    await page.locator("#channel-create button[type=submit]").click();
    // The confirmation dialog states what will change (router/pages/admin-forms.js).
    await page.locator("#op-confirm").click();
    const row = page.locator("#channels-table tbody tr", { hasText: "kling-console" });
    await row.waitFor();
    expect(await row.textContent()).toContain(`kling · ${kling.url}`);
    const html = await page.content();
    for (const secret of Object.values(kling.credentials)) expect(html).not.toContain(secret);

    const key = await t.createKey("10");
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: { prompt: "a lighthouse at dusk", model_id: 52, seconds: 5 } });
    expect(submitted.status).toBe(200);
    expect(kling.requests.filter((r) => r.method === "POST")).toHaveLength(1);
    kling.settle(kling.lastTaskId(), "succeeded");
    const done = await t.waitForTask(key.key, submitted.body.data.task_id, (task) => task.status === 1);
    const media = await fetch(done.result);
    expect(Buffer.from(await media.arrayBuffer()).equals(kling.content)).toBe(true);

    // The customer's task page shows our price and the provider's report side by side.
    const client = await context.newPage();
    await client.goto(`${t.url}/client`);
    await client.getByLabel("API key").fill(key.key);
    await client.getByRole("button", { name: "Show balance" }).click();
    const taskRow = client.locator(`tr[data-task-id="${submitted.body.data.task_id}"]`);
    await expect.poll(() => taskRow.locator(".provider-usage").textContent(), { timeout: 15_000 }).toBe("Provider reported: 5.042 s");
    expect(await taskRow.textContent()).toContain("¥5.00");
    await client.close();

    await page.locator('[data-view="channels"]').click();
    await expect.poll(() => row.locator(".channel-cost").textContent()).toBe("provider reported: 5.042 s (1)");
    await page.screenshot({ path: path.join(ARTIFACTS, "console-channel-kling.png"), fullPage: true });
    await context.close();
  }, 120_000);
});
