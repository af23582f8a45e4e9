/**
 * Bad input everywhere, generation REST surface (`/api/v1/*`, `/health`): property-based requests
 * with wrong types, huge, deeply nested and unicode-heavy fields, broken JSON, wrong content
 * types, bad keys, bad paths and query strings. Every answer is a status the generation OpenAPI
 * document lists for the route, below 500, with the `{code, message}` body and no leaked
 * internals; nothing a rejected request touches is written.
 *
 * The key has a zero balance, so even a body that happens to be valid is refused (402) and no
 * property can create a task.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import {
  badAuthorization,
  checkProperty,
  closeClients,
  contentType,
  describeRequest,
  expectDocumented,
  expectNoLeak,
  expectNoWrites,
  expectUnrouted,
  hugeString,
  nastyString,
  notAJsonObject,
  notOfKind,
  pathSegment,
  PROPERTY_TIMEOUT_MS,
  queryString,
  send,
  sendRaw,
  snapshot,
  toJsonText,
  unknownFields,
  wildValue,
  type FieldKind,
} from "./support.ts";

vi.setConfig({ testTimeout: PROPERTY_TIMEOUT_MS });

const BODY_LIMIT = 65_536;
let t: TestStack;
let key: string;

beforeAll(async () => {
  // DNS on a closed port: a reference URL that names a host is refused at once, never looked up.
  t = await startTestStack({ BODY_LIMIT_BYTES: String(BODY_LIMIT), DNS_SERVERS: "127.0.0.1:9" });
  key = (await t.createKey("0")).key;
});
afterAll(async () => {
  closeClients();
  await t?.close();
});

const INVALID_JSON = "Request body must be valid JSON";
const TOO_DEEP = "Request body is nested too deeply: at most 64 levels of objects and arrays";
const VIDEO = "/api/v1/video/generations";
const IMAGE = "/api/v1/images/generations";

/** The request fields of each submission and their JSON kinds (docs/api/generation.md §2). */
const VIDEO_FIELDS: Record<string, FieldKind> = {
  prompt: "string",
  model_id: "integer",
  size: "string",
  seconds: "integer",
  resolution: "string",
  count: "integer",
  reference_image: "string",
  reference_images: "array",
  frame_start: "string",
  frame_end: "string",
  reference_audio: "string",
  reference_audios: "array",
  reference_video: "string",
  reference_videos: "array",
};
const IMAGE_FIELDS: Record<string, FieldKind> = {
  prompt: "string",
  model_id: "integer",
  size: "string",
  resolution: "string",
  count: "integer",
  reference_image: "string",
  reference_images: "array",
};

/** A valid body with some fields replaced by hostile values, some removed, and unknown ones added. */
function mutatedBody(base: Record<string, unknown>, fields: Record<string, FieldKind>) {
  const names = Object.keys(fields);
  const replacement = fc
    .constantFrom(...names)
    .chain((name) => fc.tuple(fc.constant(name), fc.oneof(notOfKind(fields[name]!), wildValue, fc.array(wildValue, { maxLength: 12 }))));
  return fc
    .record({
      replaced: fc.array(replacement, { minLength: 1, maxLength: 4 }),
      removed: fc.subarray(names, { maxLength: 2 }),
      extra: unknownFields,
    })
    .map(({ replaced, removed, extra }) => {
      const body: Record<string, unknown> = { ...extra, ...base };
      for (const name of removed) delete body[name];
      for (const [name, value] of replaced) body[name] = value;
      return body;
    });
}

/** Headers a client may add: language, request id, casing of the content type. */
const extraHeaders = fc.record(
  {
    "accept-language": fc.constantFrom("en", "zh-CN", "*", "xx;q=abc", "en-US,en;q=0.9", ""),
    "x-request-id": fc.oneof(fc.stringMatching(/^[A-Za-z0-9._:-]{1,80}$/), fc.string({ unit: "grapheme-ascii", maxLength: 120 })),
    accept: fc.constantFrom("application/json", "*/*", "text/html", "application/xml"),
  },
  { requiredKeys: [] },
);

