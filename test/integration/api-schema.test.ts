/**
 * `GET /graphql/schema.graphql` (issue 21 §2; router/http/api-schema.ts): the committed API
 * schema, served in production too (where introspection stays off), as
 * `application/graphql; charset=utf-8`, cacheable and revalidated with an ETag.
 */
import fs from "node:fs";
import { get } from "node:http";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_SCHEMA_FILE } from "../../router/compose.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

describe("GET /graphql/schema.graphql in production (NODE_ENV=production)", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack({ NODE_ENV: "production" });
  });
  afterAll(() => t.close());

  it("answers schema/api.graphql as application/graphql with an ETag, no key needed", async () => {
    const response = await fetch(`${t.url}/graphql/schema.graphql`, { headers: { "accept-encoding": "identity" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/graphql; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("public, no-cache");
    expect(response.headers.get("etag")).toMatch(/^"[\w-]{22}"$/);
    expect(await response.text()).toBe(fs.readFileSync(API_SCHEMA_FILE, "utf8"));
  });

  it("answers 304 without a body to a client that has the same version", async () => {
    const first = await fetch(`${t.url}/graphql/schema.graphql`, { headers: { "accept-encoding": "gzip" } });
    const etag = first.headers.get("etag")!;
    expect(first.headers.get("content-encoding")).toBe("gzip");
    const again = await fetch(`${t.url}/graphql/schema.graphql`, { headers: { "accept-encoding": "gzip", "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    // fetch decodes gzip: read the raw body with node:http to see the file compressed.
    const raw = await new Promise<Buffer>((resolve, reject) => {
      get(`${t.url}/graphql/schema.graphql`, { headers: { "accept-encoding": "gzip" } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve(Buffer.concat(chunks)));
      }).on("error", reject);
    });
    expect(gunzipSync(raw).toString("utf8")).toBe(fs.readFileSync(API_SCHEMA_FILE, "utf8"));
  });

  it("while introspection stays off on /graphql", async () => {
    const { key } = await t.createKey("1");
    const { body } = await t.graphql("{ __schema { queryType { name } } }", {}, key);
    expect(body.data ?? null).toBeNull();
    expect(body.errors[0].message).toMatch(/^GraphQL introspection has been disabled/);
  });
});
