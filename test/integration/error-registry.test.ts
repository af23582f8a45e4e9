/**
 * The error registry end to end (src/errors.ts; docs/architecture.md §4): the table's own rules,
 * then every code each surface can produce, triggered for real on REST generation, REST cloud,
 * GraphQL over HTTP and graphql-ws, each answer checked against the table (status, code, message);
 * a code no test request can reach checks the mapping function its surface uses. No answer of the
 * walk carries an upper-case code.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { GraphQLError } from "graphql";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { collect, wsClient } from "../support/graphql-ws.ts";
import { setKeyStatus } from "../../src/auth/keys.ts";
import { CLOUD_CODES, ERROR_CODES, cloudErrorOf, registryCodeOf, type ErrorCode } from "../../src/errors.ts";
import { MODEL_IDS } from "../../src/generation/catalog.ts";
import { cloudOpenApi } from "../../router/openapi/cloud.ts";
import { generationOpenApi } from "../../router/openapi/generation.ts";
import { toShimError } from "../../router/graph/client.ts";
import { formatError } from "../../subgraphs/shared/errors.ts";

type Surface = "rest-generation" | "rest-cloud" | "graphql-http" | "graphql-ws";
/** One answer as a surface gives it: HTTP status (none over graphql-ws) and body. */
type Answer = { status?: number; body: any };
/** How to provoke a code on one surface, and the message expected when it is not the table's. */
type Trigger = { run: () => Promise<Answer>; message?: string | RegExp };

/** The spec's codes (docs/api/cloud.md §7) with their statuses. */
const CLOUD_SPEC = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  validation_failed: 422,
  rate_limited: 429,
  upstream_error: 502,
};
/** The generation spec's messages (docs/api/generation.md §7) by code. */
const GENERATION_SPEC: Partial<Record<ErrorCode, [number, string]>> = {
  invalid_json: [400, "Request body must be valid JSON"],
  unauthorized: [401, "Invalid or missing API key"],
  key_disabled: [403, "API key is disabled"],
  insufficient_balance: [402, "Insufficient balance"],
  task_not_found: [404, "Task not found"],
  upstream_failed: [502, "Upstream request failed"],
  upstream_timeout: [504, "Upstream request timed out"],
};

/** The codes whose GraphQL spelling is the persisted-query protocol's upper case (src/errors.ts). */
const PROTOCOL_CODES = ["persisted_query_not_found", "persisted_query_not_supported"];

/** Every answer of the walk, for the upper-case check at the end. */
const seen: unknown[] = [];

describe("the registry table", () => {
  it("spells every code in lower snake case, GraphQL code = key, and every cloud code maps to itself", () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[a-z][a-z0-9_]*$/);
      // The documented exception: the persisted-query protocol's answers keep its upper case (ADR 0020).
      expect(entry.graphql).toBe(PROTOCOL_CODES.includes(code) ? code.toUpperCase() : code);
      expect(ERROR_CODES[entry.cloud].cloud, code).toBe(entry.cloud);
      expect(entry.status).toBeGreaterThanOrEqual(400);
    }
  });

  it("holds the cloud spec's codes with their statuses, and the generation spec's messages", () => {
    for (const [code, status] of Object.entries(CLOUD_SPEC)) expect(cloudErrorOf(code as ErrorCode)).toEqual({ code, status });
    expect(cloudErrorOf("upstream_timeout")).toEqual({ code: "upstream_error", status: 502 });
    for (const [code, [status, message]] of Object.entries(GENERATION_SPEC)) expect(ERROR_CODES[code as ErrorCode]).toMatchObject({ status, message });
  });

  it("translates every upper-case library code to a registry code", () => {
    const foreign = [
      "GRAPHQL_PARSE_FAILED",
      "GRAPHQL_VALIDATION_FAILED",
      "BAD_USER_INPUT",
      "BAD_REQUEST",
      "OPERATION_RESOLUTION_FAILURE",
      "PERSISTED_QUERY_NOT_FOUND",
      "PERSISTED_QUERY_NOT_SUPPORTED",
      "INTERNAL_SERVER_ERROR",
      "UNAUTHENTICATED",
      "FORBIDDEN",
      "SOMETHING_NEW",
    ];
    for (const code of foreign) expect(registryCodeOf(code, 400)).toMatch(/^[a-z_]+$/);
    expect(registryCodeOf("BAD_REQUEST", 405)).toBe("method_not_allowed");
    expect(registryCodeOf(undefined, 502)).toBe("service_unavailable");
  });

  it("is what both OpenAPI documents list: the cloud enum, the generation statuses, the catalog's model ids", () => {
    expect((cloudOpenApi.components as any).schemas.ErrorEnvelope.properties.error.properties.code.enum).toEqual([...CLOUD_CODES]);
    const responses = (generationOpenApi.components as any).responses;
    const expected = {
      BadRequest: "invalid_request",
      Unauthorized: "unauthorized",
      PaymentRequired: "insufficient_balance",
      Forbidden: "key_disabled",
      NotFound: "task_not_found",
      PayloadTooLarge: "payload_too_large",
      TooManyRequests: "rate_limited",
      BadGateway: "upstream_failed",
      ServiceUnavailable: "service_unavailable",
      GatewayTimeout: "upstream_timeout",
    } as const;
    for (const [name, code] of Object.entries(expected)) {
      expect(responses[name].content["application/json"].schema.properties.code.const, name).toBe(ERROR_CODES[code].status);
    }
    expect((generationOpenApi.components as any).schemas.Task.properties.model_id.enum).toEqual([...MODEL_IDS]);
    expect(responses.BadRequest.description).toContain(`model_id must be one of: ${MODEL_IDS.join(", ")}`);
  });
});