describe("submissions", () => {
  it.each([
    ["video", VIDEO, { prompt: "a lighthouse at dusk", model_id: 52, seconds: 5 }, VIDEO_FIELDS],
    ["image", IMAGE, { prompt: "a red fox", model_id: 45 }, IMAGE_FIELDS],
  ] as const)("answers a documented 4xx and writes nothing for %s bodies with wrong, huge, deep or unicode fields", async (_kind, path, base, fields) => {
    await checkProperty(
      fc.asyncProperty(mutatedBody(base, fields), extraHeaders, async (body, headers) => {
        const text = toJsonText(body);
        const before = await snapshot(t.stack.db!);
        const all = { ...headers, authorization: `Bearer ${key}`, "content-type": "application/json" };
        const where = describeRequest("POST", path, text, headers);
        const answer = await send(t.url, "POST", path, { headers: all, body: text });
        // Invalid (400), too large (413), or valid and refused for the empty balance (402).
        expectDocumented("generation", "POST", path, answer, where, (s) => [400, 402, 413].includes(s));
        if (answer.status === 413) expect(Buffer.byteLength(text), where).toBeGreaterThan(BODY_LIMIT);
        await expectNoWrites(t.stack.db!, before, where);
      }),
    );
  });

  it.each([VIDEO, IMAGE])("answers 400 (or 413) to a body that is not a JSON object, 415 when it is not declared JSON: %s", async (path) => {
    await checkProperty(
      fc.asyncProperty(notAJsonObject, contentType, async (body, type) => {
        const before = await snapshot(t.stack.db!);
        const where = describeRequest("POST", path, body, { "content-type": type });
        const answer = await send(t.url, "POST", path, { headers: { authorization: `Bearer ${key}`, "content-type": type }, body });
        const declaredJson = /^application\/json\s*(;|$)/i.test(type ?? "") || body.length === 0;
        expectDocumented("generation", "POST", path, answer, where, (s) => s === 413 || s === (declaredJson ? 400 : 415));
        if (answer.status === 400) expect([INVALID_JSON, TOO_DEEP], where).toContain(answer.body.message);
        await expectNoWrites(t.stack.db!, before, where);
      }),
    );
  });

  it("answers a documented 4xx to JSON whose strings hold bytes that are not UTF-8", async () => {
    const bytes = fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b) => Buffer.from(b.map((x) => (x === 0x22 || x === 0x5c || x < 0x20 ? 0xff : x))));
    await checkProperty(
      fc.asyncProperty(bytes, fc.constantFrom("prompt", "size", "resolution", "reference_image"), async (raw, field) => {
        const body = Buffer.concat([Buffer.from(`{"prompt":"x","${field}":"`), raw, Buffer.from('"}')]);
        const before = await snapshot(t.stack.db!);
        const where = describeRequest("POST", VIDEO, body);
        const answer = await send(t.url, "POST", VIDEO, { headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
        expectDocumented("generation", "POST", VIDEO, answer, where, (s) => s === 400 || s === 402);
        await expectNoWrites(t.stack.db!, before, where);
      }),
    );
  });

  it("answers 400 with the spec's message for each field of the wrong JSON type", async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.constantFrom(...Object.keys(VIDEO_FIELDS)).chain((name) => fc.tuple(fc.constant(name), notOfKind(VIDEO_FIELDS[name]!))),
        async ([name, value]) => {
          const body = toJsonText({ prompt: "a lighthouse", [name]: value });
          const where = describeRequest("POST", VIDEO, body);
          const answer = await send(t.url, "POST", VIDEO, { headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
          expectDocumented("generation", "POST", VIDEO, answer, where, (s) => s === 400 || (s === 413 && Buffer.byteLength(body) > BODY_LIMIT));
          if (answer.status === 413) return;
          const message = answer.body.message as string;
          expect(message, where).toMatch(new RegExp(`^(${name} |${INVALID_JSON}|${TOO_DEEP}|prompt must|model_id must)`));
        },
      ),
    );
  });
});

describe("keys and headers", () => {
  const routes = [
    ["POST", VIDEO, VIDEO],
    ["POST", IMAGE, IMAGE],
    ["GET", "/api/v1/tasks/{task_id}", "/api/v1/tasks/task_x"],
    ["GET", "/api/v1/usage", "/api/v1/usage?limit=5"],
  ] as const;

  it("answers 401 on every route to a missing, malformed or unknown key, whatever the body", async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        badAuthorization,
        fc.option(notAJsonObject, { nil: undefined }),
        async ([method, template, path], authorization, body) => {
          const where = describeRequest(method, path, body, { authorization });
          const answer = await send(t.url, method, path, {
            headers: { authorization, "content-type": "application/json" },
            body: method === "POST" ? (body ?? "{}") : undefined,
          });
          expectDocumented("generation", method, template, answer, where, (s) => s === 401);
          expect(answer.body.message, where).toBe("Invalid or missing API key");
        },
      ),
    );
  });

  it("answers 401 to a valid key with a forged, stale or malformed X-Service-Signature", async () => {
    const signature = fc.oneof(
      fc.constantFrom(
        "",
        "t=",
        "v1=",
        "t=1,v1=00",
        `t=${Math.floor(Date.now() / 1000)},v1=${"0".repeat(64)}`,
        "t=99999999999999999999,v1=ab",
        "t=-1,v1=zz",
        "t=1.5e9,v1=",
        ",,,,",
      ),
      fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 300 }),
    );
    await checkProperty(
      fc.asyncProperty(fc.constantFrom(...routes), signature, async ([method, template, path], value) => {
        const where = describeRequest(method, path, undefined, { "x-service-signature": value });
        const answer = await send(t.url, method, path, {
          headers: { authorization: `Bearer ${key}`, "x-service-signature": value, "content-type": "application/json" },
          body: method === "POST" ? '{"prompt":"x"}' : undefined,
        });
        // An empty header value (HTTP trims blanks) is no signature at all: the key's other answers apply.
        expectDocumented("generation", method, template, answer, where, (s) => s === 401 || (value.trim() === "" && s < 500));
      }),
    );
  });
});

