/**
 * The router's edge toward browsers (issue 20, finding 8; README "Security model"): CORS is the
 * explicit setting CORS_ORIGINS (exact origins; none by default), never with
 * `Access-Control-Allow-Credentials` or a reflected origin, preflights answered for allowed
 * origins only, on every path; and every body the router acts on is `application/json` (415
 * otherwise): a page elsewhere cannot have a browser post a form or `text/plain` body without a
 * preflight. GET `/graphql` runs queries only (405 with `Allow: POST` for a mutation).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const ALLOWED = "https://app.example.com";
const OTHER = "https://evil.example";
const SUBMIT = `mutation { submitVideoGeneration(input: { prompt: "a heron", modelId: 52, seconds: 5 }) { task { id } } }`;
/** One path of each surface, as a browser page would call it. */
const PATHS = ["/graphql", "/api/v1/usage", "/openapi/v1/vendors"];

/** The Access-Control-* headers of an answer. */
const corsHeaders = (response: Response) => Object.fromEntries([...response.headers].filter(([name]) => name.startsWith("access-control-")));

/** A preflight as a browser sends it before a cross-origin POST with a key. */
const preflight = (t: TestStack, path: string, origin: string) =>
  fetch(`${t.url}${path}`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
  });

describe("CORS with CORS_ORIGINS unset (the default)", () => {
  let t: TestStack;
  let key: string;
  beforeAll(async () => {
    t = await startTestStack();
    ({ key } = await t.createKey("10"));
  });
  afterAll(() => t?.close());

  it("refuses every preflight with 403 and no Access-Control-* header, on every surface", async () => {
    for (const path of PATHS) {
      const answer = await preflight(t, path, OTHER);
      expect([path, answer.status, corsHeaders(answer)]).toEqual([path, 403, {}]);
    }
  });

  it("answers a request that carries an Origin without echoing it or allowing credentials", async () => {
    const graph = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { origin: OTHER, authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "{ viewer { balance { amount } } }" }),
    });
    expect(graph.status).toBe(200);
    expect(corsHeaders(graph)).toEqual({});
    const rest = await fetch(`${t.url}/api/v1/usage`, { headers: { origin: OTHER, authorization: `Bearer ${key}` } });
    expect(corsHeaders(rest)).toEqual({});
  });
});

describe("CORS with CORS_ORIGINS set", () => {
  let t: TestStack;
  let key: string;
  beforeAll(async () => {
    t = await startTestStack({ CORS_ORIGINS: `${ALLOWED}, http://localhost:5173` });
    ({ key } = await t.createKey("10"));
  });
  afterAll(() => t?.close());

  it("answers an allowed origin's preflight with that origin, the API's methods and headers, and no credentials, on every surface", async () => {
    for (const path of PATHS) {
      const answer = await preflight(t, path, ALLOWED);
      expect([path, answer.status]).toEqual([path, 204]);
      expect(corsHeaders(answer)).toEqual({
        "access-control-allow-origin": ALLOWED,
        "access-control-allow-methods": "GET, POST, PUT, DELETE",
        "access-control-allow-headers": expect.stringContaining("authorization"),
        "access-control-max-age": "600",
      });
      expect(answer.headers.get("vary")).toBe("Origin");
    }
  });

  it("refuses another origin's preflight with 403 and never answers it with its origin, * or null", async () => {
    for (const origin of [OTHER, "null", `${ALLOWED}.evil.example`, "http://app.example.com"]) {
      const answer = await preflight(t, "/graphql", origin);
      expect([origin, answer.status, corsHeaders(answer)]).toEqual([origin, 403, {}]);
    }
  });

  it("lets an allowed origin read the answer and its request id, and gives another origin nothing", async () => {
    const call = (origin: string) => fetch(`${t.url}/api/v1/usage`, { headers: { origin, authorization: `Bearer ${key}` } });
    const allowed = await call(ALLOWED);
    expect(corsHeaders(allowed)).toEqual({
      "access-control-allow-origin": ALLOWED,
      "access-control-expose-headers": expect.stringContaining("x-request-id"),
    });
    expect(allowed.headers.get("vary")).toBe("Origin");
    expect(corsHeaders(await call(OTHER))).toEqual({});
  });
});

