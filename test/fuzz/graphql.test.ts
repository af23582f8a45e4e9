/**
 * Bad input everywhere, GraphQL: random documents (token soup, garbage text, deep nesting, huge
 * alias lists), wrong variable types, random operation names, batched arrays and bodies that are
 * not objects, sent to the router's `/graphql` over HTTP POST and GET and to each subgraph
 * directly; and garbage graphql-ws frames to the router. HTTP answers are GraphQL over HTTP:
 * a 4xx, or 200 with `errors` (or `data`) — never a 5xx, a hang, leaked internals or a write.
 * A socket that breaks the graphql-transport-ws protocol is closed with a 44xx code and the
 * router goes on serving.
 */
import fc from "fast-check";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import {
  checkProperty,
  closeClients,
  contentType,
  deepJson,
  describeRequest,
  encodeAny,
  expectNoLeak,
  expectNoWrites,
  HANG_MS,
  nastyString,
  notAJsonObject,
  PROPERTY_TIMEOUT_MS,
  RawJson,
  send,
  snapshot,
  toJsonText,
  wildValue,
  type Answer,
} from "./support.ts";

vi.setConfig({ testTimeout: PROPERTY_TIMEOUT_MS });

const BODY_LIMIT = 65_536;
let t: TestStack;
let key: string;

beforeAll(async () => {
  t = await startTestStack({ BODY_LIMIT_BYTES: String(BODY_LIMIT) });
  // A zero balance: no mutation a random document might form can charge or create a task.
  key = (await t.createKey("0")).key;
});
afterAll(async () => {
  closeClients();
  await t?.close();
});

// ---------------------------------------------------------------------------------------------
// Documents

const NAMES = [
  "viewer",
  "tasks",
  "task",
  "models",
  "model",
  "nodes",
  "id",
  "first",
  "after",
  "status",
  "order",
  "orders",
  "products",
  "product",
  "vendors",
  "createOrder",
  "submitVideoGeneration",
  "renewOrder",
  "purgeDomain",
  "input",
  "metadata",
  "apiKey",
  "balance",
  "amount",
  "__typename",
  "__schema",
  "__type",
  "name",
  "fields",
  "type",
  "ofType",
  "skip",
  "include",
  "if",
  "deprecated",
  "Query",
  "Mutation",
  "Task",
  "Account",
  "String",
  "Int",
  "ID",
  "Boolean",
  "JSONObject",
  "taskStatusChanged",
  "_service",
  "_entities",
  "representations",
  "sdl",
];
const PUNCTUATION = ["{", "}", "(", ")", "[", "]", ":", "$", "!", "=", "...", "@", "|", "&", ",", "#x\n"];
const KEYWORDS = ["query", "mutation", "subscription", "fragment", "on", "true", "false", "null", "schema", "extend", "directive", "input", "enum"];

/** One GraphQL token, valid or not. */
const token: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NAMES) },
  { weight: 4, arbitrary: fc.constantFrom(...PUNCTUATION) },
  { weight: 2, arbitrary: fc.constantFrom(...KEYWORDS) },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })).map(String) },
  { weight: 1, arbitrary: nastyString.filter((s) => s.length < 200).map((s) => JSON.stringify(s)) },
  { weight: 1, arbitrary: nastyString.filter((s) => s.length < 200).map((s) => `"""${s}"""`) },
  { weight: 1, arbitrary: fc.stringMatching(/^[_A-Za-z][_0-9A-Za-z]{0,20}$/) },
);

