/**
 * The two web pages (issue 5; docs/api/generation.md §1 and §4 "Pages") in a real browser: Debian's
 * chromium driven by playwright-core (never a downloaded browser), against a real stack whose
 * simulator steps are slow enough (300 ms) for the live status to be seen changing.
 *
 * Saves screenshots at desktop (1280×800) and phone (390×844) width under test/artifacts/ and
 * prints the pages' weight on first load (bytes transferred, from the browser's resource timing).
 */
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type BrowserContext, type Locator, type Page, type WebSocket } from "playwright-core";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { ARTIFACTS, DESKTOP, LAUNCH, PHONE } from "../support/browser.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";

let t: TestStack;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** Errors thrown in any page or refused by its CSP: there must be none. */
const pageProblems: string[] = [];

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  [t, browser] = await Promise.all([startTestStack({ SIMULATOR_STEP_MS: "300", TASK_POLL_INTERVAL_MS: "50" }), chromium.launch(LAUNCH)]);
});

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => {});
  await browser?.close();
  await t?.close();
  expect(pageProblems).toEqual([]);
});

/** Opens a page of `base` in a fresh context (empty cache, own sessionStorage) and waits until its script is ready. */
async function open(base: string, path: "/test" | "/client", options: { viewport?: { width: number; height: number }; locale?: string } = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: options.viewport ?? DESKTOP, locale: options.locale ?? "en-US" });
  contexts.push(context);
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  page.on("pageerror", (error) => pageProblems.push(`${path}: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy|Refused/.test(message.text())) pageProblems.push(`${path}: ${message.text()}`);
  });
  await page.goto(`${base}${path}`);
  await page.locator(path === "/test" ? "#form[data-ready]" : "#lookup[data-ready]").waitFor();
  return page;
}

/** Bytes transferred on the page's first load (document, assets and its API calls so far). */
async function weight(page: Page) {
  return page.evaluate(() => {
    const navigation = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    const resources = performance.getEntriesByType("resource") as PerformanceResourceTiming[];
    const isApi = (entry: PerformanceResourceTiming) => new URL(entry.name).pathname === "/graphql";
    const sum = (entries: PerformanceResourceTiming[], field: "transferSize" | "decodedBodySize") => entries.reduce((total, entry) => total + entry[field], 0);
    const statics = resources.filter((entry) => !isApi(entry));
    return {
      requests: 1 + statics.length,
      transferred: navigation.transferSize + sum(statics, "transferSize"),
      decoded: navigation.decodedBodySize + sum(statics, "decodedBodySize"),
      apiTransferred: sum(resources.filter(isApi), "transferSize"),
    };
  });
}

async function optionValues(page: Page, label: string) {
  return page
    .getByLabel(label, { exact: true })
    .locator("option")
    .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
}

/** Waits (polling, no fixed sleep) until a value read from the page matches. */
const until = <T>(read: () => Promise<T>, timeout = 10_000) => expect.poll(read, { timeout, interval: 25 });
const text = (locator: Locator) => until(async () => ((await locator.count()) ? ((await locator.first().textContent()) ?? "").trim() : null));
const visible = (locator: Locator) => until(() => locator.first().isVisible());
const attribute = (locator: Locator, name: string, timeout?: number) => until(() => locator.first().getAttribute(name), timeout);
const value = (locator: Locator) => until(() => locator.inputValue());
const focused = (locator: Locator) => until(() => locator.evaluate((el) => el === document.activeElement));

/** Waits, checking on every animation frame, until the newest task card shows a status label. */
async function waitForStatus(page: Page, label: string) {
  await page.waitForFunction((label) => document.querySelector('.task [data-role="status"]')?.textContent === label, label, {
    polling: "raf",
    timeout: 15_000,
  });
}

/**
 * Texts a person sees (or hears) on the page that are not Chinese: visible text, labels, titles,
 * options and the document title, less names that stay as they are (the brand, "API", "URL",
 * model names, task ids, resolutions) and anything inside an element marked `lang="en"` (the
 * English switch, the service's original wording under a translated message).
 */
async function notChinese(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const KEPT = /Switchyard|API|HTTPS|URL|UTC|AI|video-\d+|image-\d+|task_[a-z0-9]+|\b\d+[Pk]\b|#fail/g;
    const found: string[] = [];
    const check = (text: string | null, where: string) => {
      if (text && /[A-Za-z]{2,}/.test(text.replace(KEPT, ""))) found.push(`${where}: ${text.trim()}`);
    };
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement!;
      if (el.closest('[lang="en"]:not(html), noscript') || !(el.checkVisibility() || el.closest("option"))) continue;
      check(node.textContent, el.tagName.toLowerCase());
    }
    for (const el of document.querySelectorAll("[aria-label], [title], [alt], [placeholder]")) {
      if (el.closest('[lang="en"]:not(html)')) continue;
      for (const attr of ["aria-label", "title", "alt", "placeholder"]) check(el.getAttribute(attr), `${el.tagName.toLowerCase()}[${attr}]`);
    }
    check(document.title, "title");
    return found;
  });
}

/** Submits through REST, waits until the task settles, and moves it and its ledger entries to noon UTC `daysAgo` days back. */
async function usageOn(key: string, daysAgo: number, path: string, body: Record<string, unknown>) {
  const submitted = await t.rest("POST", path, { key, body });
  expect(submitted.status).toBe(200);
  const taskId = submitted.body.data.task_id as string;
  await t.waitForTask(key, taskId);
  const at = `${new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)}T12:00:00.000Z`;
  await t.stack.db!("tasks").where("id", taskId).update({ created_at: at });
  await t.stack.db!("ledger_entries").where("task_id", taskId).update({ created_at: at });
}

/** A UTC day `daysAgo` days back as the chart's legend writes it. */
function longDate(daysAgo: number, locale: string) {
  const day = `${new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)}T00:00:00Z`;
  return new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeZone: "UTC" }).format(new Date(day));
}

/** Moves the pointer over day `slot` (0 = oldest of 30) of a chart's plot area. */
async function pointAtDay(page: Page, chart: string, slot: number) {
  const box = (await page.locator(`${chart} .u-over`).boundingBox())!;
  await page.mouse.move(box.x + ((slot + 0.5) * box.width) / 30, box.y + box.height / 2);
}

/** A WebSocket of a page with what it carried: the tasks subscribed on it and their statuses received. */
interface Socket {
  socket: WebSocket;
  /** Task ids of the `taskStatusChanged` subscriptions sent on it, in order. */
  subscribed(): string[];
  /** Statuses of a task received on it, in order. */
  statuses(taskId: string): string[];
}

function watchSocket(socket: WebSocket): Socket {
  const sent: any[] = [];
  const received: any[] = [];
  const parse = (payload: string | Buffer) => {
    try {
      return JSON.parse(String(payload));
    } catch {
      return null;
    }
  };
  socket.on("framesent", (frame) => sent.push(parse(frame.payload)));
  socket.on("framereceived", (frame) => received.push(parse(frame.payload)));
  return {
    socket,
    subscribed: () => sent.filter((m) => m?.type === "subscribe" && m.payload?.variables?.id).map((m) => m.payload.variables.id),
    statuses: (taskId) =>
      received
        .map((m) => m?.type === "next" && m.payload?.data?.taskStatusChanged)
        .filter((task) => task && task.id === taskId)
        .map((task) => task.status),
  };
}

async function shot(page: Page, name: string) {
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
}

describe("serving the pages", () => {
  it("serves /test and /client as HTML with a strict CSP, no-cache plus ETag, Accept-Language, and versioned immutable assets", async () => {
    const response = await fetch(`${t.url}/test`, { headers: { "accept-language": "en-US,en;q=0.9" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(response.headers.get("vary")).toContain("Accept-Language");
    const host = new URL(t.url).host;
    const csp = response.headers.get("content-security-policy")!;
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      `connect-src 'self' ws://${host} wss://${host}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(csp).not.toContain("unsafe-inline");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await response.text();
    expect(html).toContain('<html lang="en">');
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/); // nothing from another origin, no CDN

    const again = await fetch(`${t.url}/test`, { headers: { "accept-language": "en", "if-none-match": response.headers.get("etag")! } });
    expect(again.status).toBe(304);
    const zh = await (await fetch(`${t.url}/client`, { headers: { "accept-language": "zh-CN,zh;q=0.9" } })).text();
    expect(zh).toContain('<html lang="zh-CN">');

    const css = html.match(/href="(\/assets\/[0-9a-f]+\/app\.css)"/)![1]!;
    const js = html.match(/src="(\/assets\/[0-9a-f]+\/test\.js)"/)![1]!;
    const cssResponse = await fetch(`${t.url}${css}`);
    expect(cssResponse.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(cssResponse.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const jsResponse = await fetch(`${t.url}${js}`, { headers: { "accept-encoding": "gzip" } });
    expect(jsResponse.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(jsResponse.headers.get("content-encoding")).toBe("gzip");
    // The page script imports its task list, which follows tasks over taskStatusChanged.
    expect(await jsResponse.text()).toContain("./test-tasks.js");
    const tasksJs = html.match(/href="(\/assets\/[0-9a-f]+\/test-tasks\.js)"/)![1]!;
    expect(await (await fetch(`${t.url}${tasksJs}`)).text()).toMatch(/subscription[^`]*taskStatusChanged/);
    const stale = await fetch(`${t.url}/assets/0000000000/app.css`);
    expect([stale.status, stale.headers.get("cache-control")]).toEqual([200, "no-cache"]);
    for (const path of ["/assets/0000000000/nope.js", "/assets/0000000000/..%2Fpages.ts", "/assets/0000000000/client.html"]) {
      expect((await fetch(`${t.url}${path}`)).status).toBe(404);
    }
  });

  it("serves graphql-ws's browser module (with its chunk) and uPlot from node_modules, byte for byte, as versioned assets", async () => {
    const html = await (await fetch(`${t.url}/client`)).text();
    const base = html.match(/src="(\/assets\/[0-9a-f]+)\/client\.js"/)![1]!;
    const library = (file: string) => fs.readFileSync(new URL(`../../node_modules/${file}`, import.meta.url));
    const graphqlWs = library("graphql-ws/dist/client.js");
    const chunk = /from '\.\/(common-[\w-]+\.js)'/.exec(graphqlWs.toString())![1]!;
    for (const [name, body, type] of [
      ["graphql-ws.js", graphqlWs, "text/javascript; charset=utf-8"],
      [chunk, library(`graphql-ws/dist/${chunk}`), "text/javascript; charset=utf-8"],
      ["uPlot.esm.js", library("uplot/dist/uPlot.esm.js"), "text/javascript; charset=utf-8"],
      ["uPlot.min.css", library("uplot/dist/uPlot.min.css"), "text/css; charset=utf-8"],
    ] as const) {
      const response = await fetch(`${t.url}${base}/${name}`, { headers: { "accept-encoding": "identity" } });
      expect([name, response.status, response.headers.get("content-type"), response.headers.get("cache-control")]).toEqual([
        name,
        200,
        type,
        "public, max-age=31536000, immutable",
      ]);
      expect(Buffer.from(await response.arrayBuffer()).equals(body)).toBe(true);
    }
    expect(html).toContain(`${base}/uPlot.min.css`);
  });
});

describe("/test, the test bench", () => {
  it("builds the form from the catalog, previews 1.125 for model 69 at 6 s 480P, and shows the live status and the marked result", async () => {
    const { key } = await t.createKey("10");
    const page = await open(t.url, "/test");
    const loaded = await weight(page);
    console.log(
      `/test first load: ${loaded.transferred} bytes transferred in ${loaded.requests} requests (${loaded.decoded} bytes decoded), plus ${loaded.apiTransferred} bytes of GraphQL`,
    );

    await text(page.getByRole("note")).toContain("Results are AI-generated. Keep the AI-generated mark when you show them publicly.");
    // Every control has a label.
    const unlabeled = await page
      .locator("input, select, textarea")
      .evaluateAll((controls) => controls.filter((c) => !(c as HTMLInputElement).labels?.length).map((c) => c.id));
    expect(unlabeled).toEqual([]);

    const catalog = (await t.graphql(`{ models { id sizes resolutions durations { resolution seconds } maxCount } }`)).body.data.models as any[];
    const model = (id: number) => catalog.find((m) => m.id === id)!;

    // Model 67: the allowed durations follow the resolution.
    await page.getByLabel("Model").selectOption("67");
    expect(await optionValues(page, "Resolution")).toEqual(model(67).resolutions);
    await page.getByLabel("Resolution").selectOption("480P");
    const at480 = await optionValues(page, "Duration (seconds)");
    expect(at480).toEqual(
      model(67)
        .durations.find((d: any) => d.resolution === "480P")
        .seconds.map(String),
    );
    expect(at480).toContain("20");
    expect(at480).not.toContain("16");
    await page.getByLabel("Resolution").selectOption("720P");
    const at720 = await optionValues(page, "Duration (seconds)");
    expect(at720).toEqual(
      model(67)
        .durations.find((d: any) => d.resolution === "720P")
        .seconds.map(String),
    );
    expect(at720).toContain("16");

    // Model 69: its own sizes, resolutions and counts; the preview is the server's quote.
    await page.getByLabel("Model").selectOption("69");
    expect(await optionValues(page, "Resolution")).toEqual(["480P", "720P", "1080P"]);
    expect(await optionValues(page, "Aspect ratio")).toEqual(["", ...model(69).sizes]);
    expect(await optionValues(page, "Count")).toEqual(["1", "2", "3", "4"]);
    await page.getByLabel("Resolution").selectOption("720P");
    await page.getByLabel("Duration (seconds)").selectOption("6");
    await text(page.locator("#price")).toBe("¥2.25");
    await page.getByLabel("Resolution").selectOption("480P");
    await text(page.locator("#price")).toBe("¥1.125");

    await page.getByLabel("API key").fill(key);
    await page.getByLabel("Prompt").fill("a red fox running through snow");
    await page.getByRole("button", { name: "Generate" }).click();

    const card = page.locator(".task").first();
    await card.waitFor();
    // The status changes while we watch: the card shows "Processing", then "Succeeded" (checked on
    // every frame, since one simulator step lasts 300 ms).
    await waitForStatus(page, "Processing");
    await waitForStatus(page, "Succeeded");
    const history = await card.locator(".timeline li").evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.status));
    expect(history.slice(-2)).toEqual(["PROCESSING", "SUCCEEDED"]);
    expect(history.length).toBeGreaterThanOrEqual(2);

    const video = card.locator("video");
    const src = await video.getAttribute("src");
    expect(src).toMatch(/\/media\/sim\/task_\w+\.mp4$/);
    await visible(card.locator(".media .ai-mark")).toBe(true);
    await text(card.locator(".media .ai-mark")).toBe("AI-generated");
    await attribute(card.getByRole("link", { name: "Download" }), "href").toBe(src!);
    await text(card).toContain("¥1.125");
    await text(page.locator("#balance-line")).toBe("Balance: ¥8.875");
    expect((await t.rest("GET", "/api/v1/usage", { key })).body.data.balance).toBe(8.875);
    await page.getByLabel("Prompt").focus(); // no caret blinking over the screenshot's result
    // Nothing was lost from the form.
    await value(page.getByLabel("Prompt")).toBe("a red fox running through snow");
    await shot(page, "test-desktop");
  });

  it("at phone width makes two images on model 45, each in the grid with its AI-generated mark and a download link", async () => {
    const { key } = await t.createKey("10");
    const page = await open(t.url, "/test", { viewport: PHONE });
    await page.getByLabel("API key").fill(key);
    await page.getByLabel("Model").selectOption("45");
    await visible(page.locator("#seconds-field")).toBe(false);
    expect(await optionValues(page, "Resolution")).toEqual(["1k"]);
    await page.getByLabel("Count").selectOption("2");
    await text(page.locator("#price")).toBe("¥0.60");
    await page.getByLabel("Prompt").fill("a lighthouse at dusk");
    await page.getByRole("button", { name: "Generate" }).click();
    const card = page.locator(".task").first();
    await waitForStatus(page, "Succeeded");
    const figures = card.locator(".grid figure");
    await until(() => figures.count()).toBe(2);
    for (let i = 0; i < 2; i++) {
      await visible(figures.nth(i).locator(".ai-mark")).toBe(true);
      await attribute(figures.nth(i).getByRole("link", { name: `Download ${i + 1}` }), "href").toMatch(/\/media\/sim\/task_\w+-\d+\.svg$/);
    }
    // The images really loaded (same origin, allowed by the CSP).
    await expect.poll(() => figures.locator("img").evaluateAll((imgs) => imgs.every((img) => (img as HTMLImageElement).naturalWidth > 0))).toBe(true);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(PHONE.width);
    await shot(page, "test-phone");
  });

  it("shows a bad key, an insufficient balance and a validation error inline, keeping the form", async () => {
    const page = await open(t.url, "/test");
    await page.getByLabel("Model").selectOption("69");
    await page.getByLabel("Resolution").selectOption("1080P");
    await page.getByLabel("Duration (seconds)").selectOption("30");
    await text(page.locator("#price")).toBe("¥22.50");
    await page.getByLabel("Prompt").fill("a slow sunrise");

    await page.getByLabel("API key").fill("sy_not_a_real_key");
    await page.getByRole("button", { name: "Generate" }).click();
    await text(page.locator("#form-error")).toBe("Invalid or missing API key");
    await text(page.locator("#key-error")).toBe("Invalid or missing API key");
    await attribute(page.getByLabel("API key"), "aria-invalid").toBe("true");
    await focused(page.getByLabel("API key")).toBe(true);

    const poor = await t.createKey("1");
    await page.getByLabel("API key").fill(poor.key);
    await page.getByRole("button", { name: "Generate" }).click();
    await text(page.locator("#form-error")).toContain("Insufficient balance");
    await attribute(page.getByLabel("API key"), "aria-invalid").not.toBe("true");
    // Everything is still as it was.
    await value(page.getByLabel("Prompt")).toBe("a slow sunrise");
    await value(page.getByLabel("Model")).toBe("69");
    await value(page.getByLabel("Resolution")).toBe("1080P");
    await value(page.getByLabel("Duration (seconds)")).toBe("30");
    expect((await t.rest("GET", "/api/v1/usage", { key: poor.key })).body.data.balance).toBe(1);

    await page.getByLabel("Resolution").selectOption("480P");
    await page.getByLabel("Duration (seconds)").selectOption("4");
    await page.locator("#refs summary").click();
    await page.getByLabel("Reference image URLs").fill("http://example.com/cat.png");
    await page.getByRole("button", { name: "Generate" }).click();
    await text(page.locator("#reference_images-error")).toBe("reference_images must be a public HTTPS URL");
    await focused(page.getByLabel("Reference image URLs")).toBe(true);
    await until(() => page.locator(".task").count()).toBe(0);
  });

  it("falls back to polling the task every 3 s when the WebSocket cannot be used", async () => {
    const { key } = await t.createKey("10");
    const page = await open(t.url, "/test");
    await page.routeWebSocket(/\/graphql$/, (socket) => socket.close({ code: 1011, reason: "no sockets here" }));
    await page.getByLabel("API key").fill(key);
    await page.getByLabel("Model").selectOption("51");
    await page.getByLabel("Prompt").fill("a paper boat");
    await page.getByRole("button", { name: "Generate" }).click();
    await text(page.locator('.task [data-role="note"]')).toBe("Live connection lost; checking every 3 seconds.");
    await waitForStatus(page, "Succeeded");
    await visible(page.locator(".task .media .ai-mark")).toBe(true);
  });

  it("follows several tasks on one shared WebSocket and, when the server restarts, reconnects on its own and keeps updating", async () => {
    // Slow steps (1.5 s) so the tasks are still running when the stack restarts under them.
    const restarting = await startTestStack({ SIMULATOR_STEP_MS: "1500" });
    try {
      const { key } = await restarting.createKey("100");
      const page = await open(restarting.url, "/test");
      const sockets: Socket[] = [];
      page.on("websocket", (socket) => sockets.push(watchSocket(socket)));
      await page.getByLabel("API key").fill(key);
      await page.getByLabel("Model").selectOption("52");
      const submit = async (prompt: string) => {
        const before = await page.locator(".task").count();
        await page.getByLabel("Prompt").fill(prompt);
        await page.getByRole("button", { name: "Generate" }).click();
        await until(() => page.locator(".task").count()).toBe(before + 1);
        return (await page.locator(".task").first().getAttribute("data-task-id"))!;
      };
      const running = [await submit("a heron"), await submit("a crane"), await submit("a stork")];
      // Three tasks, one socket, each task a subscription on it, each with its live status.
      await until(async () => sockets[0]?.subscribed() ?? []).toEqual(running);
      expect(sockets).toHaveLength(1);
      for (const id of running) await until(async () => sockets[0]!.statuses(id).length).toBeGreaterThan(0);

      await restarting.restart();
      await until(async () => sockets[0]!.socket.isClosed()).toBe(true);
      // graphql-ws reconnects by itself (backoff) on a second socket and subscribes every task
      // still running again; the server's first event on it is each task as it is now.
      await until(async () => sockets.length, 15_000).toBe(2);
      for (const id of running) await attribute(page.locator(`.task[data-task-id="${id}"]`), "data-status", 20_000).toBe("SUCCEEDED");
      // The subscriptions still open when the first socket closed are exactly those subscribed again.
      const stillRunning = running.filter((id) => sockets[0]!.statuses(id).at(-1) !== "SUCCEEDED");
      expect(stillRunning.length).toBeGreaterThan(0);
      const resubscribed = sockets[1]!.subscribed();
      expect(new Set(resubscribed)).toEqual(new Set(stillRunning));
      for (const id of resubscribed) expect(sockets[1]!.statuses(id).at(-1)).toBe("SUCCEEDED");

      // The new connection keeps serving: a fourth task is followed live on it, no third socket.
      const fourth = await submit("an ibis");
      await waitForStatus(page, "Processing");
      await waitForStatus(page, "Succeeded");
      expect(sockets).toHaveLength(2);
      expect(sockets[1]!.subscribed()).toContain(fourth);
      expect(sockets[1]!.statuses(fourth)).toEqual(expect.arrayContaining(["PROCESSING", "SUCCEEDED"]));
      await until(() => page.locator('.task [data-role="note"]').count()).toBe(0);
    } finally {
      await restarting.close();
    }
  });

  it("in Chinese shows every message in Chinese: a failed task's reason, a bad key, an insufficient balance, a validation error", async () => {
    const { key } = await t.createKey("10");
    const page = await open(t.url, "/test", { locale: "zh-CN" });
    await page.getByLabel("API 密钥").fill(key);
    await page.getByLabel("模型").selectOption("52");
    await page.getByLabel("提示词").fill("暴风雨中的灯塔 #fail");
    await page.getByRole("button", { name: "生成" }).click();
    await waitForStatus(page, "失败");
    // The service's reason ("Simulated generation failure (#fail)") in Chinese, refunded.
    await text(page.locator('.task [data-role="failure"]')).toBe("原因：模拟的生成失败（提示词中含有失败标记）");
    await text(page.locator(".task .meta")).toContain("已退款 ¥5.00");
    await text(page.locator("#balance-line")).toBe("余额：¥10.00");
    expect(await notChinese(page)).toEqual([]);
    await page.getByLabel("提示词").focus();
    await shot(page, "test-desktop-zh");

    await page.getByLabel("API 密钥").fill("sy_not_a_real_key");
    await page.getByRole("button", { name: "生成" }).click();
    await text(page.locator("#form-error")).toBe("API 密钥无效或缺失");
    await text(page.locator("#key-error")).toBe("API 密钥无效或缺失");
    expect(await notChinese(page)).toEqual([]);

    const poor = await t.createKey("1");
    await page.getByLabel("API 密钥").fill(poor.key);
    await page.getByRole("button", { name: "生成" }).click();
    await text(page.locator("#form-error")).toBe("余额不足 请为密钥充值，或选择更便宜的选项。");
    expect(await notChinese(page)).toEqual([]);

    await page.locator("#refs summary").click();
    await page.getByLabel("参考图片 URL").fill("http://example.com/cat.png");
    await page.getByRole("button", { name: "生成" }).click();
    await text(page.locator("#reference_images-error")).toBe("参考图片 URL：必须是公开的 HTTPS 地址");
    await text(page.locator("#form-error")).toBe("参考图片 URL：必须是公开的 HTTPS 地址");
    expect(await notChinese(page)).toEqual([]);

    await page.setViewportSize(PHONE);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await shot(page, "test-phone-zh");
    // The same check finds the English of the English page.
    await page.getByRole("button", { name: "English" }).click();
    expect(await notChinese(page)).toEqual(expect.arrayContaining(["h1: Test bench", "p: Reason: Simulated generation failure (#fail)"]));
  });

  it("shows an upstream failure (502) and timeout (504) inline, saying the amount was refunded", async () => {
    let fake: FakeUpstream | undefined;
    let failing: TestStack | undefined;
    try {
      fake = await startFakeUpstream();
      failing = await startTestStack({ GENERATION_UPSTREAM_URL: fake.url, UPSTREAM_TIMEOUT_MS: "300" });
      const { key } = await failing.createKey("10");
      const page = await open(failing.url, "/test");
      await page.getByLabel("API key").fill(key);
      await page.getByLabel("Model").selectOption("52");
      await page.getByLabel("Prompt").fill("a storm at sea");
      fake.onSubmit({ kind: "http_error", status: 500 });
      await page.getByRole("button", { name: "Generate" }).click();
      await text(page.locator("#form-error")).toContain("Upstream request failed");
      await text(page.locator("#form-error")).toContain("refunded");
      fake.onSubmit({ kind: "hang" });
      await page.getByRole("button", { name: "Generate" }).click();
      await text(page.locator("#form-error")).toContain("Upstream request timed out");
      await value(page.getByLabel("Prompt")).toBe("a storm at sea");
      expect((await failing.rest("GET", "/api/v1/usage", { key })).body.data.balance).toBe(10);
      fake.releaseHanging({ kind: "http_error", status: 500 });
    } finally {
      await failing?.close();
      await fake?.close();
    }
  });
});

describe("/client, the balance page", () => {
  it("shows the balance for a key and follows a REST submission live; a bad key gets the documented message", async () => {
    const { key } = await t.createKey("10");
    const page = await open(t.url, "/client");
    const loaded = await weight(page);
    console.log(`/client first load: ${loaded.transferred} bytes transferred in ${loaded.requests} requests (${loaded.decoded} bytes decoded)`);

    await page.getByLabel("API key").fill("sy_wrong");
    await page.getByRole("button", { name: "Show balance" }).click();
    await text(page.locator("#key-error")).toBe("Invalid or missing API key");
    await visible(page.locator("#account")).toBe(false);

    await page.getByLabel("API key").fill(key);
    await page.getByRole("button", { name: "Show balance" }).click();
    await text(page.locator("#balance")).toBe("¥10.00");
    await visible(page.locator("#key-error")).toBe(false);
    await text(page.locator("#spent")).toBe("¥0.00");
    await visible(page.locator("#no-tasks")).toBe(true);

    // A submission through the REST API shows up without touching the page.
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a heron", model_id: 52, seconds: 5 } });
    expect(submitted.status).toBe(200);
    const taskId = submitted.body.data.task_id as string;
    await text(page.locator("#balance")).toBe("¥5.00");
    await text(page.locator("#spent")).toBe("¥5.00");
    const row = page.locator(`tr[data-task-id="${taskId}"]`);
    await text(row).toContain("video-52");
    await attribute(row, "data-status", 15_000).toBe("SUCCEEDED");
    await attribute(row.getByRole("link", { name: "Open" }), "href").toMatch(/\/media\/sim\/task_\w+\.mp4$/);
    await text(row.locator(".ai-mark")).toBe("AI-generated");
    await text(page.locator("#billed-seconds")).toBe("5");
  });

  it("follows Accept-Language (Chinese) with a working switch, remembers the key in the tab only when asked, and fits a phone", async () => {
    const { key } = await t.createKey("3.5");
    const page = await open(t.url, "/client", { viewport: PHONE, locale: "zh-CN" });
    await attribute(page.locator("html"), "lang").toBe("zh-CN");
    await visible(page.getByLabel("API 密钥")).toBe(true);
    await page.getByLabel("API 密钥").fill(key);
    await page.getByLabel("在此标签页中记住").check();
    await page.getByRole("button", { name: "查询余额" }).click();
    await text(page.locator("#balance")).toBe("¥3.50");
    const image = await t.rest("POST", "/api/v1/images/generations", { key, body: { prompt: "a kite", model_id: 45, count: 1 } });
    await attribute(page.locator(`tr[data-task-id="${image.body.data.task_id}"]`), "data-status", 15_000).toBe("SUCCEEDED");
    await text(page.locator("#balance")).toBe("¥3.20");
    await text(page.locator("#billed-images")).toBe("1");
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(PHONE.width);

    await page.getByRole("button", { name: "English" }).click();
    await visible(page.getByLabel("API key")).toBe(true);
    await visible(page.getByRole("button", { name: "Show balance" })).toBe(true);

    // Ticked: the same tab's /test starts with the key. The keyboard reaches the key field.
    await page.goto(`${t.url}/test`);
    await page.locator("#form[data-ready]").waitFor();
    await value(page.getByLabel("API key")).toBe(key);
    await until(() => page.getByLabel("Remember in this tab").isChecked()).toBe(true);
    await page.getByLabel("Remember in this tab").uncheck();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.reload();
    await page.locator("#form[data-ready]").waitFor();
    await value(page.getByLabel("API key")).toBe("");
    await page.keyboard.press("Tab");
    await focused(page.getByRole("link", { name: "Skip to content" })).toBe(true);
  });

  it("charts the key's spending and billed seconds and images per day over 30 days with the local uPlot, in both languages, at desktop and phone width", async () => {
    const { key } = await t.createKey("100");
    // Three days ago a 10 s video and three images, yesterday a 6 s video, today two images.
    await usageOn(key, 3, "/api/v1/video/generations", { prompt: "a heron", model_id: 52, seconds: 10 });
    await usageOn(key, 3, "/api/v1/images/generations", { prompt: "a kite", model_id: 45, count: 3 });
    await usageOn(key, 1, "/api/v1/video/generations", { prompt: "a crane", model_id: 52, seconds: 6 });
    await usageOn(key, 0, "/api/v1/images/generations", { prompt: "a boat", model_id: 45, count: 2 });

    const page = await open(t.url, "/client");
    await page.getByLabel("API key").fill(key);
    await page.getByRole("button", { name: "Show balance" }).click();
    await page.locator("#usage[data-drawn]").waitFor();
    await text(page.locator("#usage-heading")).toBe("Last 30 days");
    await text(page.locator("#usage-summary")).toBe("In 30 days: ¥17.50 spent; 16 seconds and 5 images billed.");
    // Two uPlot charts, drawn on canvases, with their series in the legend.
    await until(() => page.locator("#usage canvas").count()).toBe(2);
    expect(await page.locator("#chart-spent .u-legend .u-label").allTextContents()).toEqual(["Day", "Spent"]);
    expect(await page.locator("#chart-units .u-legend .u-label").allTextContents()).toEqual(["Day", "Seconds", "Images"]);
    // Pointing at a day shows its exact values (30 equal slots, oldest first: three days ago is slot 26).
    await pointAtDay(page, "#chart-spent", 26);
    await text(page.locator("#chart-spent .u-legend .u-series").nth(1).locator(".u-value")).toBe("¥10.90");
    await pointAtDay(page, "#chart-units", 26);
    expect(await page.locator("#chart-units .u-legend .u-value").allTextContents()).toEqual([longDate(3, "en-GB"), "10 s", "3"]);
    await pointAtDay(page, "#chart-units", 28);
    expect(await page.locator("#chart-units .u-legend .u-value").allTextContents()).toEqual([longDate(1, "en-GB"), "6 s", "0"]);
    await page.mouse.move(0, 0);
    // The numbers, for those who cannot see the chart.
    await page.getByText("Show the numbers").click();
    expect(
      await page.locator("#usage-table tbody tr").evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll("td")].map((td) => td.textContent))),
    ).toEqual([
      [longDate(0, "en-GB"), "¥0.60", "0", "2"],
      [longDate(1, "en-GB"), "¥6.00", "6", "0"],
      [longDate(3, "en-GB"), "¥10.90", "10", "3"],
    ]);
    // uPlot came from this origin's versioned assets; nothing from anywhere else.
    const loaded = await page.evaluate(() => performance.getEntriesByType("resource").map((entry) => entry.name));
    expect(loaded).toContainEqual(expect.stringMatching(new RegExp(`^${t.url}/assets/[0-9a-f]+/uPlot\\.esm\\.js$`)));
    expect(loaded.filter((url) => !url.startsWith(`${t.url}/`))).toEqual([]);
    await shot(page, "client-desktop");

    await page.getByRole("button", { name: "中文" }).click();
    await text(page.locator("#usage-heading")).toBe("最近 30 天");
    await text(page.locator("#usage-summary")).toBe("30 天内：消费 ¥17.50，计费 16 秒、5 张图片。");
    await until(() => page.locator("#chart-units .u-legend .u-label").allTextContents()).toEqual(["日期", "秒数", "图片"]);
    await pointAtDay(page, "#chart-units", 26);
    expect(await page.locator("#chart-units .u-legend .u-value").allTextContents()).toEqual([longDate(3, "zh-CN"), "10 秒", "3 张"]);
    await page.mouse.move(0, 0);
    expect(await notChinese(page)).toEqual([]);
    await shot(page, "client-desktop-zh");

    // Phone width: the charts shrink to the screen, nothing scrolls sideways.
    await page.setViewportSize(PHONE);
    await until(() => page.locator("#usage canvas").evaluateAll((canvases) => canvases.every((c) => c.getBoundingClientRect().right <= 390 - 12))).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await shot(page, "client-phone-zh");
    await page.getByRole("button", { name: "English" }).click();
    await until(() => page.locator("#chart-spent .u-legend .u-label").allTextContents()).toEqual(["Day", "Spent"]);
    await shot(page, "client-phone");
  });

  it("in Chinese shows why tasks failed in Chinese, with the service's own words under a reason it does not know", async () => {
    const { key } = await t.createKey("10");
    const failed = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a storm #fail", model_id: 52, seconds: 4 } });
    const odd = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a flood #fail", model_id: 52, seconds: 4 } });
    for (const submitted of [failed, odd]) await t.waitForTask(key, submitted.body.data.task_id);
    // A provider's own reason, which the pages cannot know.
    await t.stack.db!("tasks").where("id", odd.body.data.task_id).update({ error: "Content rejected by the provider's policy" });

    const page = await open(t.url, "/client", { locale: "zh-CN" });
    await page.getByLabel("API 密钥").fill(key);
    await page.getByRole("button", { name: "查询余额" }).click();
    const reason = (taskId: string) => page.locator(`tr[data-task-id="${taskId}"] [data-role="failure"]`);
    await text(reason(failed.body.data.task_id)).toBe("模拟的生成失败（提示词中含有失败标记）");
    await text(reason(odd.body.data.task_id)).toBe("生成失败。服务返回的原文：Content rejected by the provider's policy");
    await attribute(reason(odd.body.data.task_id).locator('[lang="en"]'), "lang").toBe("en");
    await text(reason(odd.body.data.task_id).locator('[lang="en"]')).toBe("Content rejected by the provider's policy");
    await text(page.locator(`tr[data-task-id="${failed.body.data.task_id}"] .badge`)).toBe("失败");
    expect(await notChinese(page)).toEqual([]);

    await page.getByLabel("API 密钥").fill("sy_wrong");
    await page.getByRole("button", { name: "查询余额" }).click();
    await text(page.locator("#key-error")).toBe("API 密钥无效或缺失");
    expect(await notChinese(page)).toEqual([]);

    await page.getByRole("button", { name: "English" }).click();
    await page.getByLabel("API key").fill(key);
    await page.getByRole("button", { name: "Show balance" }).click();
    await text(reason(failed.body.data.task_id)).toBe("Simulated generation failure (#fail)");
    await text(reason(odd.body.data.task_id)).toBe("Content rejected by the provider's policy");
  });
});