describe("paths and query strings", () => {
  it("answers 404 Task not found (or the unrouted 404) to any task id the key does not own", async () => {
    await checkProperty(
      fc.asyncProperty(pathSegment, async (segment) => {
        const path = `/api/v1/tasks/${segment}`;
        const where = describeRequest("GET", path);
        const answer = await send(t.url, "GET", path, { headers: { authorization: `Bearer ${key}` } });
        // Dot segments and encoded slashes may leave the route: then it is the router's 404.
        if (answer.status === 404 && answer.body?.message === "Not found") return expectUnrouted("generation", answer, where);
        expectDocumented("generation", "GET", "/api/v1/tasks/{task_id}", answer, where, (s) => s === 404);
      }),
    );
  });

  it("answers 404 Task not found to task ids holding NUL, newlines or non-Latin-1 text (regression: 503)", async () => {
    for (const id of ["%00", "%0A", "%0D%0A", "%E7%95%8C", "%F0%9F%98%80", "a%00b"]) {
      const answer = await send(t.url, "GET", `/api/v1/tasks/${id}`, { headers: { authorization: `Bearer ${key}` } });
      expect(answer.body, id).toEqual({ code: 404, message: "Task not found" });
    }
  });

  it("answers usage (200) or 400 to any query string", async () => {
    await checkProperty(
      fc.asyncProperty(queryString(["limit", "cursor", "first"]), async (query) => {
        const path = `/api/v1/usage?${query}`;
        const where = describeRequest("GET", path);
        const answer = await send(t.url, "GET", path, { headers: { authorization: `Bearer ${key}` } });
        expectDocumented("generation", "GET", "/api/v1/usage", answer, where, (s) => s === 200 || s === 400);
      }),
    );
  });

  it("answers 404 or 405 with the error body to unknown paths and methods", async () => {
    const method = fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND", "M-SEARCH");
    const path = fc.oneof(
      fc.array(pathSegment, { minLength: 1, maxLength: 4 }).map((segments) => `/api/v1/${segments.join("/")}`),
      fc.constantFrom("/api/v1/video/generations", "/api/v1/usage", "/api/v1/tasks", "/api/v2/usage", "/api", "/", "//", "/api/v1/tasks/a/b"),
    );
    await checkProperty(
      fc.asyncProperty(method, path, async (m, p) => {
        const where = describeRequest(m, p);
        const answer = await send(t.url, m, p, { headers: { authorization: `Bearer ${key}` } });
        if (answer.status < 400) return; // a documented route with its method (GET /api/v1/usage)
        if (answer.status === 401 || answer.status === 400 || answer.status === 402) return expectNoLeak(answer.text, where); // routed, refused
        expectUnrouted("generation", answer, where);
      }),
    );
  });

  it("answers the public routes whatever the query string", async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.constantFrom("/health", "/api/v1/openapi.json"),
        queryString(["limit", "format"]),
        badAuthorization,
        async (route, query, authorization) => {
          const where = describeRequest("GET", `${route}?${query}`);
          const answer = await send(t.url, "GET", `${route}?${query}`, { headers: { authorization } });
          expectDocumented("generation", "GET", route, answer, where, (s) => s === 200);
        },
      ),
      10,
    );
  });
});

describe("malformed requests the HTTP layer still hands to the router", () => {
  it("answers 400 to a request target that is no URL, and keeps serving (regression: it crashed the router)", async () => {
    for (const target of ["http://[::1", "http://a:b@/x", "//[", "http://%zz/"]) {
      const raw = await sendRaw(t.url, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(raw, target).toMatch(/^HTTP\/1\.1 400 /);
      expect(raw, target).toContain('{"code":400,"message":"Malformed request URL"}');
    }
    expect((await send(t.url, "GET", "/health")).status).toBe(200);
  });

  it("answers 400 to a body nested thousands of levels deep, in any field (regression: 500 for the cloud shim)", async () => {
    for (const depth of [65, 5_000, 20_000]) {
      const body = `{"prompt":"x","reference_images":${"[".repeat(depth)}${"]".repeat(depth)}}`;
      const answer = await send(t.url, "POST", VIDEO, { headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
      expect(answer.body, String(depth)).toEqual({ code: 400, message: TOO_DEEP });
    }
    const shallow = `{"prompt":"x","reference_images":${"[".repeat(60)}${"]".repeat(60)}}`;
    expect(
      (await send(t.url, "POST", VIDEO, { headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: shallow })).body.message,
    ).toBe("reference_images must be a public HTTPS URL");
  });

  it("answers every request with a body of huge unicode text without a 5xx", async () => {
    await checkProperty(
      fc.asyncProperty(fc.oneof(hugeString(10_000, 60_000), nastyString), async (prompt) => {
        const body = JSON.stringify({ prompt, model_id: 52 });
        const where = describeRequest("POST", VIDEO, body);
        const answer = await send(t.url, "POST", VIDEO, { headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
        expectDocumented("generation", "POST", VIDEO, answer, where, (s) => [400, 402, 413].includes(s));
      }),
      10,
    );
  });
});