/** A GraphQL document: token soup, garbage, or an operation that is too deep, too wide or too long. */
const document: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.array(token, { maxLength: 60 }).chain((tokens) => fc.constantFrom(" ", "\n", "", "\t,").map((sep) => tokens.join(sep))) },
  { weight: 2, arbitrary: fc.array(token, { maxLength: 30 }).map((tokens) => `{ ${tokens.join(" ")} }`) },
  { weight: 2, arbitrary: nastyString },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom("viewer", "a", "__typename", "tasks"), fc.integer({ min: 10, max: 4_000 }))
      .map(([name, depth]) => `{${` ${name} {`.repeat(depth)} id${" }".repeat(depth)} }`),
  },
  { weight: 1, arbitrary: fc.integer({ min: 25, max: 3_000 }).map((n) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(" ")} }`) },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 3_000 }).map((n) => `{ __typename ${"@skip(if: false) ".repeat(n)}}`) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 2_000 }).map((n) => `query Q(${Array.from({ length: n }, (_, i) => `$v${i}: Int`).join(", ")}) { __typename }`),
  },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 5_000 }).map((n) => `{ model(id: ${"[".repeat(n)}1${"]".repeat(n)}) { id } }`) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 10, max: 2_000 })
      .map((n) => `query { ...F } ${Array.from({ length: n }, (_, i) => `fragment F${i === 0 ? "" : i} on Query { ...F${i + 1} }`).join(" ")}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "fragment A on Query { ...A } { ...A }",
      "{ __schema { types { fields { type { ofType { ofType { ofType { ofType { name } } } } } } } } }",
      "subscription { __typename }",
      "{ viewer { tasks(first: 2147483648) { nodes { id } } } }",
    ),
  },
);

/** Valid operations whose variables the fuzz fills with values of any type. */
const TYPED_OPERATIONS = [
  "query Q($id: ID!) { task(id: $id) { id statusCode } }",
  "query Q($n: Int, $after: String) { viewer { tasks(first: $n, after: $after) { nodes { id } } } }",
  "query Q($id: Int!) { model(id: $id) { id name } }",
  "mutation M($input: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $input) { task { id } } }",
  "mutation M($input: CreateOrderInput!) { createOrder(input: $input) { order { id } } }",
  "mutation M($input: PurgeDomainInput!) { purgeDomain(input: $input) { purgeTask { id } } }",
  "query Q($c: String!) { customerBalance(customerId: $c) { customerId } }",
  "query Q($r: [_Any!]!) { _entities(representations: $r) { __typename } }",
];

/** A GraphQL-over-HTTP request body: an object with wild members, a batch, or no object at all. */
const requestBody: fc.Arbitrary<string | Buffer> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .record(
        {
          query: fc.oneof(
            { weight: 4, arbitrary: document },
            { weight: 2, arbitrary: fc.constantFrom(...TYPED_OPERATIONS) },
            { weight: 1, arbitrary: wildValue },
          ),
          variables: fc.oneof(fc.dictionary(fc.constantFrom("id", "n", "after", "input", "c", "r", "x"), wildValue, { maxKeys: 3 }), wildValue),
          operationName: fc.oneof(fc.constantFrom("Q", "M", "Nope", ""), wildValue),
          extensions: fc.oneof(wildValue, fc.constant({ persistedQuery: { version: 1, sha256Hash: "0".repeat(64) } })),
        },
        { requiredKeys: [] },
      )
      .map((body) => toJsonText(body)),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.record({ query: fc.oneof(document, fc.constant("{ __typename }")) }), { minLength: 0, maxLength: 5 })
      .map((batch) => toJsonText(batch)),
  },
  { weight: 2, arbitrary: notAJsonObject },
  { weight: 1, arbitrary: deepJson.map((deep) => toJsonText({ query: "{ __typename }", variables: { x: deep } })) },
);

const accept = fc.constantFrom(
  undefined,
  "application/json",
  "application/graphql-response+json",
  "application/graphql-response+json, application/json;q=0.9",
  "*/*",
  "text/html",
  "text/plain",
  "application/xml",
  "multipart/mixed",
  "",
);

/**
 * Asserts a GraphQL-over-HTTP answer: 2xx/4xx only; JSON answers carry `data` or a non-empty
 * `errors` list of messages, every 4xx JSON answer `errors`; nothing leaks.
 */
