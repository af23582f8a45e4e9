/**
 * Bad input everywhere, cloud REST surface (`/openapi/v1/*`): property-based requests on every
 * route — creates with wrong, huge, deeply nested and unicode-heavy fields, broken JSON, wrong
 * content types, bad keys, bad path parameters and query strings. Every answer is a status the
 * cloud OpenAPI document lists for the route, below 500, in the envelope or the error body
 * `{success:false, request_id, error:{code, message, details}}`, with no leaked internals; a
 * rejected request writes nothing and the books stay balanced.
 *
 * Each create body is a valid one with at least one field made invalid, so no property creates
 * anything; the order, domain and resource they aim at are made once, before any property runs.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { parseYuan } from "../../src/money.ts";
import {
  badAuthorization,
  checkProperty,
  closeClients,
  contentType,
  describeRequest,
  expectDocumented,
  expectNoWrites,
  expectUnrouted,
  isDotSegment,
  nastyString,
  notAJsonObject,
  notOfKind,
  pathSegment,
  PROPERTY_TIMEOUT_MS,
  queryString,
  RawJson,
  send,
  snapshot,
  toJsonText,
  unknownFields,
  wildValue,
  type Answer,
  type FieldKind,
} from "./support.ts";

vi.setConfig({ testTimeout: PROPERTY_TIMEOUT_MS });

const BODY_LIMIT = 65_536;
const API = "/openapi/v1";
let t: TestStack;
let key: string;
let orderId: string;
let resourceId: string;
let domain: string;

beforeAll(async () => {
  t = await startTestStack({ BODY_LIMIT_BYTES: String(BODY_LIMIT) });
  const created = await t.createKey("0");
  key = created.key;
  await topUpCustomer(t.stack.db!, { accountId: created.account_id, customerId: "cust-1", amount: parseYuan("1000") });
  const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const order = await send(t.url, "POST", `${API}/orders`, {
    headers: auth,
    body: JSON.stringify({
      client_order_no: "fuzz-base",
      product_id: "prd_cdn_standard",
      quantity: 1,
      billing_cycle: "monthly",
      customer: { customer_id: "cust-1", contact: "ops@example.com" },
      metadata: { domain: "fuzz.example.com" },
    }),
  });
  expect(order.status, order.text).toBe(201);
  orderId = order.body.data.order_id;
  const active = await t.waitForAccount(
    key,
    () => send(t.url, "GET", `${API}/orders/${orderId}`, { headers: auth }),
    (a) => a.body?.data?.status === "active",
  );
  resourceId = active.body.data.resource_id;
  domain = "cdn.fuzz.example.com";
  const created2 = await send(t.url, "POST", `${API}/domains`, {
    headers: auth,
    body: JSON.stringify({ domain, origin: { type: "ip", address: "93.184.216.34", port: 443 }, protocol: "https", order_id: orderId, customer_id: "cust-1" }),
  });
  expect(created2.status, created2.text).toBe(201);
});
afterAll(async () => {
  closeClients();
  await t?.close();
});

const auth = () => ({ authorization: `Bearer ${key}` });

/** One field of a create body: its JSON kind and, for enumerations, any string is invalid too. */
interface FieldSpec {
  kind: FieldKind;
  enumerated?: boolean;
  /** Nested fields of an object field (their invalid values make the parent invalid). */
  nested?: Record<string, FieldSpec>;
}

/** A value `spec` certainly refuses. */
function invalidValue(spec: FieldSpec): fc.Arbitrary<unknown> {
  const choices: fc.Arbitrary<unknown>[] = [notOfKind(spec.kind)];
  if (spec.enumerated) choices.push(nastyString);
  if (spec.nested) {
    const names = Object.keys(spec.nested);
    choices.push(fc.constantFrom(...names).chain((name) => invalidValue(spec.nested![name]!).map((value) => ({ name, value }))));
  }
  return fc.oneof(...choices);
}

/**
 * A valid body with 1-3 fields made invalid (a nested field replaces only itself), a few others
 * replaced by any value, and unknown fields added.
 */
