/**
 * GraphiQL in development (`GET /graphql` with `Accept: text/html`), titled "Switchyard GraphiQL"
 * and working offline: the gateway's `renderGraphiQL` option renders our page, whose script,
 * stylesheet and editor workers are files of @graphql-yoga/render-graphiql served by the router
 * (router/devtools/files.ts), never a CDN. Production has no GraphiQL (`graphiql: false`).
 *
 * Its Content-Security-Policy is the pages' (router/http/assets.ts) with these differences, each needed
 * by GraphiQL 5's editor (Monaco) and nothing wider:
 * - `style-src 'self' 'unsafe-inline'`: Monaco adds `<style>` elements and writes `style="…"`
 *   attributes through innerHTML as it lays out lines; a nonce cannot cover attributes. Scripts
 *   stay `'self'` only: the page has no inline script (its options are a JSON data block).
 * - `worker-src 'self'`: Monaco's language workers, loaded from `/assets/<version>/`.
 * - `img-src` and `font-src` also `data:`: the stylesheet embeds its fonts and icons as data URLs
 *   (and no https: images or media: the page shows none).
 */
import fs from "node:fs";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { contentSecurityPolicy, escapeHtml } from "../http/assets.ts";
import { DEVTOOLS_ASSET_BASE } from "./files.ts";

/** The title of the GraphiQL page. */
const GRAPHIQL_TITLE = "Switchyard GraphiQL";

const ICON = `data:image/svg+xml;base64,${fs.readFileSync(new URL("../pages/icon.svg", import.meta.url)).toString("base64")}`;

const DEFAULT_QUERY = `# Switchyard GraphiQL: generation and cloud,
# one graph.
#
# The catalog below needs no key. For your
# own account (balance, tasks, orders), add
# your key under "Headers" below:
#   {"Authorization": "Bearer <API key>"}
#
# Run: Ctrl-Enter (Cmd-Enter on a Mac).
# The schema: documentation explorer, left.

{
  models {
    id
    name
    kind
  }
}
`;

/**
 * The gateway's `graphiql` option in development: replaces the gateway's own title, logo, icon and
 * welcome query ("Hive Gateway") with ours.
 */
export const graphiqlOptions = {
  title: GRAPHIQL_TITLE,
  logo: `<a href="/" title="Switchyard" style="display:flex"><img src="${ICON}" alt="Switchyard" width="24" height="24"></a>`,
  favicon: ICON,
  defaultQuery: DEFAULT_QUERY,
};

/**
 * The gateway's `renderGraphiQL` option: the GraphiQL page, with the options the gateway resolved
 * (ours above, merged over its defaults) in a JSON data block that graphiql-start.js reads.
 * @param options GraphiQL options (title, favicon, logo, defaultQuery, …), JSON-serializable
 * @returns the HTML page
 */
export function renderGraphiQL(options: Record<string, unknown> = {}): string {
  const title = escapeHtml(String(options.title ?? GRAPHIQL_TITLE));
  const favicon = escapeHtml(String(options.favicon ?? ICON));
  // `<` escaped: the JSON cannot close its script element.
  const json = JSON.stringify(options).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="icon" href="${favicon}">
<link rel="stylesheet" href="${DEVTOOLS_ASSET_BASE}/graphiql.css">
<script defer src="${DEVTOOLS_ASSET_BASE}/graphiql.js"></script>
<script defer src="${DEVTOOLS_ASSET_BASE}/graphiql-start.js"></script>
<script type="application/json" id="graphiql-options">${json}</script>
</head>
<body id="body" class="no-focus-outline">
<noscript>GraphiQL needs JavaScript.</noscript>
<div id="root">Loading ${title}…</div>
</body>
</html>
`;
}

/** How the GraphiQL page's CSP differs from the pages' (why: module docstring). */
const CSP_CHANGES = {
  "style-src": "'self' 'unsafe-inline'",
  "img-src": "'self' data:",
  "media-src": null,
  "font-src": "'self' data:",
  "worker-src": "'self'",
};

/**
 * Gives the GraphiQL page (the gateway's only HTML answer) the headers of our pages: its CSP,
 * no framing, no sniffing, no referrer, `no-cache`.
 */
export const graphiqlHeaders: GatewayPlugin = {
  onResponse({ request, response }) {
    if (request.method !== "GET" || !response.headers.get("content-type")?.startsWith("text/html")) return;
    response.headers.set("content-type", "text/html; charset=utf-8");
    response.headers.set("content-security-policy", contentSecurityPolicy(request.headers.get("host"), CSP_CHANGES));
    response.headers.set("x-frame-options", "DENY");
    response.headers.set("x-content-type-options", "nosniff");
    response.headers.set("referrer-policy", "no-referrer");
    response.headers.set("cross-origin-opener-policy", "same-origin");
    response.headers.set("cache-control", "no-cache");
  },
};