describe("content types", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t?.close());

  const balanceOf = async (key: string) => (await t.rest("GET", "/api/v1/usage?limit=1", { key })).body.data.balance;

  it("refuses a /graphql POST that is not application/json with 415 and runs nothing: a form, text/plain, multipart, no type", async () => {
    const { key } = await t.createKey("10");
    const bodies: [string | undefined, string][] = [
      ["application/x-www-form-urlencoded", new URLSearchParams({ query: SUBMIT }).toString()],
      ["text/plain", JSON.stringify({ query: SUBMIT })],
      ["multipart/form-data; boundary=x", `--x\r\nContent-Disposition: form-data; name="query"\r\n\r\n${SUBMIT}\r\n--x--\r\n`],
      ["application/graphql", SUBMIT],
      [undefined, JSON.stringify({ query: SUBMIT })],
    ];
    for (const [type, body] of bodies) {
      for (const accept of ["application/json", "text/event-stream"]) {
        const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept };
        if (type) headers["content-type"] = type;
        const answer = await fetch(`${t.url}/graphql`, { method: "POST", headers, body });
        expect([type, accept, answer.status, await answer.json()]).toEqual([
          type,
          accept,
          415,
          { errors: [{ message: "Content-Type must be application/json", extensions: { code: "unsupported_media_type", http: { status: 415 } } }] },
        ]);
      }
    }
    expect(await balanceOf(key)).toBe(10);
    // application/json with a charset runs.
    const json = await t.graphql(SUBMIT, {}, key, { "content-type": "application/json; charset=utf-8" });
    expect(json.body.data.submitVideoGeneration.task.id).toMatch(/^task_/);
  });

  it("runs queries over GET and answers a mutation over GET 405 with Allow: POST", async () => {
    const { key } = await t.createKey("10");
    const get = (query: string) => fetch(`${t.url}/graphql?query=${encodeURIComponent(query)}`, { headers: { authorization: `Bearer ${key}` } });
    expect(await (await get("{ viewer { balance { amount } } }")).json()).toEqual({ data: { viewer: { balance: { amount: "10.00" } } } });
    const mutation = await get(SUBMIT);
    expect(mutation.status).toBe(405);
    expect(mutation.headers.get("allow")).toBe("POST");
    expect((await mutation.json()).errors[0].extensions).toEqual({ code: "method_not_allowed", http: { status: 405 } });
    expect(await balanceOf(key)).toBe(10);
  });

  it("refuses a REST body that is not application/json with 415 after the key check, charging nothing", async () => {
    const { key } = await t.createKey("10");
    const post = (path: string, type: string, withKey = true) =>
      fetch(`${t.url}${path}`, {
        method: "POST",
        headers: { "content-type": type, ...(withKey ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ model_id: 52, prompt: "a heron", seconds: 5 }),
      });
    const form = await post("/api/v1/video/generations", "application/x-www-form-urlencoded");
    expect([form.status, await form.json()]).toEqual([415, { code: 415, message: "Content-Type must be application/json" }]);
    const plain = await post("/api/v1/images/generations", "text/plain");
    expect(plain.status).toBe(415);
    // The key comes first, as for every other body error.
    expect((await post("/api/v1/video/generations", "text/plain", false)).status).toBe(401);
    expect(await balanceOf(key)).toBe(10);

    const cloud = await post("/openapi/v1/orders", "text/plain");
    expect([cloud.status, await cloud.json()]).toEqual([
      415,
      {
        success: false,
        request_id: cloud.headers.get("x-request-id"),
        error: { code: "unsupported_media_type", message: "Content-Type must be application/json", details: {} },
      },
    ]);
    // A renewal may have no body at all, and needs no type then.
    const renew = await fetch(`${t.url}/openapi/v1/orders/ord_missing/renew`, { method: "POST", headers: { authorization: `Bearer ${key}` } });
    expect(renew.status).toBe(404);
  });
});

describe("CORS_ORIGINS", () => {
  it("is read as exact origins", () => {
    expect(loadConfig({ CORS_ORIGINS: " https://a.example.com ,http://localhost:5173" }).corsOrigins).toEqual([
      "https://a.example.com",
      "http://localhost:5173",
    ]);
    expect(loadConfig({}).corsOrigins).toEqual([]);
  });

  it.each(["*", "https://a.example.com/", "https://a.example.com/app", "a.example.com", "ftp://a.example.com"])("refuses %j naming the variable", (value) => {
    expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(/^Invalid configuration: CORS_ORIGINS: must be comma-separated origins/);
  });
});
