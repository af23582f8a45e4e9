/**
 * The landing page (`GET /`) and the API reference (`GET /docs`): plain HTML from
 * router/pages/home.html and docs.html, in the style of /client and /test (their app.css, plus
 * devtools.css), in English or Chinese.
 *
 * - The language follows Accept-Language with the service's one rule (`Vary: Accept-Language`);
 *   `?lang=en|zh` overrides it (the switch in the header is two links: no script on `/`).
 * - `/` links /test, /client, GraphiQL (development only: absent in production), /docs, /health
 *   and the two OpenAPI documents.
 * - `/docs` shows one OpenAPI document at a time with swagger-ui-dist (router/devtools/files.ts):
 *   `?api=generation` (the default, `/api/v1`) or `?api=cloud` (`/openapi/v1`), chosen by two
 *   links. Swagger UI because it runs from its own files with no inline script, no eval and no
 *   injected `<style>` (Redoc and Scalar inject styles at run time, which a strict style-src
 *   refuses), and it is the most used of the three. Its stylesheet draws icons as data: images,
 *   so this page's img-src also allows `data:`; the rest of its CSP is the pages'.
 * - Pages are `no-cache` with an ETag, like /client and /test.
 */
import fs from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { negotiateLocale, type Locale } from "../../subgraphs/shared/locale.ts";
import { contentTypeOf, escapeHtml, pageHeaders, represent, send, type Representation } from "../http/assets.ts";
import { DEVTOOLS_ASSET_BASE } from "./files.ts";

const DIR = new URL("../pages/", import.meta.url);

/** The two REST APIs the reference shows: `?api=` value → its OpenAPI document. */
const APIS = {
  generation: { document: "/api/v1/openapi.json", prefix: "/api/v1" },
  cloud: { document: "/openapi/v1/openapi.json", prefix: "/openapi/v1" },
} as const;
type Api = keyof typeof APIS;

const MESSAGES: Record<Locale, Record<string, string>> = {
  en: {
    skip: "Skip to content",
    "nav.label": "Pages",
    "nav.client": "Balance",
    "nav.test": "Test bench",
    "nav.docs": "API reference",
    "lang.label": "Language",
    "home.title": "Switchyard",
    "home.intro": "Video and image generation and the cloud open API, served as one GraphQL federation with their REST APIs beside it.",
    "home.pages": "Where to go",
    "tile.test": "Test bench",
    "tile.test.text": "Try every model with your own API key. Each submission is charged to that key.",
    "tile.client": "Balance",
    "tile.client.text": "An API key's balance, spending and recent tasks, updated live.",
    "tile.admin": "Console",
    "tile.admin.text": "Operators: keys, wallets, orders, webhook deliveries, channels and a live overview. Needs ADMIN_TOKEN.",
    "tile.graphiql": "GraphiQL",
    "tile.graphiql.text": "Explore the federated graph and run queries, mutations and subscriptions. Development only.",
    "tile.docs": "API reference",
    "tile.docs.text": "The REST APIs, browsable: generation (/api/v1) and cloud (/openapi/v1).",
    "tile.health": "Health",
    "tile.health.text": "Whether the router and each subgraph are up, as JSON.",
    "home.endpoints": "Endpoints",
    "home.graphql": "GraphQL: POST /graphql; subscriptions over graphql-ws or SSE on the same path.",
    "home.schema": "GraphQL schema (SDL, for code generators):",
    "home.openapi": "OpenAPI documents:",
    "docs.title": "API reference — Switchyard",
    "docs.heading": "API reference",
    "docs.intro": "The REST APIs of this service, from their OpenAPI documents. Send your API key as Authorization: Bearer <key>.",
    "docs.switch": "API",
    "docs.generation": "Generation API",
    "docs.cloud": "Cloud open API",
    "docs.json": "OpenAPI document (JSON)",
    "docs.noscript": "The browsable reference needs JavaScript; the OpenAPI document itself is linked above.",
    "docs.loading": "Loading the API reference…",
  },
  zh: {
    skip: "跳到正文",
    "nav.label": "页面",
    "nav.client": "余额",
    "nav.test": "测试台",
    "nav.docs": "API 参考",
    "lang.label": "语言",
    "home.title": "Switchyard",
    "home.intro": "视频与图像生成服务和云服务开放 API，合为一个 GraphQL 联邦，并同时提供各自的 REST API。",
    "home.pages": "从这里开始",
    "tile.test": "测试台",
    "tile.test.text": "用您自己的 API 密钥试用每个模型。每次提交都从该密钥扣费。",
    "tile.client": "余额",
    "tile.client.text": "实时查看 API 密钥的余额、消费和最近的任务。",
    "tile.admin": "控制台",
    "tile.admin.text": "运营人员：密钥、钱包、订单、回调投递、渠道和实时概览。需要 ADMIN_TOKEN。",
    "tile.graphiql": "GraphiQL",
    "tile.graphiql.text": "浏览联邦图谱，运行查询、变更和订阅。仅限开发环境。",
    "tile.docs": "API 参考",
    "tile.docs.text": "可浏览的 REST API 文档：生成服务（/api/v1）和云服务（/openapi/v1）。",
    "tile.health": "健康检查",
    "tile.health.text": "路由器和各子图是否正常运行，以 JSON 返回。",
    "home.endpoints": "接口",
    "home.graphql": "GraphQL：POST /graphql；订阅在同一路径上使用 graphql-ws 或 SSE。",
    "home.schema": "GraphQL schema（SDL，供代码生成器使用）：",
    "home.openapi": "OpenAPI 文档：",
    "docs.title": "API 参考 — Switchyard",
    "docs.heading": "API 参考",
    "docs.intro": "本服务的 REST API，依据其 OpenAPI 文档生成。API 密钥以 Authorization: Bearer <key> 发送。",
    "docs.switch": "API",
    "docs.generation": "生成服务 API",
    "docs.cloud": "云服务开放 API",
    "docs.json": "OpenAPI 文档（JSON）",
    "docs.noscript": "可浏览的参考文档需要启用 JavaScript；OpenAPI 文档本身的链接见上方。",
    "docs.loading": "正在加载 API 参考…",
  },
};

