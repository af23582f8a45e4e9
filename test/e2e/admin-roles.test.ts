/**
 * The console for each operator role (issue 23 §1-§2; README "Operator roles") in Debian's
 * chromium driven by playwright-core: every role signs in with email and password (an HttpOnly
 * session cookie the page cannot read), sees exactly the views and write buttons its role allows,
 * finance tops up a key through the form and sees the audit row of it, Chinese mode translates
 * statuses and ledger kinds, a reload keeps the session and sign-out ends it on the server.
 * Screenshots (desktop and phone) go to test/artifacts/.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { ARTIFACTS, DESKTOP, LAUNCH, PHONE } from "../support/browser.ts";
import { CLI_ACTOR } from "../../src/audit/log.ts";
import { createOperator } from "../../src/auth/operators/store.ts";
import { OPERATOR_ROLES, type OperatorRole } from "../../src/auth/operators/roles.ts";

const PASSWORD = "console roles password";
let t: TestStack;
let browser: Browser;
const problems: string[] = [];

/** What each role sees: its views (tab order) and the buttons of a key's row. */
const EXPECTED: Record<OperatorRole, { views: string[]; keyButtons: string[]; createKey: boolean }> = {
  owner: {
    views: ["overview", "keys", "wallets", "orders", "deliveries", "channels", "audit", "operators"],
    keyButtons: ["Top up", "Disable", "Scopes, IPs, rate"],
    createKey: true,
  },
  finance: { views: ["overview", "keys", "wallets", "orders", "audit"], keyButtons: ["Top up"], createKey: false },
  support: { views: ["overview", "keys", "wallets", "orders", "deliveries", "channels", "audit"], keyButtons: ["Disable"], createKey: false },
  viewer: { views: ["overview", "keys", "wallets", "orders", "deliveries", "channels", "audit"], keyButtons: [], createKey: false },
};

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  [t, browser] = await Promise.all([startTestStack({ ADMIN_FAILURES_PER_MINUTE: "1000" }), chromium.launch(LAUNCH)]);
  for (const role of OPERATOR_ROLES) await createOperator(t.stack.db!, CLI_ACTOR, { email: `${role}@example.com`, role, password: PASSWORD });
  await t.createKey("5", { name: "roles-e2e" });
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  expect(problems).toEqual([]);
});

async function signIn(role: OperatorRole, viewport = DESKTOP): Promise<Page> {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused/.test(m.text())) problems.push(m.text());
  });
  page.on("dialog", (dialog) => {
    problems.push(`native ${dialog.type()} dialog`);
    void dialog.dismiss();
  });
  await page.goto(`${t.url}/admin`);
  await page.locator("#signin[data-ready]").waitFor();
  await page.locator("#email").fill(role.includes("@") ? role : `${role}@example.com`);
  await page.locator("#password").fill(PASSWORD);
  await page.locator("#signin-button").click();
  await page.locator("#console").waitFor({ state: "visible" });
  return page;
}

const visibleViews = (page: Page) =>
  page.locator("[data-view]").evaluateAll((buttons) => buttons.filter((b) => !(b as HTMLElement).hidden).map((b) => (b as HTMLElement).dataset.view));