describe("every code on every surface that can produce it", () => {
  let t: TestStack;
  const keys: Record<"rich" | "poor" | "disabled" | "catalogOnly" | "limited", string> = {} as any;
  beforeAll(async () => {
    t = await startTestStack();
    keys.rich = (await t.createKey("100")).key;
    keys.poor = (await t.createKey("0")).key;
    const disabled = await t.createKey("100");
    await setKeyStatus(t.stack.db!, disabled.id, "disabled");
    keys.disabled = disabled.key;
    keys.catalogOnly = (await t.createKey("100", { scopes: ["catalog:read"] })).key;
    keys.limited = (await t.createKey("100", { rateLimit: 1 })).key;
  });
  afterAll(() => t?.close());

  const rest = async (method: string, path: string, options: { key?: string; body?: unknown; rawBody?: string } = {}): Promise<Answer> => {
    const { status, body } = await t.rest(method, path, options);
    return { status, body };
  };
  /** GraphQL over HTTP, as a client accepting application/graphql-response+json (request errors keep their status). */
  const gql = async (
    query: string,
    variables: Record<string, unknown> = {},
    key: string | null = keys.rich,
    init: { method?: string; body?: string } = {},
  ): Promise<Answer> => {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/graphql-response+json" };
    if (key) headers.authorization = `Bearer ${key}`;
    const response = await fetch(`${t.url}/graphql`, { method: init.method ?? "POST", headers, body: init.body ?? JSON.stringify({ query, variables }) });
    return { status: response.status, body: await response.json() };
  };
  /** The first error (or error result) of one graphql-ws subscription. */
  const ws = async (query: string, variables: Record<string, unknown> = {}): Promise<Answer> => {
    const client = wsClient(t.url, { authorization: `Bearer ${keys.rich}` });
    try {
      const outcome = await collect(client, query, variables).done;
      return { body: { errors: outcome.error ?? outcome.events[0]?.errors } };
    } finally {
      await client.dispose();
    }
  };
  /** The first result of one graphql-ws operation with these parameters (`extensions` included). */
  const wsParams = async (payload: { query: string; extensions?: Record<string, unknown> }): Promise<Answer> => {
    const client = wsClient(t.url, { authorization: `Bearer ${keys.rich}` });
    try {
      const result = await new Promise<any>((resolve, reject) => client.subscribe(payload, { next: resolve, error: reject, complete: () => resolve({}) }));
      return { body: { errors: result.errors } };
    } finally {
      await client.dispose();
    }
  };
  const persistedQuery = (sha256Hash: string) => ({ persistedQuery: { version: 1, sha256Hash } });
  const unknownHash = "0".repeat(64);
  /** A POST whose body is declared with `contentType` (a surface's 415). */
  const typed = async (path: string, contentType: string, body: string): Promise<Answer> => {
    const response = await fetch(`${t.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys.rich}`, "content-type": contentType, accept: "application/graphql-response+json" },
      body,
    });
    return { status: response.status, body: await response.json() };
  };
  /** The 429 among three requests at once from a key allowed one a second. */
  const limited = async (call: () => Promise<Answer>): Promise<Answer> => {
    const answers = await Promise.all([call(), call(), call()]);
    return answers.find((a) => a.status === 429) ?? answers[0]!;
  };
  const big = "x".repeat(2 * 1024 * 1024);
  const deep = (n: number) => `{ viewer { ${"orders(first: 1) { nodes { product { vendor { ".repeat(n)}id${" } } } }".repeat(n)} } }`;

  const triggers: Partial<Record<ErrorCode, Partial<Record<Surface, Trigger>>>> = {
    invalid_json: { "rest-generation": { run: () => rest("POST", "/api/v1/video/generations", { key: keys.rich, rawBody: "{" }) } },
    invalid_request: {
      "rest-generation": { run: () => rest("GET", "/api/v1/usage?limit=0", { key: keys.rich }), message: "limit must be an integer from 1 to 100" },
      "rest-cloud": { run: () => rest("GET", "/openapi/v1/vendors?limit=0", { key: keys.rich }), message: "limit must be an integer from 1 to 100" },
      "graphql-http": { run: () => gql("{ viewer { tasks(first: 0) { nodes { id } } } }"), message: "first must be an integer from 1 to 100" },
    },
    graphql_parse_failed: {
      "graphql-http": { run: () => gql("{ viewer {"), message: /^Syntax Error/ },
      "graphql-ws": { run: () => ws("subscription {"), message: /^Syntax Error/ },
    },
    graphql_validation_failed: {
      "graphql-http": { run: () => gql("{ nope }"), message: /Cannot query field "nope"/ },
      "graphql-ws": { run: () => ws("subscription { nope }"), message: /Cannot query field "nope"/ },
    },
    bad_user_input: {
      "graphql-http": {
        run: () => gql("query Q($n: Int!) { viewer { tasks(first: $n) { nodes { id } } } }", { n: "x" }),
        message: /Variable "\$n" got invalid value/,
      },
      "graphql-ws": { run: () => ws("subscription($id: ID!) { taskStatusChanged(taskId: $id) { status } }"), message: /Variable "\$id" of required type/ },
    },
    persisted_query_not_found: {
      "graphql-http": { run: () => gql("", {}, keys.rich, { body: JSON.stringify({ extensions: persistedQuery(unknownHash) }) }) },
      "graphql-ws": { run: () => wsParams({ query: "", extensions: persistedQuery(unknownHash) }) },
    },
    persisted_query_hash_mismatch: {
      "graphql-http": { run: () => gql("", {}, keys.rich, { body: JSON.stringify({ query: "{ __typename }", extensions: persistedQuery(unknownHash) }) }) },
      "graphql-ws": { run: () => wsParams({ query: "subscription { tasks { id } }", extensions: persistedQuery(unknownHash) }) },
    },
    operation_resolution_failure: {
      "graphql-http": { run: () => gql("query A { __typename } query B { __typename }"), message: /Could not determine what operation to execute/ },
    },
    query_too_deep: {
      "graphql-http": { run: () => gql(deep(3)), message: /^Query depth limit of 12 exceeded/ },
      "graphql-ws": {
        run: () => ws(`subscription { orderEvents { order { ${"product { vendor { products(first: 1) { nodes { ".repeat(3)}id${" } } } }".repeat(3)} } } }`),
        message: /^Query depth limit of 12 exceeded/,
      },
    },
    too_many_aliases: {
      "graphql-http": {
        run: () => gql(`{ ${Array.from({ length: 31 }, (_, i) => `a${i}: __type(name: "Query") { name }`).join(" ")} }`),
        message: /^Aliases limit of 30 exceeded/,
      },
      "graphql-ws": {
        run: () => ws(`subscription { tasks { ${Array.from({ length: 31 }, (_, i) => `a${i}: id`).join(" ")} } }`),
        message: /^Aliases limit of 30 exceeded/,
      },
    },
    too_many_directives: {
      "graphql-http": { run: () => gql(`{ ${"__typename @skip(if: false) ".repeat(21)} }`), message: /^Directives limit of 20 exceeded/ },
      "graphql-ws": { run: () => ws(`subscription { tasks { ${"id @skip(if: false) ".repeat(21)} } }`), message: /^Directives limit of 20 exceeded/ },
    },
    too_many_tokens: {
      "graphql-http": { run: () => gql(`{ ${"__typename ".repeat(2100)}}`), message: /^Token limit of 2000 exceeded/ },
      "graphql-ws": { run: () => ws(`subscription { tasks { ${"id ".repeat(2100)}} }`), message: /^Token limit of 2000 exceeded/ },
    },
    query_too_costly: {
      "graphql-http": {
        run: () => gql("{ products(first: 100) { nodes { vendor { products(first: 100) { nodes { id } } } } } }"),
        message: /^Query cost limit of 5000 exceeded/,
      },
      "graphql-ws": {
        run: () =>
          ws(
            "subscription { orderEvents { order { product { vendor { products(first: 100) { nodes { vendor { products(first: 100) { nodes { id } } } } } } } } } }",
          ),
        message: /^Query cost limit of 5000 exceeded/,
      },
    },
    page_size_too_large: {
      "rest-generation": { run: () => rest("GET", "/api/v1/usage?limit=101", { key: keys.rich }), message: "limit must be an integer from 1 to 100" },
      "rest-cloud": { run: () => rest("GET", "/openapi/v1/vendors?limit=101", { key: keys.rich }), message: "limit must be an integer from 1 to 100" },
      "graphql-http": { run: () => gql("{ viewer { tasks(first: 101) { nodes { id } } } }"), message: "first must be an integer from 1 to 100" },
      "graphql-ws": {
        run: () => ws("subscription { orderEvents { order { product { vendor { products(first: 101) { nodes { id } } } } } } }"),
        message: "first must be an integer from 1 to 100",
      },
    },
    unauthorized: {
      "rest-generation": { run: () => rest("GET", "/api/v1/usage") },
      "rest-cloud": { run: () => rest("GET", "/openapi/v1/vendors") },
      "graphql-http": { run: () => gql("{ apiKey { id } }", {}, null) },
    },
    insufficient_balance: {
      "rest-generation": { run: () => rest("POST", "/api/v1/video/generations", { key: keys.poor, body: { prompt: "a fox", model_id: 52 } }) },
      "graphql-http": { run: () => gql(`mutation { submitVideoGeneration(input: { prompt: "a fox", modelId: 52 }) { task { id } } }`, {}, keys.poor) },
    },
    key_disabled: {
      "rest-generation": { run: () => rest("GET", "/api/v1/usage", { key: keys.disabled }) },
      "rest-cloud": { run: () => rest("GET", "/openapi/v1/vendors", { key: keys.disabled }) },
      "graphql-http": { run: () => gql("{ apiKey { id } }", {}, keys.disabled) },
    },
    forbidden: {
      "rest-generation": { run: () => rest("GET", "/api/v1/usage", { key: keys.catalogOnly }), message: /scope/ },
      "rest-cloud": { run: () => rest("GET", "/openapi/v1/orders", { key: keys.catalogOnly }), message: /scope/ },
      "graphql-http": { run: () => gql("{ orders(first: 1) { nodes { id } } }", {}, keys.catalogOnly), message: /scope/ },
    },
    not_found: {
      "rest-generation": { run: () => rest("GET", "/api/v1/nowhere", { key: keys.rich }) },
      "rest-cloud": { run: () => rest("GET", "/openapi/v1/orders/ord_nope", { key: keys.rich }), message: /./ },
      "graphql-http": { run: () => gql(`{ order(id: "ord_nope") { id } }`), message: /./ },
    },
    task_not_found: {
      "rest-generation": { run: () => rest("GET", "/api/v1/tasks/task_nope", { key: keys.rich }) },
      "graphql-http": { run: () => gql(`{ task(id: "task_nope") { id } }`) },
      "graphql-ws": { run: () => ws(`subscription { taskStatusChanged(taskId: "task_nope") { status } }`) },
    },
    method_not_allowed: {
      "rest-generation": { run: () => rest("PUT", "/api/v1/usage", { key: keys.rich }) },
      "rest-cloud": { run: () => rest("PUT", "/openapi/v1/vendors", { key: keys.rich }) },
      "graphql-http": { run: () => gql("{ __typename }", {}, keys.rich, { method: "PUT" }), message: /GET and POST/ },
    },
    payload_too_large: {
      "rest-generation": { run: () => rest("POST", "/api/v1/video/generations", { key: keys.rich, rawBody: big }) },
      "rest-cloud": { run: () => rest("POST", "/openapi/v1/orders", { key: keys.rich, rawBody: big }) },
      "graphql-http": {
        run: () => gql("", {}, keys.rich, { body: JSON.stringify({ query: "{ __typename }", extensions: { pad: big } }) }),
        message: /^Request body is too large/,
      },
    },
    unsupported_media_type: {
      "rest-generation": { run: () => typed("/api/v1/video/generations", "text/plain", "{}") },
      "rest-cloud": { run: () => typed("/openapi/v1/orders", "application/x-www-form-urlencoded", "{}") },
      "graphql-http": { run: () => typed("/graphql", "text/plain", JSON.stringify({ query: "{ __typename }" })) },
    },
    validation_failed: {
      "rest-cloud": { run: () => rest("POST", "/openapi/v1/orders", { key: keys.rich, body: {} }), message: /./ },
      "graphql-http": {
        run: () =>
          gql(
            `mutation { createOrder(input: { clientOrderNo: " ", productId: "x", quantity: 0, billingCycle: "monthly", customer: { customerId: "c" } }) { order { id } } }`,
          ),
        message: /./,
      },
    },
    rate_limited: {
      "rest-generation": { run: () => limited(() => rest("GET", "/api/v1/usage", { key: keys.limited })), message: /^Rate limit of 1 request/ },
      "rest-cloud": { run: () => limited(() => rest("GET", "/openapi/v1/vendors", { key: keys.limited })), message: /^Rate limit of 1 request/ },
      "graphql-http": { run: () => limited(() => gql("{ apiKey { id } }", {}, keys.limited)), message: /^Rate limit of 1 request/ },
    },
  };

  /**
   * Codes no request of this test reaches, with the mapping its surfaces use (and where it is
   * triggered for real).
   */
  const mappedOnly: Partial<Record<ErrorCode, () => void>> = {
    // Apollo Server's answer to an unknown persisted-query hash, through the subgraphs' formatError.
    persisted_query_not_found: () => {
      const apollo = new GraphQLError("PersistedQueryNotFound", { extensions: { code: "PERSISTED_QUERY_NOT_FOUND" } });
      expect(formatError(pino({ level: "silent" }))(apollo.toJSON(), apollo)).toEqual({
        message: "PersistedQueryNotFound",
        extensions: { code: "PERSISTED_QUERY_NOT_FOUND", http: { status: 400 } },
      });
    },
    // Triggered in test/integration/persisted-only.test.ts (a router with PERSISTED_ONLY=true).
    persisted_query_required: () => expect(cloudErrorOf("persisted_query_required")).toEqual({ code: "invalid_request", status: 400 }),
    persisted_query_not_supported: () => expect(registryCodeOf("PERSISTED_QUERY_NOT_SUPPORTED", 200)).toBe("persisted_query_not_supported"),
    // A subgraph's unexpected error (subgraphs/shared/errors.ts), then the REST shims' view of it.
    internal: () => {
      const formatted = formatError(pino({ level: "silent" }))({ message: "boom", extensions: { code: "INTERNAL_SERVER_ERROR" } }, new Error("boom"));
      expect(formatted).toMatchObject({ message: "Internal server error", extensions: { code: "internal", http: { status: 500 } } });
      expect(toShimError(formatted)).toMatchObject({ code: "internal", status: 500 });
    },
    // Triggered in test/integration/revocation.test.ts (101 subscriptions on one socket).
    too_many_subscriptions: () => expect(cloudErrorOf("too_many_subscriptions")).toEqual({ code: "rate_limited", status: 429 }),
    // Triggered in test/integration/openapi.test.ts and upstream-failures.test.ts (a failing upstream).
    upstream_failed: () => expect(toShimError({ message: "Upstream request failed", extensions: { code: "upstream_failed" } })).toMatchObject({ status: 502 }),
    upstream_timeout: () =>
      expect(toShimError({ message: "Upstream request timed out", extensions: { code: "upstream_timeout" } })).toMatchObject({ status: 504 }),
    upstream_error: () => expect(cloudErrorOf("upstream_error")).toEqual({ code: "upstream_error", status: 502 }),
    // A gateway error without a code: the subgraph could not be used.
    service_unavailable: () =>
      expect(toShimError({ message: "fetch failed", extensions: {} })).toEqual({
        code: "service_unavailable",
        status: 503,
        message: "Service unavailable",
        details: {},
      }),
    // Triggered in test/integration/router-limits.test.ts (REQUEST_TIMEOUT_MS).
    request_timeout: () => expect(cloudErrorOf("request_timeout")).toEqual({ code: "request_timeout", status: 504 }),
    // Domain conflicts are the services' (cloud-api.test.ts); here the cloud mapping.
    conflict: () => expect(cloudErrorOf("conflict")).toEqual({ code: "conflict", status: 409 }),
  };

  it("names a trigger or a mapping check for every code of the table", () => {
    const covered = new Set([...Object.keys(triggers), ...Object.keys(mappedOnly)]);
    expect(Object.keys(ERROR_CODES).filter((code) => !covered.has(code))).toEqual([]);
  });

  it.each(Object.keys(mappedOnly))("maps %s as the table says", (code) => mappedOnly[code as ErrorCode]!());

  const cases = Object.entries(triggers).flatMap(([code, surfaces]) =>
    Object.entries(surfaces!).map(([surface, trigger]) => ({ code: code as ErrorCode, surface: surface as Surface, trigger: trigger! })),
  );

  it.each(cases)("answers $code on $surface with the table's status and code", async ({ code, surface, trigger }) => {
    const { status, body } = await trigger.run();
    seen.push(body);
    const entry = ERROR_CODES[code];
    const message = (actual: string) =>
      trigger.message instanceof RegExp ? expect(actual).toMatch(trigger.message) : expect(actual).toBe(trigger.message ?? entry.message);
    if (surface === "rest-generation") {
      expect({ status, code: body.code }).toEqual({ status: entry.status, code: entry.status });
      message(body.message);
    } else if (surface === "rest-cloud") {
      const cloud = cloudErrorOf(code);
      expect({ status, success: body.success, code: body.error?.code }).toEqual({ status: cloud.status, success: false, code: cloud.code });
      message(body.error.message);
    } else {
      const error = body.errors?.[0];
      expect(error?.extensions, JSON.stringify(body)).toMatchObject({ code: entry.graphql, http: { status: entry.status } });
      message(error.message);
      // GraphQL over HTTP: an answer without data takes its error's status; one with data is 200.
      if (surface === "graphql-http") expect(status).toBe(body.data == null ? entry.status : 200);
    }
  });

  it("gave no answer of the walk a detail its code does not document (the registry's allow-list)", () => {
    const undocumented: string[] = [];
    const documented = (code: unknown): readonly string[] => (ERROR_CODES as Record<string, { details: readonly string[] }>)[String(code)]?.details ?? [];
    for (const body of seen as any[]) {
      for (const error of body?.errors ?? []) {
        const { code: spelled, http, ...details } = error.extensions ?? {};
        const code = PROTOCOL_CODES.includes(String(spelled).toLowerCase()) ? String(spelled).toLowerCase() : spelled;
        for (const name of Object.keys(details)) if (!documented(code).includes(name)) undocumented.push(`${code}.${name}`);
        if (Object.keys(http ?? {}).join() !== "status") undocumented.push(`${code}.http: ${JSON.stringify(http)}`);
      }
      if (body?.success === false) {
        const allowed = Object.entries(ERROR_CODES).flatMap(([code, entry]) => (entry.cloud === body.error.code ? documented(code) : []));
        for (const name of Object.keys(body.error.details)) if (!allowed.includes(name)) undocumented.push(`${body.error.code}.${name}`);
      }
    }
    expect(undocumented).toEqual([]);
  });

  it("left no upper-case code in any answer of the walk but the persisted-query protocol's", () => {
    expect(seen.length).toBeGreaterThan(40);
    const codes = JSON.stringify(seen).match(/"code":"[^"]*"/g) ?? [];
    const protocol = PROTOCOL_CODES.map((code) => `"code":"${code.toUpperCase()}"`);
    expect(codes.filter((c) => /[A-Z]/.test(c) && !protocol.includes(c))).toEqual([]);
  });
});
