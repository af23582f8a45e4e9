/**
 * The pages on a router with `PERSISTED_ONLY=true` (issue 21 §3), in Debian's chromium driven by
 * playwright-core: /client shows a key's balance and follows a REST submission live (graphql-ws),
 * /test builds its form from the catalog, prices and submits a generation and follows it to the
 * end, and /admin signs in and lists the keys — every operation they send is a trusted document
 * of schema/trusted-documents.json, and the router refuses nothing they send.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { DESKTOP, LAUNCH } from "../support/browser.ts";
import { CLI_ACTOR } from "../../src/audit/log.ts";
import { createOperator } from "../../src/auth/operators/store.ts";

const ADMIN_TOKEN = "persisted-only-pages-admin";

let t: TestStack;
let browser: Browser;
/** Errors thrown in a page, and every GraphQL answer with an error code about persisted documents. */
const problems: string[] = [];

beforeAll(async () => {
  [t, browser] = await Promise.all([
    startTestStack({ PERSISTED_ONLY: "true", ADMIN_TOKEN, SIMULATOR_STEP_MS: "100", TASK_POLL_INTERVAL_MS: "50" }),
    chromium.launch(LAUNCH),
  ]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

/** Opens a page in a fresh context, watching its GraphQL answers (HTTP and WebSocket) for refusals. */
async function open(path: string, ready: string): Promise<Page> {
  const context = await browser.newContext({ viewport: DESKTOP, locale: "en-US" });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  page.on("pageerror", (error) => problems.push(`${path}: ${error.message}`));
  page.on("response", async (response) => {
    if (!response.url().endsWith("/graphql")) return;
    const text = await response.text().catch(() => "");
    if (/persisted_query|PERSISTED_QUERY/.test(text)) problems.push(`${path}: ${text}`);
  });
  page.on("websocket", (socket) =>
    socket.on("framereceived", ({ payload }) => {
      if (/persisted_query|PERSISTED_QUERY/.test(String(payload))) problems.push(`${path} (graphql-ws): ${payload}`);
    }),
  );
  await page.goto(`${t.url}${path}`);
  await page.locator(ready).waitFor();
  return page;
}

const text = (locator: Locator, timeout = 15_000) =>
  expect.poll(async () => ((await locator.count()) ? ((await locator.first().textContent()) ?? "").trim() : null), { timeout, interval: 25 });

describe("pages with PERSISTED_ONLY=true", () => {
  it("/client shows the balance and follows a REST submission live", async () => {
    const { key } = await t.createKey("10");
    const page = await open("/client", "#lookup[data-ready]");
    await page.getByLabel("API key").fill(key);
    await page.getByRole("button", { name: "Show balance" }).click();
    await text(page.locator("#balance")).toBe("¥10.00");
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a heron", model_id: 52, seconds: 5 } });
    expect(submitted.status).toBe(200);
    await text(page.locator("#balance")).toBe("¥5.00");
    const row = page.locator(`tr[data-task-id="${submitted.body.data.task_id}"]`);
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 15_000 }).toBe("SUCCEEDED");
    expect(problems).toEqual([]);
  });

  it("/test builds the form, prices, submits and follows a generation to its result", async () => {
    const { key } = await t.createKey("10");
    const page = await open("/test", "#form[data-ready]");
    await page.getByLabel("Model", { exact: true }).selectOption("45");
    await text(page.locator("#price")).toMatch(/^¥\d/);
    await page.getByLabel("API key").fill(key);
    await page.getByLabel("Prompt").fill("a lighthouse at dusk");
    await page.getByRole("button", { name: "Generate" }).click();
    await page.waitForFunction(() => document.querySelector('.task [data-role="status"]')?.textContent === "Succeeded", undefined, { timeout: 15_000 });
    await text(page.locator("#balance-line")).toMatch(/^Balance: ¥/);
    expect(problems).toEqual([]);
  });

  it("/admin signs in and lists the keys", async () => {
    await t.createKey("1", { name: "persisted-admin-row" });
    const page = await open("/admin", "#signin[data-ready]");
    await page.locator("#token-box summary").click();
    await page.locator("#token").fill(ADMIN_TOKEN);
    await page.locator("#signin-button").click();
    await page.locator("#console").waitFor({ state: "visible" });
    await page.locator('[data-view="keys"]').click();
    await text(page.locator("#keys-table tbody tr", { hasText: "persisted-admin-row" })).toContain("persisted-admin-row");
    expect(problems).toEqual([]);
  });

  it("/admin signs an operator in with a password (the router's own sign-in operations are trusted documents) and shows the audit log", async () => {
    await createOperator(t.stack.db!, CLI_ACTOR, { email: "persisted@example.com", role: "viewer", password: "persisted-only password" });
    const page = await open("/admin", "#signin[data-ready]");
    await page.locator("#email").fill("persisted@example.com");
    await page.locator("#password").fill("persisted-only password");
    await page.locator("#signin-button").click();
    await page.locator("#console").waitFor({ state: "visible" });
    await page.locator('[data-view="audit"]').click();
    await text(page.locator("#audit-table tbody tr").first()).toContain("operators.create");
    await page.locator('[data-view="channels"]').click();
    await page.locator("#channels-table tbody tr").first().waitFor();
    expect(problems).toEqual([]);
  });
});