function expectGraphqlAnswer(answer: Answer, where: string, statuses = [200, 400, 401, 403, 404, 405, 406, 413, 415, 422, 429]): void {
  const context = `${where} → ${answer.status} ${answer.text.slice(0, 400)}`;
  expect(answer.status, `5xx: ${context}`).toBeLessThan(500);
  expect(statuses, `unexpected status: ${context}`).toContain(answer.status);
  const type = String(answer.headers["content-type"] ?? "");
  if (/json/.test(type)) {
    expect(answer.body, `unparsable JSON: ${context}`).toBeTypeOf("object");
    const results = Array.isArray(answer.body) ? answer.body : [answer.body];
    for (const result of results) {
      expect("data" in result || Array.isArray(result.errors), `neither data nor errors: ${context}`).toBe(true);
      for (const error of result.errors ?? []) {
        expect(error.message, context).toEqual(expect.any(String));
        expect(error.extensions?.stacktrace ?? error.extensions?.exception, `stack trace: ${context}`).toBeUndefined();
      }
      if (answer.status >= 400) expect(result.errors?.length, `a 4xx without errors: ${context}`).toBeGreaterThan(0);
      if (answer.status === 200 && !result.errors) expect(result.data, context).toBeTypeOf("object");
    }
  } else if (answer.status === 200) {
    // Only an event stream or a multipart answer may be other than JSON when all is well.
    expect(type, `200 that is neither JSON nor a stream: ${context}`).toMatch(/text\/event-stream|multipart\/mixed|text\/html/);
  }
  expectNoLeak(answer.text, where);
}

/** POSTs a body to a GraphQL endpoint and checks the answer and that nothing was written. */
async function postGraphql(base: string, path: string, body: string | Buffer, headers: Record<string, string | undefined>): Promise<Answer> {
  const before = await snapshot(t.stack.db!);
  const where = describeRequest("POST", `${base}${path}`, body, headers);
  const answer = await send(base, "POST", path, { headers, body });
  expectGraphqlAnswer(answer, where);
  await expectNoWrites(t.stack.db!, before, where);
  return answer;
}

// ---------------------------------------------------------------------------------------------
// HTTP

