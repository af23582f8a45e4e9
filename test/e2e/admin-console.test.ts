/**
 * The operator console (/admin; issue 16 "Operator console", issue 23 §2) in Debian's chromium
 * driven by playwright-core, signed in with the break-glass ADMIN_TOKEN: create a key (secret
 * shown once), top it up through the form (validated, with what it costs) and see the balance
 * move with the ledger entry, disable it and see its REST call refused with 403. The roles are
 * test/e2e/admin-roles.test.ts.
 * Screenshots at desktop and phone width in both languages go to test/artifacts/.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { ARTIFACTS, DESKTOP, LAUNCH, PHONE } from "../support/browser.ts";

const ADMIN_TOKEN = "e2e-console-token";
let t: TestStack;
let browser: Browser;
const problems: string[] = [];

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  [t, browser] = await Promise.all([startTestStack({ ADMIN_TOKEN }), chromium.launch(LAUNCH)]);
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  expect(problems).toEqual([]);
});

async function signIn(viewport = DESKTOP, locale = "en-US"): Promise<Page> {
  const context = await browser.newContext({ viewport, locale });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused/.test(m.text())) problems.push(m.text());
  });
  // The console has no window.prompt/confirm/alert left: a native dialog is a defect.
  page.on("dialog", (dialog) => {
    problems.push(`native ${dialog.type()} dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  await page.goto(`${t.url}/admin`);
  await page.locator("#signin[data-ready]").waitFor();
  await page.locator("#token-box summary").click();
  await page.locator("#token").fill(ADMIN_TOKEN);
  await page.locator("#signin-button").click();
  await page.locator("#console").waitFor({ state: "visible" });
  return page;
}

describe("/admin", () => {
  it("refuses a wrong token and keeps the token out of every storage", async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    await page.goto(`${t.url}/admin`);
    await page.locator("#signin[data-ready]").waitFor();
    await page.locator("#token-box summary").click();
    await page.locator("#token").fill("wrong");
    await page.locator("#signin-button").click();
    await expect.poll(() => page.locator("#signin-error").isVisible()).toBe(true);
    expect(await page.locator("#console").isVisible()).toBe(false);
    const ok = await signIn();
    expect(await ok.evaluate(() => [localStorage.getItem("switchyard.key"), sessionStorage.length, document.cookie])).toEqual([null, 0, ""]);
    await context.close();
  });

  it("creates a key, tops it up, shows the balance move and the ledger entry, and disables it (its REST call then gets 403)", async () => {
    const page = await signIn();
    await page.locator('[data-view="keys"]').click();
    await page.locator("#new-name").fill("console-e2e");
    await page.locator("#new-balance").fill("5");
    await page.locator("#key-create button[type=submit]").click();
    await expect.poll(() => page.locator("#op-summary").textContent()).toContain("Money in: ¥5.00");
    await page.locator("#op-confirm").click();
    const key = (await page.locator("#new-key").textContent())!.trim();
    expect(key).toMatch(/^sy_/);
    expect((await t.rest("GET", "/api/v1/usage", { key })).body.data.balance).toBe(5);

    const row = page.locator("#keys-table tbody tr", { hasText: "console-e2e" });
    await expect.poll(() => row.locator(".key-balance").textContent()).toBe("¥5.00");
    await row.getByRole("button", { name: "Top up" }).click();
    // The form refuses what is no amount before anything is sent, and says what a good one costs.
    await page.locator("#op-amount").fill("2,5");
    await page.locator("#op-confirm").click();
    expect(await page.locator("#op-amount-error").isVisible()).toBe(true);
    await page.locator("#op-amount").fill("2.5");
    expect(await page.locator("#op-summary").textContent()).toContain("balance ¥5.00 → ¥7.50");
    await page.locator("#op-confirm").click();
    await expect.poll(() => row.locator(".key-balance").textContent()).toBe("¥7.50");
    expect(await page.locator("#ledger-entry").textContent()).toContain("top-up ¥2.50 → balance after ¥7.50");
    expect((await t.rest("GET", "/api/v1/usage", { key })).body.data.balance).toBe(7.5);

    await row.getByRole("button", { name: "Disable" }).click();
    expect(await page.locator("#op-summary").textContent()).toContain("stops working now");
    await page.locator("#op-confirm").click();
    await expect.poll(() => row.locator(".key-status").textContent()).toBe("Disabled");
    expect((await t.rest("GET", "/api/v1/usage", { key })).status).toBe(403);

    await page.locator('[data-view="overview"]').click();
    await expect.poll(() => page.locator("#ov-at").textContent()).toMatch(/Updated/);
  });

  it("refuses a rate limit that is not digits and keeps the key's limit (Number() once read 1e2 as 100 and abc as no limit)", async () => {
    const { id } = await t.createKey("1", { name: "rate-e2e", rateLimit: 5, scopes: ["generation"] });
    const page = await signIn();
    await page.locator('[data-view="keys"]').click();
    const row = page.locator("#keys-table tbody tr", { hasText: "rate-e2e" });
    await row.getByRole("button", { name: "Scopes, IPs, rate" }).click();
    for (const rate of ["abc", "1e2", "0x10"]) {
      await page.locator("#op-rate").fill(rate);
      await page.locator("#op-confirm").click();
      await expect.poll(() => page.locator("#op-rate-error").isVisible()).toBe(true);
      const key = await t.graphql("query($id: ID!) { adminApiKey(id: $id) { rateLimit } }", { id }, ADMIN_TOKEN);
      expect({ rate, rateLimit: key.body.data.adminApiKey.rateLimit }).toEqual({ rate, rateLimit: 5 });
    }
    await page.locator("#op-rate").fill(" 7 ");
    await page.locator("#op-confirm").click();
    await expect
      .poll(async () => (await t.graphql("query($id: ID!) { adminApiKey(id: $id) { rateLimit } }", { id }, ADMIN_TOKEN)).body.data.adminApiKey.rateLimit)
      .toBe(7);
    await page.context().close();
  });

  it("shows the wallets, orders and webhook deliveries tables (the type check found that their module called an undefined $)", async () => {
    const page = await signIn();
    for (const [view, columns] of [
      ["wallets", ["Account", "Customer", "Available", "Frozen", "Credit line", "Actions"]],
      ["orders", ["Order", "Account", "Status", "Amount", "Payments and refunds", "Created"]],
      ["deliveries", ["Delivery", "Event", "Status", "Attempts", "Actions"]],
    ] as const) {
      await page.locator(`[data-view="${view}"]`).click();
      await page.locator(`#${view}-table thead th`).first().waitFor();
      expect(await page.locator(`#${view}-table thead th`).allTextContents()).toEqual(columns);
    }
    await page.context().close();
  });

  it("saves screenshots at desktop and phone width in both languages", async () => {
    for (const [name, viewport] of [
      ["desktop", DESKTOP],
      ["phone", PHONE],
    ] as const) {
      for (const lang of ["en", "zh"] as const) {
        const page = await signIn(viewport, lang === "zh" ? "zh-CN" : "en-US");
        await page.locator(`[data-lang="${lang}"]`).click();
        await page.locator('[data-view="keys"]').click();
        await page.locator("#keys-table tbody tr").first().waitFor();
        await page.screenshot({ path: path.join(ARTIFACTS, `admin-keys-${name}-${lang}.png`), fullPage: true });
        await page.locator('[data-view="overview"]').click();
        await page.locator("#ov-chart canvas").waitFor();
        await page.screenshot({ path: path.join(ARTIFACTS, `admin-overview-${name}-${lang}.png`), fullPage: true });
        expect(await page.locator("h1").textContent()).toBe(lang === "zh" ? "运营控制台" : "Operator console");
        await page.context().close();
      }
    }
  });
});