function invalidBody(base: Record<string, any>, fields: Record<string, FieldSpec>): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(fields);
  const broken = fc.constantFrom(...names).chain((name) => invalidValue(fields[name]!).map((value) => [name, value] as const));
  const noise = fc.constantFrom(...names).chain((name) => wildValue.map((value) => [name, value] as const));
  return fc
    .record({ broken: fc.array(broken, { minLength: 1, maxLength: 3 }), noise: fc.array(noise, { maxLength: 2 }), extra: unknownFields })
    .map(({ broken, noise, extra }) => {
      const body: Record<string, any> = { ...extra, ...structuredClone(base) };
      for (const [name, value] of noise) body[name] = value;
      for (const [name, value] of broken) {
        const nested = value as { name?: string; value?: unknown } | null;
        if (
          fields[name]!.nested &&
          nested &&
          typeof nested === "object" &&
          "name" in nested &&
          typeof nested.name === "string" &&
          nested.name in fields[name]!.nested!
        ) {
          body[name] = { ...(base[name] as object), [nested.name]: nested.value };
        } else body[name] = value;
      }
      return body;
    });
}

const ORDER_FIELDS: Record<string, FieldSpec> = {
  client_order_no: { kind: "string" },
  product_id: { kind: "string" },
  quantity: { kind: "integer" },
  billing_cycle: { kind: "string", enumerated: true },
  customer: { kind: "object", nested: { customer_id: { kind: "string" } } },
  metadata: { kind: "object", nested: { domain: { kind: "string" } } },
};
const DOMAIN_FIELDS: Record<string, FieldSpec> = {
  domain: { kind: "string" },
  origin: { kind: "object", nested: { type: { kind: "string", enumerated: true }, address: { kind: "string" }, port: { kind: "integer" } } },
  protocol: { kind: "string", enumerated: true },
  order_id: { kind: "string" },
  customer_id: { kind: "string" },
};
const PURGE_FIELDS: Record<string, FieldSpec> = {
  type: { kind: "string", enumerated: true },
  targets: { kind: "array" },
};
const RENEW_FIELDS: Record<string, FieldSpec> = {
  periods: { kind: "integer" },
  billing_cycle: { kind: "string", enumerated: true },
};

/** Headers a client may add to a create: a hostile Idempotency-Key, request id, language. */
const writeHeaders = fc.record(
  {
    "idempotency-key": fc.oneof(fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 300 }), fc.constantFrom("", " ", "k".repeat(256))),
    "x-request-id": fc.string({ unit: "grapheme-ascii", maxLength: 100 }),
    "accept-language": fc.constantFrom("en", "zh", "*;q=x"),
  },
  { requiredKeys: [] },
);

/** Sends a create and checks the answer is a documented refusal and nothing was written. */
async function expectRefusedCreate(template: string, path: string, body: string | Buffer, headers: Record<string, string | undefined>): Promise<Answer> {
  const before = await snapshot(t.stack.db!);
  const where = describeRequest("POST", path, body, headers);
  const answer = await send(t.url, "POST", path, { headers: { ...auth(), "content-type": "application/json", ...headers }, body });
  expectDocumented("cloud", "POST", `${API}${template}`, answer, where, (s) => s >= 400 && (s !== 413 || Buffer.byteLength(body) > BODY_LIMIT));
  if (answer.body?.request_id) expect(answer.body.request_id, where).toBe(answer.headers["x-request-id"]);
  await expectNoWrites(t.stack.db!, before, where);
  return answer;
}