/** Swagger UI's stylesheet draws its icons as data: images; https: images are not needed here. */
const CSP_CHANGES = { "img-src": "'self' data:" };

/** Handlers of `/` and `/docs` (each takes the router's call: req, res and the query string). */
export interface DevtoolsPages {
  home(call: { req: IncomingMessage; res: ServerResponse; query?: URLSearchParams }): Promise<void>;
  docs(call: { req: IncomingMessage; res: ServerResponse; query?: URLSearchParams }): Promise<void>;
}

/**
 * Reads the templates and builds the handlers.
 * @param options `production`: no GraphiQL link; `assetBase`: the pages' `/assets/<version>`
 *   (their app.css and icon)
 */
export function createDevtoolsPages(options: { production: boolean; assetBase: string }): DevtoolsPages {
  const templates = {
    home: fs.readFileSync(new URL("home.html", DIR), "utf8"),
    docs: fs.readFileSync(new URL("docs.html", DIR), "utf8"),
  };
  const made = new Map<string, Representation>();

  /** One page in one language: `{{key}}` filled from MESSAGES or `extra`, escaped. */
  function render(page: "home" | "docs", locale: Locale, extra: Record<string, string>): Representation {
    const key = JSON.stringify([page, locale, extra]);
    let file = made.get(key);
    if (!file) {
      let html = templates[page];
      if (options.production) html = html.replace(/<!--graphiql-->[\s\S]*?<!--\/graphiql-->\n?/g, "");
      html = html
        .replaceAll("%ASSETS%", options.assetBase)
        .replaceAll("%DEVTOOLS%", DEVTOOLS_ASSET_BASE)
        .replace(/\{\{([\w.]+)\}\}/g, (_, name: string) => escapeHtml(extra[name] ?? MESSAGES[locale][name] ?? MESSAGES.en[name] ?? name));
      file = represent(Buffer.from(html), contentTypeOf(`${page}.html`));
      made.set(key, file);
    }
    return file;
  }

  /** The page's language: `?lang=` when valid, else Accept-Language; and the query to keep it in links. */
  function language(call: { req: IncomingMessage; query?: URLSearchParams }) {
    const asked = call.query?.get("lang");
    if (asked === "en" || asked === "zh") return { locale: asked as Locale, keep: `lang=${asked}` };
    return { locale: negotiateLocale(call.req.headers["accept-language"] as string | undefined), keep: "" };
  }

  /** An aria-current value: "page" for the API shown, "true" for the language shown. */
  const current = (yes: boolean, token = "true") => (yes ? token : "false");
  const htmlLang = (locale: Locale) => (locale === "zh" ? "zh-CN" : "en");

  return {
    home(call) {
      const { locale } = language(call);
      const extra = { "html.lang": htmlLang(locale), "lang.en": current(locale === "en"), "lang.zh": current(locale === "zh") };
      return send(call.req, call.res, render("home", locale, extra), pageHeaders(call.req, CSP_CHANGES));
    },
    docs(call) {
      const { locale, keep } = language(call);
      const api: Api = call.query?.get("api") === "cloud" ? "cloud" : "generation";
      const link = (params: string[]) => `/docs?${params.filter(Boolean).join("&")}`;
      const extra = {
        "html.lang": htmlLang(locale),
        "lang.en": current(locale === "en"),
        "lang.zh": current(locale === "zh"),
        "href.en": link([`api=${api}`, "lang=en"]),
        "href.zh": link([`api=${api}`, "lang=zh"]),
        "href.generation": link(["api=generation", keep]),
        "href.cloud": link(["api=cloud", keep]),
        "api.generation": current(api === "generation", "page"),
        "api.cloud": current(api === "cloud", "page"),
        "api.document": APIS[api].document,
      };
      return send(call.req, call.res, render("docs", locale, extra), pageHeaders(call.req, CSP_CHANGES));
    },
  };
}
