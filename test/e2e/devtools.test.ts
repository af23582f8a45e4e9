/**
 * The developers' tools in a real browser (Debian's chromium driven by playwright-core, as in
 * test/e2e/pages.test.ts) against a real stack: the landing page `/`, the API reference `/docs`
 * and GraphiQL (`/graphql` in development). Every request to a host other than the router is
 * aborted and recorded (there must be none: no CDN), and any page error or CSP refusal fails.
 *
 * Saves screenshots under test/artifacts/, like test/e2e/pages.test.ts.
 */
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, print } from "graphql";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { ARTIFACTS, DESKTOP, LAUNCH, PHONE } from "../support/browser.ts";

let t: TestStack;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** Errors thrown in any page, refused by its CSP, or workers that could not start: there must be none. */
const pageProblems: string[] = [];
/** Requests to any host but the router's, aborted: there must be none. */
const offsite: string[] = [];
/** Paths requested from the router. */
const served: string[] = [];

beforeAll(async () => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  [t, browser] = await Promise.all([startTestStack(), chromium.launch(LAUNCH)]);
});

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => {});
  await browser?.close();
  await t?.close();
});

/**
 * Opens `path` of `base` in a fresh context whose only reachable host is the router's, and waits
 * for `ready` (a selector).
 */
