/**
 * The pages' serving rules (router/http/assets.ts, router/pages.ts): content negotiation of encodings and the CSP.
 */
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { contentSecurityPolicy, pickEncoding } from "../../router/http/assets.ts";
import { createPages } from "../../router/pages.ts";

describe("pickEncoding", () => {
  it("prefers br, then gzip, honours q=0 and *, and falls back to identity", () => {
    expect(pickEncoding("gzip, deflate, br, zstd")).toBe("br");
    expect(pickEncoding("gzip, deflate")).toBe("gzip");
    expect(pickEncoding("br;q=0, gzip;q=0.5")).toBe("gzip");
    expect(pickEncoding("*")).toBe("br");
    expect(pickEncoding("*, br;q=0")).toBe("gzip");
    expect(pickEncoding("identity")).toBe("identity");
    expect(pickEncoding(undefined)).toBe("identity");
    expect(pickEncoding("")).toBe("identity");
  });
});

describe("contentSecurityPolicy", () => {
  it("allows this origin only (and its WebSockets), and drops a Host header that is not a plain host", () => {
    const csp = contentSecurityPolicy("127.0.0.1:4000");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self' ws://127.0.0.1:4000 wss://127.0.0.1:4000");
    expect(contentSecurityPolicy("[::1]:4000")).toContain("ws://[::1]:4000");
    expect(contentSecurityPolicy("evil.example; script-src *")).toContain("connect-src 'self';");
    expect(contentSecurityPolicy(undefined)).toContain("connect-src 'self';");
  });
});

describe("createPages", () => {
  it("versions the assets by their content", () => {
    const pages = createPages();
    expect(pages.assets.base).toMatch(/^\/assets\/[0-9a-f]{12}$/);
    expect(createPages().assets.base).toBe(pages.assets.base);
  });

  it("serves the server's own money and page-size modules to the pages, byte for byte", async () => {
    const pages = createPages();
    for (const name of ["money.js", "page-size.js"]) {
      const served = await (await pages.assets.file(name)!).body("identity");
      expect(served.equals(fs.readFileSync(new URL(`../../src/shared/${name}`, import.meta.url)))).toBe(true);
    }
  });
});