describe("/admin by role", () => {
  for (const role of OPERATOR_ROLES) {
    it(`shows ${role} exactly its views and write buttons`, async () => {
      const page = await signIn(role);
      expect(await page.locator("#whoami").textContent()).toBe(`Signed in as ${role}@example.com (${role})`);
      expect(await visibleViews(page)).toEqual(EXPECTED[role].views);
      // The session cookie is HttpOnly: the page cannot read it, and nothing is stored.
      expect(await page.evaluate(() => [document.cookie, localStorage.length, sessionStorage.length])).toEqual(["", 0, 0]);
      await page.locator('[data-view="keys"]').click();
      const row = page.locator("#keys-table tbody tr", { hasText: "roles-e2e" });
      await row.waitFor();
      expect(await row.locator("button").allTextContents()).toEqual(EXPECTED[role].keyButtons);
      expect(await page.locator("#key-create").isVisible()).toBe(EXPECTED[role].createKey);
      await page.screenshot({ path: path.join(ARTIFACTS, `admin-role-${role}-keys.png`), fullPage: true });
      await page.context().close();
    });
  }

  it("lets finance top up a key through the form and shows the audit row of it", async () => {
    const page = await signIn("finance");
    await page.locator('[data-view="keys"]').click();
    const row = page.locator("#keys-table tbody tr", { hasText: "roles-e2e" });
    await row.getByRole("button", { name: "Top up" }).click();
    await page.locator("#op-amount").fill("1.25");
    expect(await page.locator("#op-summary").textContent()).toBe(
      `Adds ¥1.25 to ${await row.getAttribute("data-key")}: balance ¥5.00 → ¥6.25.\nMoney in: ¥1.25. Recorded in the ledger and the audit log.`,
    );
    await page.locator("#op-confirm").click();
    await expect.poll(() => row.locator(".key-balance").textContent()).toBe("¥6.25");
    await page.locator('[data-view="audit"]').click();
    const audit = page.locator("#audit-table tbody tr", { hasText: "adminTopUpAccount" });
    await audit.first().waitFor();
    expect(await audit.first().textContent()).toContain("finance@example.com");
    await audit.first().locator("summary").click();
    expect(await audit.first().locator(".audit-json").textContent()).toContain('"amount":1250');
    await page.screenshot({ path: path.join(ARTIFACTS, "admin-audit-desktop-en.png"), fullPage: true });
    // Filtered by another operator, the row is not there.
    await page.locator("#audit-actor").fill("owner@example.com");
    await page.locator("#audit-filter button[type=submit]").click();
    await expect.poll(() => page.locator("#audit-table tbody tr", { hasText: "adminTopUpAccount" }).count()).toBe(0);
    await page.context().close();
  });

  it("lets the owner create an operator through the form, who can then sign in, and disable it again", async () => {
    const page = await signIn("owner");
    await page.locator('[data-view="operators"]').click();
    await page.locator("#operator-create").click();
    await page.locator("#op-email").fill("new@example.com");
    await page.locator("#op-role").fill("support");
    await page.locator("#op-password").fill("short");
    await page.locator("#op-confirm").click();
    expect(await page.locator("#op-password-error").isVisible()).toBe(true);
    await page.locator("#op-password").fill(PASSWORD);
    expect(await page.locator("#op-summary").textContent()).toBe("Creates new@example.com as support, who can sign in with this password. No money moves.");
    await page.locator("#op-confirm").click();
    const row = page.locator("#operators-table tbody tr", { hasText: "new@example.com" });
    await expect.poll(() => row.count()).toBe(1);
    const newcomer = await signIn("new@example.com" as OperatorRole);
    expect(await visibleViews(newcomer)).toEqual(EXPECTED.support.views);
    await newcomer.context().close();
    await row.getByRole("button", { name: "Disable" }).click();
    await page.locator("#op-confirm").click();
    await expect.poll(() => row.textContent()).toContain("Disabled");
    await page.context().close();
  });

  it("translates statuses and ledger kinds in Chinese, shows channel routing, and lays tables out as cards on a phone", async () => {
    const page = await signIn("support", PHONE);
    await page.locator('[data-lang="zh"]').click();
    await page.locator('[data-view="channels"]').click();
    const channel = page.locator("#channels-table tbody tr").first();
    await channel.waitFor();
    expect(await channel.locator(".channel-status").textContent()).toBe("已启用");
    expect(await channel.textContent()).toContain("优先级 0 · 权重 1");
    expect(await channel.locator("td").nth(4).getAttribute("data-label")).toBe("连续失败");
    await page.screenshot({ path: path.join(ARTIFACTS, "admin-channels-phone-zh.png"), fullPage: true });
    await page.locator('[data-view="keys"]').click();
    await page.locator("#keys-table tbody tr").first().waitFor();
    expect(await page.locator("#keys-table tbody tr .key-status").first().textContent()).toBe("启用");
    // One card per row: the cell is as wide as the table, its label beside it.
    const [cellWidth, tableWidth] = await page
      .locator("#keys-table")
      .evaluate((table) => [(table.querySelector("tbody td") as HTMLElement).getBoundingClientRect().width, table.getBoundingClientRect().width]);
    expect(cellWidth).toBeGreaterThan(tableWidth * 0.9);
    await page.locator('[data-view="audit"]').click();
    await page.locator("#audit-table tbody tr").first().waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, "admin-audit-phone-zh.png"), fullPage: true });
    await page.context().close();
  });

  it("keeps the session across a reload and ends it on the server at sign-out", async () => {
    const page = await signIn("viewer");
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === "sy_admin_session")).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    await page.reload();
    await page.locator("#console").waitFor({ state: "visible" });
    await page.locator("#signout").click();
    await page.locator("#signin").waitFor({ state: "visible" });
    // The old cookie no longer works, even sent by hand.
    const session = cookies.find((c) => c.name === "sy_admin_session")!.value;
    const again = await t.graphql("{ adminMe { actor } }", {}, undefined, { cookie: `sy_admin_session=${session}` });
    expect(again.body.errors[0].extensions.code).toBe("unauthorized");
    await page.context().close();
  });
});