describe("the router's /graphql over HTTP", () => {
  it("answers any POST body with a 4xx or 200 and errors, never a 5xx, a hang or a write", async () => {
    await checkProperty(
      fc.asyncProperty(requestBody, contentType, accept, fc.boolean(), async (body, type, acceptHeader, withKey) => {
        await postGraphql(t.url, "/graphql", body, {
          "content-type": type ?? "application/json",
          accept: acceptHeader,
          authorization: withKey ? `Bearer ${key}` : undefined,
        });
      }),
      60,
    );
  });

  it("answers any GET query string the same way", async () => {
    // Cut at 4000 characters: a cut may split an escape or the JSON, which the router must refuse cleanly too.
    const param = (arb: fc.Arbitrary<unknown>) => arb.map((v) => encodeAny(typeof v === "string" ? v : toJsonText(v)).slice(0, 4_000));
    await checkProperty(
      fc.asyncProperty(
        fc.record(
          {
            query: param(fc.oneof(document, fc.constantFrom(...TYPED_OPERATIONS))),
            variables: param(wildValue),
            operationName: param(wildValue),
            extensions: param(wildValue),
          },
          { requiredKeys: [] },
        ),
        accept,
        async (params, acceptHeader) => {
          const query = Object.entries(params)
            .map(([k, v]) => `${k}=${v}`)
            .join("&");
          const where = describeRequest("GET", `/graphql?${query}`);
          const answer = await send(t.url, "GET", `/graphql?${query}`, { headers: { accept: acceptHeader, authorization: `Bearer ${key}` } });
          expectGraphqlAnswer(answer, where);
        },
      ),
      40,
    );
  });

  it("answers 400 to variables or extensions that are not JSON in a query string (regression: 500), and 415 to them in a form body", async () => {
    for (const params of ["variables=%7B", "extensions=%5B", "variables=%7B%22a%22%3A", "extensions=nope"]) {
      const query = `query=${encodeURIComponent("{ __typename }")}&${params}`;
      const get = await send(t.url, "GET", `/graphql?${query}`, { headers: { accept: "application/json" } });
      expect(get.status, `${params}: ${get.text}`).toBe(400);
      expect(get.body.errors[0]).toMatchObject({
        message: expect.stringMatching(/^variables and extensions must be valid JSON/),
        extensions: { code: "invalid_request" },
      });
      // A form body is not read at all (issue 20 finding 8: only application/json is run).
      const form = await send(t.url, "POST", "/graphql", { headers: { "content-type": "application/x-www-form-urlencoded" }, body: query });
      expect(form.status, `${params}: ${form.text}`).toBe(415);
      expect(form.body.errors[0].extensions).toEqual({ code: "unsupported_media_type", http: { status: 415 } });
    }
  });

  it("answers 400 query_too_deep to lists nested past what the parser can recurse through (regression: 500)", async () => {
    for (const depth of [2_000, 5_000]) {
      const query = `{ model(id: ${"[".repeat(depth)}1${"]".repeat(depth)}) { id } }`;
      const answer = await postGraphql(t.url, "/graphql", JSON.stringify({ query }), {
        "content-type": "application/json",
        accept: "application/graphql-response+json",
      });
      expect(answer.status, answer.text).toBe(400);
      expect(answer.body.errors).toEqual([
        { message: "Document is nested too deeply to parse", extensions: { code: "query_too_deep", http: { status: 400 } } },
      ]);
    }
  });

  it("answers a mutation over GET with 405 and runs nothing", async () => {
    const before = await snapshot(t.stack.db!);
    const mutation = encodeURIComponent('mutation { submitVideoGeneration(input: { prompt: "x" }) { task { id } } }');
    const answer = await send(t.url, "GET", `/graphql?query=${mutation}`, {
      headers: { accept: "application/graphql-response+json", authorization: `Bearer ${key}` },
    });
    expect(answer.status).toBe(405);
    await expectNoWrites(t.stack.db!, before, "GET mutation");
  });

  it("answers a createOrder whose metadata nests thousands of levels deep with validation_failed (422), not 500 (regression)", async () => {
    for (const depth of [5_000, 10_000]) {
      const body = toJsonText({
        query:
          'mutation M($m: JSONObject) { createOrder(input: { clientOrderNo: "deep", productId: "prd_cdn_standard", quantity: 1, billingCycle: "monthly", customer: { customerId: "c" }, metadata: $m }) { order { id } } }',
        variables: { m: { domain: "a.example.com", deep: new RawJson(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`) } },
      });
      const answer = await postGraphql(t.url, "/graphql", body, {
        "content-type": "application/json",
        accept: "application/graphql-response+json",
        authorization: `Bearer ${key}`,
      });
      // The nullable payload is null next to the error: data is not null, so HTTP 200 (docs/adr/0006).
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body.data).toEqual({ createOrder: null });
      expect(answer.body.errors[0].extensions).toMatchObject({ code: "validation_failed", field: "metadata", http: { status: 422 } });
    }
  });
});

describe("each subgraph's /graphql, called directly", () => {
  it.each(["generation", "cloud"] as const)("the %s subgraph answers any POST body with a 4xx or 200 and errors", async (name) => {
    const url = new URL(name === "generation" ? t.stack.generationUrl! : t.stack.cloudUrl!);
    await checkProperty(
      fc.asyncProperty(requestBody, contentType, accept, async (body, type, acceptHeader) => {
        await postGraphql(url.origin, url.pathname, body, { "content-type": type ?? "application/json", accept: acceptHeader, authorization: `Bearer ${key}` });
      }),
      40,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// graphql-ws

/** A graphql-transport-ws socket to the router that records messages and its close. */
async function openSocket() {
  const socket = new WebSocket(`${t.url.replace(/^http/, "ws")}/graphql`, "graphql-transport-ws");
  const messages: any[] = [];
  const waiters: (() => void)[] = [];
  socket.on("message", (data) => {
    const text = data.toString();
    expectNoLeak(text, "graphql-ws message");
    messages.push(JSON.parse(text));
    for (const w of waiters.splice(0)) w();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  /** Resolves with the first message of `type` (or null once the socket closes). */
  const next = (type: string) =>
    new Promise<any>((resolve) => {
      const check = () => {
        const found = messages.find((m) => m.type === type);
        if (found) return resolve(found);
        if (socket.readyState >= WebSocket.CLOSING) return resolve(null);
        waiters.push(check);
      };
      closed
        .then(() => waiters.push(check))
        .then(() => {
          for (const w of waiters.splice(0)) w();
        });
      check();
    });
  return { socket, messages, closed, next };
}

/** A frame no graphql-transport-ws server may accept from a client. */
const violation: fc.Arbitrary<string | Buffer> = fc.oneof(
  nastyString.filter((s) => {
    try {
      const v = JSON.parse(s);
      return !v || typeof v !== "object" || typeof v.type !== "string";
    } catch {
      return true;
    }
  }),
  fc.constantFrom(
    "{}",
    "[]",
    "null",
    '{"type":null}',
    '{"type":"connection_ack"}',
    '{"type":"next","id":"1","payload":{}}',
    '{"type":"error","id":"1","payload":[]}',
    '{"type":"subscribe"}',
    '{"type":"subscribe","id":5,"payload":{"query":"{__typename}"}}',
    '{"type":"subscribe","id":"x","payload":"q"}',
    '{"type":"subscribe","id":"x","payload":{"query":5}}',
    '{"type":"complete"}',
    '{"type":"connection_init","payload":"x"}',
  ),
  fc
    .record({ type: nastyString.filter((s) => !["connection_init", "ping", "pong", "subscribe", "complete"].includes(s)), id: wildValue, payload: wildValue })
    .map((m) => toJsonText(m)),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.concat([Buffer.from([0xff]), Buffer.from(b)])),
);

/** Frames a client may send once acknowledged: pings, pongs, completes, subscribes with bad documents. */
const harmless: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant({ type: "ping" }),
  fc.record({ type: fc.constant("pong"), payload: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }) }, { requiredKeys: ["type"] }),
  fc.record({ type: fc.constant("complete"), id: fc.uuid() }),
  fc.record({
    type: fc.constant("subscribe"),
    id: fc.uuid(),
    payload: fc.record(
      {
        query: document.filter((d) => d.length < 20_000),
        variables: fc.option(fc.dictionary(fc.constantFrom("id", "n"), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }), { nil: undefined }),
      },
      { requiredKeys: ["query"] },
    ),
  }),
);

describe("graphql-ws on the router", () => {
  it.each(["next", "error", "connection_ack"])("closes with 4400 when a client sends the server-only message %s (regression: 4500)", async (type) => {
    const ws = await openSocket();
    ws.socket.send(JSON.stringify({ type: "connection_init", payload: { authorization: `Bearer ${key}` } }));
    expect(await ws.next("connection_ack")).not.toBeNull();
    ws.socket.send(JSON.stringify({ type, id: "1", payload: type === "error" ? [] : {} }));
    expect(await ws.closed).toEqual({ code: 4400, reason: "Invalid message received" });
  });

  it("closes a socket that breaks the protocol with a 44xx code, and keeps serving", async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.constantFrom("none", "good", "bad"),
        fc.array(harmless, { maxLength: 4 }),
        violation,
        fc.array(
          fc.oneof(
            violation,
            harmless.map((m) => JSON.stringify(m)),
          ),
          { maxLength: 3 },
        ),
        async (init, before, bad, after) => {
          const ws = await openSocket();
          if (init !== "none") {
            ws.socket.send(JSON.stringify({ type: "connection_init", payload: { Authorization: init === "good" ? `Bearer ${key}` : "Bearer sk-nope" } }));
            const ack = await ws.next("connection_ack");
            if (init === "bad") {
              expect(ack).toBeNull();
              expect((await ws.closed).code).toBe(4403);
              return;
            }
            expect(ack, JSON.stringify(ws.messages)).not.toBeNull();
            for (const frame of before) ws.socket.send(JSON.stringify(frame));
          }
          ws.socket.send(bad);
          for (const frame of after) if (ws.socket.readyState === WebSocket.OPEN) ws.socket.send(frame);
          const timer = setTimeout(() => ws.socket.terminate(), HANG_MS);
          const closed = await ws.closed;
          clearTimeout(timer);
          const where = `init=${init} then ${JSON.stringify(before).slice(0, 300)} then ${String(bad).slice(0, 200)} → ${closed.code} ${closed.reason}`;
          expect(closed.code, where).toBeGreaterThanOrEqual(4400);
          expect(closed.code, where).toBeLessThan(4500);
          expectNoLeak(closed.reason, where);
          for (const m of ws.messages) expect(["connection_ack", "pong", "ping", "error", "next", "complete"], where).toContain(m.type);
        },
      ),
      30,
    );
    // Still serving: a new socket is acknowledged and runs an operation.
    const ws = await openSocket();
    ws.socket.send(JSON.stringify({ type: "connection_init", payload: { authorization: `Bearer ${key}` } }));
    expect(await ws.next("connection_ack")).not.toBeNull();
    ws.socket.send(JSON.stringify({ type: "subscribe", id: "1", payload: { query: "{ __typename }" } }));
    expect((await ws.next("next"))?.payload).toEqual({ data: { __typename: "Query" } });
    ws.socket.close(1000);
    expect((await send(t.url, "GET", "/health")).status).toBe(200);
  });
});