async function open(base: string, path: string, ready: string, options: { viewport?: { width: number; height: number }; locale?: string } = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: options.viewport ?? DESKTOP, locale: options.locale ?? "en-US" });
  contexts.push(context);
  context.setDefaultTimeout(20_000);
  const router = new URL(base).host;
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (/^(data|blob):/.test(url)) return route.continue();
    if (new URL(url).host === router) {
      served.push(new URL(url).pathname);
      return route.continue();
    }
    offsite.push(url);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  page.on("pageerror", (error) => pageProblems.push(`${path}: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused|Could not create web worker/i.test(message.text())) pageProblems.push(`${path}: ${message.text()}`);
  });
  await page.goto(`${base}${path}`);
  await page.locator(ready).first().waitFor();
  return page;
}

async function shot(page: Page, name: string, fullPage = true) {
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage });
}

/** Waits (polling, no fixed sleep) until a value read from the page matches. */
const until = <T>(read: () => Promise<T>, timeout = 20_000) => expect.poll(read, { timeout, interval: 50 });

/** The CSP directives of a response, by name. */
function directives(response: Response): Map<string, string> {
  const csp = response.headers.get("content-security-policy") ?? "";
  return new Map(
    csp
      .split(/;\s*/)
      .filter(Boolean)
      .map((d) => [d.split(" ")[0]!, d] as const),
  );
}

describe("/, the landing page", () => {
  it("answers / with an HTML page under the pages' strict CSP, in English or Chinese by Accept-Language or ?lang", async () => {
    const response = await fetch(`${t.url}/`, { headers: { "accept-language": "en-US,en;q=0.9" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(response.headers.get("vary")).toContain("Accept-Language");
    const csp = directives(response);
    expect(csp.get("default-src")).toBe("default-src 'none'");
    expect(csp.get("script-src")).toBe("script-src 'self'");
    expect(csp.get("style-src")).toBe("style-src 'self'");
    expect(csp.get("frame-ancestors")).toBe("frame-ancestors 'none'");
    const html = await response.text();
    expect(html).toContain('<html lang="en">');
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/); // no inline script
    const zh = await (await fetch(`${t.url}/`, { headers: { "accept-language": "zh-CN,zh;q=0.9" } })).text();
    expect(zh).toContain('<html lang="zh-CN">');
    expect(zh).toContain("测试台");
    const chosen = await (await fetch(`${t.url}/?lang=en`, { headers: { "accept-language": "zh-CN" } })).text();
    expect(chosen).toContain('<html lang="en">');
  });

  it("links /test, /client, GraphiQL, /docs, /health and the /admin console, each of which answers, and fits a phone in Chinese", async () => {
    const page = await open(t.url, "/", "main h1");
    expect(await page.title()).toBe("Switchyard");
    const links = page.locator(".tiles a");
    expect(await links.evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href")]))).toEqual([
      ["Test bench", "/test"],
      ["Balance", "/client"],
      ["Console", "/admin"],
      ["GraphiQL", "/graphql"],
      ["API reference", "/docs"],
      ["Health", "/health"],
    ]);
    for (const href of ["/test", "/client", "/docs", "/health", "/admin"]) {
      expect((await fetch(`${t.url}${href}`)).status, href).toBe(200);
    }
    await shot(page, "home-desktop");

    await page.getByRole("link", { name: "API reference" }).first().click();
    await page.waitForURL(`${t.url}/docs`);
    await page.locator("#reference[data-ready]").waitFor();

    const phone = await open(t.url, "/", "main h1", { viewport: PHONE, locale: "zh-CN" });
    expect(await phone.locator("html").getAttribute("lang")).toBe("zh-CN");
    await until(() => phone.getByRole("link", { name: "测试台" }).first().isVisible()).toBe(true);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await shot(phone, "home-phone-zh");
    await phone.getByRole("link", { name: "English" }).click();
    await until(() => phone.locator("html").getAttribute("lang")).toBe("en");
    expect(offsite).toEqual([]);
    expect(pageProblems).toEqual([]);
  }, 60_000);
});

describe("/docs, the API reference", () => {
  it("renders the operations of both OpenAPI documents from local assets, with no request leaving the router and no CSP violation", async () => {
    const response = await fetch(`${t.url}/docs`);
    expect(response.status).toBe(200);
    expect(directives(response).get("script-src")).toBe("script-src 'self'");
    expect(directives(response).get("style-src")).toBe("style-src 'self'");
    const html = await response.text();
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
    const bundle = html.match(/src="(\/assets\/[0-9a-f]+\/swagger-ui-bundle\.js)"/)![1]!;
    const asset = await fetch(`${t.url}${bundle}`, { headers: { "accept-encoding": "br" } });
    expect([asset.status, asset.headers.get("cache-control"), asset.headers.get("content-encoding")]).toEqual([
      200,
      "public, max-age=31536000, immutable",
      "br",
    ]);
    expect((await fetch(`${t.url}${bundle}`, { headers: { "accept-encoding": "br", "if-none-match": asset.headers.get("etag")! } })).status).toBe(304);

    const page = await open(t.url, "/docs", "#reference[data-ready]");
    const reference = page.locator("#reference");
    await until(() => reference.locator(".opblock-summary-path").allTextContents()).toContain("/api/v1/video/generations");
    const generation = await reference.locator(".opblock-summary-path").allTextContents();
    expect(generation).toEqual(expect.arrayContaining(["/api/v1/images/generations", "/api/v1/tasks/{task_id}", "/api/v1/usage"]));
    await shot(page, "docs-desktop");
    // One operation opened: its parameters and responses are there (the screenshot: the window only).
    await reference.locator(".opblock-summary-path", { hasText: /^\/api\/v1\/video\/generations$/ }).click();
    await until(() => reference.locator(".opblock.is-open .responses-wrapper").count()).toBe(1);
    await reference.locator(".opblock.is-open").scrollIntoViewIfNeeded();
    await shot(page, "docs-operation-desktop", false);

    await page.getByRole("link", { name: /Cloud open API/ }).click();
    await page.waitForURL(`${t.url}/docs?api=cloud`);
    await page.locator("#reference[data-ready]").waitFor();
    await until(() => page.locator("#reference .opblock-summary-path").allTextContents()).toContain("/openapi/v1/orders");
    const cloud = await page.locator("#reference .opblock-summary-path").allTextContents();
    expect(cloud).toEqual(expect.arrayContaining(["/openapi/v1/products", "/openapi/v1/billing/balance", "/openapi/v1/domains/{domain}/purge"]));
    expect(cloud).not.toContain("/api/v1/video/generations");
    expect(await page.getByRole("link", { name: /Cloud open API/ }).getAttribute("aria-current")).toBe("page");

    const phone = await open(t.url, "/docs?api=cloud", "#reference[data-ready]", { viewport: PHONE, locale: "zh-CN" });
    await until(() => phone.locator("#reference .opblock-summary-path").count()).toBeGreaterThan(10);
    expect(await phone.locator("main > h1").textContent()).toBe("API 参考");
    await shot(phone, "docs-phone-zh");
    expect(offsite).toEqual([]);
    expect(pageProblems).toEqual([]);
  }, 60_000);
});

describe("GraphiQL (development)", () => {
  it("serves GraphiQL titled Switchyard GraphiQL from local assets and runs { models { id } } with every other host blocked", async () => {
    const response = await fetch(`${t.url}/graphql`, { headers: { accept: "text/html" } });
    expect(response.status).toBe(200);
    const csp = directives(response);
    expect(csp.get("script-src")).toBe("script-src 'self'");
    expect(csp.get("worker-src")).toBe("worker-src 'self'");
    expect(csp.get("frame-ancestors")).toBe("frame-ancestors 'none'");
    const html = await response.text();
    expect(html).toContain("<title>Switchyard GraphiQL</title>");
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toContain("Hive Gateway");
    expect(html.match(/<script[^>]*>/g)!.every((tag) => / src="\/assets\//.test(tag) || tag.includes('type="application/json"'))).toBe(true);

    const page = await open(t.url, "/graphql", ".graphiql-container .monaco-editor");
    expect(await page.title()).toBe("Switchyard GraphiQL");
    // The query editor is Monaco; it starts with our welcome query, not the gateway's.
    const editor = page.locator(".graphiql-query-editor .monaco-editor").first();
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (the rendered text), not the DOM property
    await until(() => editor.locator(".view-lines").innerText()).toMatch(/Switchyard\sGraphiQL/);
    await shot(page, "graphiql-welcome-desktop", false);
    // Replace its text by typing, as a person would.
    await editor.click();
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.press("Delete");
    await page.keyboard.type("{ models { id } }");
    const executed = page.waitForResponse(
      (r) => r.url().endsWith("/graphql") && r.request().method() === "POST" && (r.request().postData() ?? "").includes("models"),
    );
    await page.getByRole("button", { name: /Execute query/ }).click();
    const result = await executed;
    // (GraphiQL sends the query with the ignored characters stripped.)
    expect(print(parse(JSON.parse(result.request().postData()!).query))).toBe(print(parse("{ models { id } }")));
    const body = await result.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.models.length).toBeGreaterThan(0);
    expect(body.data.models.every((m: object) => Object.keys(m).join() === "id")).toBe(true);
    // The answer is shown in the result pane.
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (the rendered text), not the DOM property
    await until(() => page.locator(".graphiql-response").innerText()).toContain('"models"');
    // The editor's language workers came from the router.
    for (const worker of ["graphiql-editor.worker.js", "graphiql-graphql.worker.js"]) {
      expect(
        served.some((path) => path.endsWith(`/${worker}`)),
        worker,
      ).toBe(true);
    }
    await shot(page, "graphiql-desktop");
    // The documentation explorer reads the schema (introspection, allowed in development).
    await page.getByRole("button", { name: /Documentation Explorer/ }).click();
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText (the rendered text), not the DOM property
    await until(() => page.locator(".graphiql-doc-explorer").innerText()).toMatch(/Query/);
    expect(offsite).toEqual([]);
    expect(pageProblems).toEqual([]);
  }, 60_000);
});

describe("in production", () => {
  let prod: TestStack;
  beforeAll(async () => {
    prod = await startTestStack({ NODE_ENV: "production" });
  });
  afterAll(async () => {
    await prod?.close();
  });

  it("has no GraphiQL: / does not link it, /graphql renders no page and its assets are 404, while /docs still works", async () => {
    const home = await (await fetch(`${prod.url}/`, { headers: { "accept-language": "en" } })).text();
    expect(home).toContain('href="/docs"');
    expect(home).toContain('href="/health"');
    expect(home).not.toContain('href="/graphql"');
    expect(home).not.toContain("GraphiQL");
    const graphiql = await fetch(`${prod.url}/graphql`, { headers: { accept: "text/html" } });
    expect(graphiql.status).toBe(406); // GraphQL Yoga's answer to a GET that accepts none of its media types
    expect(await graphiql.text()).toBe("");
    const devPage = await (await fetch(`${t.url}/graphql`, { headers: { accept: "text/html" } })).text();
    for (const asset of devPage.match(/\/assets\/[0-9a-f]+\/graphiql[\w.-]*\.js/g)!) {
      expect((await fetch(`${prod.url}${asset}`)).status, asset).toBe(404);
    }
    const docs = await fetch(`${prod.url}/docs`);
    expect(docs.status).toBe(200);
    const bundle = (await docs.text()).match(/src="(\/assets\/[0-9a-f]+\/swagger-ui-bundle\.js)"/)![1]!;
    expect((await fetch(`${prod.url}${bundle}`)).status).toBe(200);
  });
});