describe("creates refuse invalid bodies with a documented 4xx and write nothing", () => {
  const base = {
    order: () => ({
      client_order_no: "fuzz-new",
      product_id: "prd_cdn_standard",
      quantity: 1,
      billing_cycle: "monthly",
      customer: { customer_id: "cust-1", contact: "ops@example.com" },
      metadata: { domain: "new.fuzz.example.com" },
    }),
    domain: () => ({
      domain: "new.fuzz.example.com",
      origin: { type: "ip", address: "93.184.216.34", port: 443 },
      protocol: "https",
      order_id: orderId,
      customer_id: "cust-1",
    }),
  };

  it("answers 400 to an order whose metadata nests thousands of levels deep (regression: 500)", async () => {
    for (const depth of [5_000, 10_000]) {
      const body = toJsonText({
        ...base.order(),
        client_order_no: "x y",
        metadata: { domain: "a.example.com", deep: new RawJson(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`) },
      });
      const answer = await expectRefusedCreate("/orders", `${API}/orders`, body, { "idempotency-key": `deep-${depth}` });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toEqual({
        code: "invalid_request",
        message: "Request body is nested too deeply: at most 64 levels of objects and arrays",
        details: {},
      });
    }
  });

  it("POST /orders", async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.constant(null).chain(() => invalidBody(base.order(), ORDER_FIELDS)),
        writeHeaders,
        async (body, headers) => {
          await expectRefusedCreate("/orders", `${API}/orders`, toJsonText(body), headers);
        },
      ),
    );
  });

  it("POST /domains", async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.constant(null).chain(() => invalidBody(base.domain(), DOMAIN_FIELDS)),
        writeHeaders,
        async (body, headers) => {
          await expectRefusedCreate("/domains", `${API}/domains`, toJsonText(body), headers);
        },
      ),
    );
  });

  it("POST /domains/{domain}/purge, on the account's domain and on any other", async () => {
    const target = fc.oneof(
      fc.constant(null),
      pathSegment.filter((s) => !isDotSegment(s)),
    );
    await checkProperty(
      fc.asyncProperty(
        fc.constant(null).chain(() => invalidBody({ type: "url", targets: [`https://${domain}/a.png`] }, PURGE_FIELDS)),
        target,
        writeHeaders,
        async (body, segment, headers) => {
          await expectRefusedCreate("/domains/{domain}/purge", `${API}/domains/${segment ?? domain}/purge`, toJsonText(body), headers);
        },
      ),
    );
  });

  it("POST /orders/{order_id}/renew, on the active order and on any other", async () => {
    const target = fc.oneof(
      fc.constant(null),
      pathSegment.filter((s) => !isDotSegment(s)),
    );
    await checkProperty(
      fc.asyncProperty(invalidBody({ periods: 1, billing_cycle: "monthly" }, RENEW_FIELDS), target, writeHeaders, async (body, segment, headers) => {
        const path = `${API}/orders/${segment ?? orderId}/renew`;
        const answer = await expectRefusedCreate("/orders/{order_id}/renew", path, toJsonText(body), headers);
        // A route other than the renew (dot segments) answers its own 404.
        if (segment === null) expect([400, 409, 413, 422], answer.text).toContain(answer.status);
      }),
    );
  });

  it.each(["/orders", "/domains", `/domains/{domain}/purge`, "/orders/{order_id}/renew"])(
    "%s: a body that is not a JSON object, under any content type",
    async (template) => {
      const path = `${API}${template.replace("{domain}", "cdn.fuzz.example.com").replace("{order_id}", "ORDER")}`;
      await checkProperty(
        // An empty renew body is a valid one (renew one period): left out here.
        fc.asyncProperty(
          notAJsonObject.filter((b) => !template.endsWith("/renew") || b.toString().trim() !== ""),
          contentType,
          async (body, type) => {
            const concrete = path.replace("ORDER", orderId);
            const answer = await expectRefusedCreate(template, concrete, body, { "content-type": type });
            if (answer.status === 400) expect(answer.body.error.code).toBe("invalid_request");
          },
        ),
        15,
      );
    },
  );
});

describe("reads answer 200 or a documented 4xx to any parameters", () => {
  /** A GET of the cloud API with the caller's key, checked against its route. */
  async function read(template: string, path: string, allowed: number[]) {
    const before = await snapshot(t.stack.db!);
    const where = describeRequest("GET", path);
    const answer = await send(t.url, "GET", path, { headers: auth() });
    if (answer.status === 404 && answer.body?.error?.message === "Path not found") return expectUnrouted("cloud", answer, where);
    // A dot segment (`.`, `%2e%2e`) is resolved away by URL rules: the path is then another route.
    const segments = (p: string) => new URL(p.split("?")[0]!, "http://x").pathname.replace(/\/+$/, "").split("/").length;
    if (segments(path) !== segments(`${API}${template}`)) {
      expect(answer.status, `${where} → ${answer.status} ${answer.text.slice(0, 300)}`).toBeLessThan(500);
      return expectNoWrites(t.stack.db!, before, where);
    }
    expectDocumented("cloud", "GET", `${API}${template}`, answer, where, (s) => allowed.includes(s));
    await expectNoWrites(t.stack.db!, before, where);
  }

  it.each([
    ["/vendors", ["limit", "cursor"]],
    ["/products", ["limit", "cursor", "category", "vendor_id", "status"]],
    ["/orders", ["limit", "cursor"]],
    ["/resources", ["limit", "cursor", "customer_id"]],
    ["/billing/transactions", ["limit", "cursor", "customer_id", "order_id", "type", "start", "end"]],
    ["/billing/balance", ["customer_id"]],
  ] as const)("GET %s with any query string", async (template, names) => {
    await checkProperty(
      fc.asyncProperty(queryString(names), (query) => read(template, `${API}${template}?${query}`, [200, 400, 404])),
      20,
    );
  });

  it.each(["/usage/bandwidth", "/usage/traffic"])("GET %s with any resource and time range", async (template) => {
    const time = fc.oneof(
      fc.date({ min: new Date("1970-01-01"), max: new Date("2100-01-01"), noInvalidDate: true }).map((d) => encodeURIComponent(d.toISOString())),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
      pathSegment,
      fc.constantFrom("", "now", "0", "-1", "2024-02-30", "2024-13-01", "2024-01-01T25:00:00Z", "9999-12-31", "%2B275760-09-13T00%3A00%3A00.000Z"),
    );
    const resource = fc.oneof(fc.constant(null), pathSegment);
    await checkProperty(
      fc.asyncProperty(resource, time, time, queryString(["resource_id", "start", "end"]), (r, start, end, extra) =>
        read(template, `${API}${template}?resource_id=${r ?? resourceId}&start=${start}&end=${end}&${extra}`, [200, 400, 404]),
      ),
      20,
    );
  });

  it.each([
    ["/products/{product_id}", [200, 404]],
    ["/orders/{order_id}", [200, 404]],
    ["/domains/{domain}/status", [200, 404]],
    ["/billing/statements/{statement_id}", [200, 404]],
    ["/billing/statements/{statement_id}/export", [200, 404, 409]],
  ] as const)("GET %s with any path parameter", async (template, allowed) => {
    await checkProperty(
      fc.asyncProperty(pathSegment, (segment) => read(template, `${API}${template.replace(/\{[^}]+\}/, segment)}`, [...allowed])),
      20,
    );
  });
});

describe("keys, paths and methods", () => {
  const routes: [string, string, string][] = [
    ["GET", "/vendors", "/vendors"],
    ["GET", "/products", "/products?status=available"],
    ["GET", "/products/{product_id}", "/products/prd_cdn_standard"],
    ["POST", "/orders", "/orders"],
    ["GET", "/orders", "/orders"],
    ["GET", "/orders/{order_id}", "/orders/ord_x"],
    ["POST", "/orders/{order_id}/renew", "/orders/ord_x/renew"],
    ["POST", "/domains", "/domains"],
    ["GET", "/domains/{domain}/status", "/domains/a.example.com/status"],
    ["POST", "/domains/{domain}/purge", "/domains/a.example.com/purge"],
    ["GET", "/usage/bandwidth", "/usage/bandwidth?resource_id=r&start=x&end=y"],
    ["GET", "/usage/traffic", "/usage/traffic"],
    ["GET", "/resources", "/resources"],
    ["GET", "/billing/balance", "/billing/balance"],
    ["GET", "/billing/transactions", "/billing/transactions"],
    ["GET", "/billing/statements/{statement_id}", "/billing/statements/stm_2020-01"],
    ["GET", "/billing/statements/{statement_id}/export", "/billing/statements/stm_2020-01/export"],
  ];

  it("answers 401 unauthorized on every route to a missing, malformed or unknown key, whatever the body", async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        badAuthorization,
        fc.option(notAJsonObject, { nil: undefined }),
        async ([method, template, path], authorization, body) => {
          const before = await snapshot(t.stack.db!);
          const where = describeRequest(method, `${API}${path}`, body, { authorization });
          const answer = await send(t.url, method, `${API}${path}`, {
            headers: { authorization, "content-type": "application/json" },
            body: method === "POST" ? (body ?? "{}") : undefined,
          });
          expectDocumented("cloud", method, `${API}${template}`, answer, where, (s) => s === 401);
          expect(answer.body.error.code, where).toBe("unauthorized");
          await expectNoWrites(t.stack.db!, before, where);
        },
      ),
    );
  });

  it("answers a documented 4xx and writes nothing when a key without the write scopes sends any create", async () => {
    const readOnly = (await t.createKey("0", { scopes: ["catalog:read"] })).key;
    const creates = routes.filter(([method]) => method === "POST");
    await checkProperty(
      fc.asyncProperty(
        fc.constantFrom(...creates),
        fc.oneof(
          notAJsonObject,
          wildValue.map((v) => toJsonText(v)),
          fc.constant(JSON.stringify({ type: "url", targets: ["https://a.example.com/x"] })),
        ),
        async ([method, template, path], body) => {
          const before = await snapshot(t.stack.db!);
          const where = describeRequest(method, `${API}${path}`, body);
          const answer = await send(t.url, method, `${API}${path}`, {
            headers: { authorization: `Bearer ${readOnly}`, "content-type": "application/json" },
            body,
          });
          expectDocumented("cloud", method, `${API}${template}`, answer, where, (s) => [400, 403, 413, 422].includes(s));
          if (answer.status === 403) expect(answer.body.error.details.scope, where).toMatch(/:write$/);
          await expectNoWrites(t.stack.db!, before, where);
        },
      ),
    );
  });

  it("serves the OpenAPI document to anyone, whatever the query string and key", async () => {
    await checkProperty(
      fc.asyncProperty(queryString(["format", "limit"]), badAuthorization, async (query, authorization) => {
        const path = `${API}/openapi.json?${query}`;
        const answer = await send(t.url, "GET", path, { headers: { authorization } });
        expectDocumented("cloud", "GET", `${API}/openapi.json`, answer, describeRequest("GET", path), (s) => s === 200);
      }),
      10,
    );
  });

  it("answers 404 or 405 with the error body to unknown paths and methods", async () => {
    const method = fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS");
    const path = fc.oneof(
      fc.array(pathSegment, { minLength: 1, maxLength: 4 }).map((segments) => `${API}/${segments.join("/")}`),
      fc.constantFrom(...routes.map(([, , p]) => `${API}${p.split("?")[0]}`), `${API}`, `${API}/`, "/openapi/v2/orders", "/openapi/"),
    );
    await checkProperty(
      fc.asyncProperty(method, path, async (m, p) => {
        const before = await snapshot(t.stack.db!);
        const where = describeRequest(m, p);
        const answer = await send(t.url, m, p, { headers: { ...auth(), "content-type": "application/json" }, body: m === "GET" ? undefined : "{" });
        // Dot segments may resolve the path out of /openapi/: then the router's generation-style 404.
        const surface = new URL(p, "http://x").pathname.startsWith("/openapi/") ? "cloud" : "generation";
        if (answer.status === 404 && (answer.body?.error?.message === "Path not found" || surface === "generation")) expectUnrouted(surface, answer, where);
        else if (answer.status === 405) expectUnrouted(surface, answer, where);
        else {
          // A real route with its method: its own documented answer.
          const route = routes.find(([rm, , rp]) => rm === m && `${API}${rp.split("?")[0]}` === p);
          expect(route, `unexpected answer: ${where} → ${answer.status} ${answer.text.slice(0, 300)}`).toBeDefined();
          expectDocumented("cloud", m, `${API}${route![1]}`, answer, where);
        }
        await expectNoWrites(t.stack.db!, before, where);
      }),
    );
  });
});
