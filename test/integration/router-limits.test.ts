/**
 * The router's safety limits (issue 4 item 6; router/limits.ts): depth, aliases, directives,
 * tokens, cost, `first`/`last`, request time, body size, and introspection and field suggestions
 * off in production — each refused at the router with a clear GraphQL error and its code — while
 * every REST shim operation and a dashboard query stay well inside them.
 */
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { startTestStack, waitUntil, type GraphqlError, type TestStack } from "../support/stack.ts";
import { startRouter } from "../../router/server.ts";
import fc from "fast-check";
import {
  getNamedType,
  getNullableType,
  getOperationAST,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  parse,
  typeFromAST,
  type GraphQLInputType,
  type GraphQLNamedType,
  type NamedTypeNode,
} from "graphql";
import { LIMITS } from "../../router/limits.ts";
import { measureOperation, supergraphSchema } from "../../bench/measure.ts";
import { collect, collectSse, wsClient } from "../support/graphql-ws.ts";
import { OPERATIONS } from "../../router/rest/generation.ts";
import { CLOUD_OPERATIONS } from "../../router/rest/cloud-shapes.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { parseYuan } from "../../src/money.ts";
import { loadConfig } from "../../src/config.ts";

/** The dashboard of issue 4 (100 tasks and 100 orders with literal page sizes). */
const DASHBOARD = `{ viewer { id balance { amount } spent { amount }
  tasks(first: 100) { totalCount nodes { id status price { amount } model { id name } } }
  orders(first: 100) { totalCount nodes { id status amount { amount } product { id name vendor { id name } } resource { id expiresAt } customer { customerId } } } } }`;

/** `__type(name: "Query") { fields { type { ofType { ... { name } } } } }`, `depth` levels deep. */
function typeChain(depth: number): string {
  let inner = "name";
  for (let i = 0; i < depth - 4; i++) inner = `ofType { ${inner} }`;
  return `{ __type(name: "Query") { fields { type { ${inner} } } } }`;
}

/** POSTs an operation accepting application/graphql-response+json, so the HTTP status tells too. */
async function post(url: string, query: string, variables: Record<string, unknown> = {}, key?: string) {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/graphql-response+json" };
  if (key) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`${url}/graphql`, { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  return { status: response.status, body: (await response.json()) as any };
}

/** Expects exactly one error with this code, HTTP 400 in the body and on the response, and no data. */
function expectRefused(result: { status: number; body: any }, code: string, message: RegExp) {
  expect(result.body.data ?? null).toBeNull();
  expect(result.body.errors, JSON.stringify(result.body)).toHaveLength(1);
  expect(result.body.errors[0].message).toMatch(message);
  expect(result.body.errors[0].extensions).toMatchObject({ code, http: { status: 400 } });
  expect(result.status).toBe(400);
}

/**
 * The issue's reproduction: ten aliases of products → vendor → products → vendor → products, each
 * page `pageSize` (a literal or `$n`).
 */
function issueQuery(pageSize: string): string {
  const level = (inner: string) => `products(first: ${pageSize}) { nodes { id name vendor { id name ${inner} } } }`;
  const chain = level(level(`products(first: ${pageSize}) { nodes { id name } }`));
  return `query Attack${pageSize.startsWith("$") ? "($n: Int)" : ""} { ${Array.from({ length: 10 }, (_, i) => `a${i}: ${chain}`).join(" ")} }`;
}

/** A subscription whose events would each carry two nested pages of `$n` products. */
const COSTLY_SUBSCRIPTION = `subscription Costly($n: Int) { orderEvents { event order { id product { vendor {
  products(first: $n) { nodes { id vendor { products(first: $n) { nodes { id name } } } } } } } } } }`;

/** A random selection: fields of the cloud catalog and orders, some paginated, nested a few levels. */
type Tree = { field: string; size?: number | null; children: Tree[] };

const PAGE_SIZE = fc.option(fc.oneof(fc.integer({ min: -5, max: 100 }), fc.constant(null)), { nil: undefined });

/** Selections under a type (Product, Vendor or Order) as a tree. */
const selectionTree: fc.Arbitrary<Tree[]> = fc.letrec<{ product: Tree[]; vendor: Tree[]; order: Tree[]; root: Tree[] }>((tie) => ({
  product: fc.array(
    fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constantFrom<Tree>(
        { field: "id", children: [] },
        { field: "name", children: [] },
        { field: "billingCycles { cycle price { amount } }", children: [] },
      ),
      tie("vendor").map((children) => ({ field: "vendor", children })),
    ),
    { minLength: 1, maxLength: 3 },
  ),
  vendor: fc.array(
    fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constantFrom<Tree>({ field: "id", children: [] }, { field: "name", children: [] }),
      fc.tuple(PAGE_SIZE, tie("product")).map(([size, children]) => ({
        field: "products",
        size,
        children: [
          { field: "totalCount", children: [] },
          { field: "nodes", children },
        ],
      })),
    ),
    { minLength: 1, maxLength: 3 },
  ),
  order: fc.array(
    fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constantFrom<Tree>({ field: "id", children: [] }, { field: "amount { amount }", children: [] }),
      fc.tuple(PAGE_SIZE).map(([size]) => ({
        field: "deliveries",
        size,
        children: [
          { field: "id", children: [] },
          { field: "attempts { status }", children: [] },
        ],
      })),
      tie("product").map((children) => ({ field: "product", children })),
    ),
    { minLength: 1, maxLength: 3 },
  ),
  root: fc.array(
    fc.oneof(
      fc.tuple(PAGE_SIZE, tie("product")).map(([size, children]) => ({ field: "products", size, children: [{ field: "nodes", children }] })),
      fc
        .tuple(PAGE_SIZE, tie("vendor"))
        .map(([size, children]) => ({ field: "vendors", size, children: [{ field: "edges", children: [{ field: "node", children }] }] })),
      fc.tuple(PAGE_SIZE, tie("order")).map(([size, children]) => ({
        field: "orders",
        size,
        children: [
          { field: "nodes", children },
          { field: "pageInfo { hasNextPage }", children: [] },
        ],
      })),
    ),
    { minLength: 1, maxLength: 3 },
  ),
})).root;

/**
 * Renders a tree as an operation: page sizes as literals, or each as a variable of its own (an
 * absent size stays absent).
 */
function renderTree(trees: Tree[], mode: "literal" | "variable"): { query: string; variables: Record<string, unknown> } {
  const variables: Record<string, unknown> = {};
  let alias = 0;
  const render = (tree: Tree): string => {
    let args = "";
    if (tree.size !== undefined) {
      if (mode === "literal") args = `(first: ${tree.size})`;
      else {
        const name = `v${Object.keys(variables).length}`;
        variables[name] = tree.size;
        args = `(first: $${name})`;
      }
    }
    const children = tree.children.length ? ` { ${tree.children.map(render).join(" ")} }` : "";
    return `f${alias++}: ${tree.field}${args}${children}`;
  };
  const body = trees.map(render).join(" ");
  const definitions = Object.keys(variables)
    .map((name) => `$${name}: Int`)
    .join(", ");
  return { query: `query P${definitions ? `(${definitions})` : ""} { ${body} }`, variables };
}

/**
 * Variables for an operation at its largest: every Int 100 (a page size at the cap), other
 * required values the simplest of their type.
 */
function largestVariables(source: string): Record<string, unknown> {
  const schema = supergraphSchema();
  const sample = (type: GraphQLInputType): unknown => {
    if (isNonNullType(type)) return sample(type.ofType);
    if (isListType(type)) return [];
    if (isEnumType(type)) return type.getValues()[0]!.value;
    if (isInputObjectType(type)) {
      return Object.fromEntries(
        Object.values(type.getFields())
          .filter((f) => isNonNullType(f.type))
          .map((f) => [f.name, sample(f.type)]),
      );
    }
    return ({ Int: 100, Float: 1, Boolean: false, JSONObject: {} } as Record<string, unknown>)[type.name] ?? "x";
  };
  const operation = getOperationAST(parse(source))!;
  return Object.fromEntries(
    (operation.variableDefinitions ?? []).map((d) => [d.variable.name.value, sample(typeFromAST(schema, d.type as NamedTypeNode) as GraphQLInputType)]),
  );
}

describe("limits at the router", () => {
  let t: TestStack;
  let key: string;
  beforeAll(async () => {
    t = await startTestStack();
    key = (await t.createKey("100")).key;
  });
  afterAll(() => t.close());

  it(`refuses a query deeper than ${LIMITS.depth} with query_too_deep, and runs one at the limit`, async () => {
    expect(measureOperation(typeChain(LIMITS.depth)).depth).toBe(LIMITS.depth);
    expect((await post(t.url, typeChain(LIMITS.depth), {}, key)).body.errors).toBeUndefined();
    expectRefused(await post(t.url, typeChain(LIMITS.depth + 1), {}, key), "query_too_deep", /^Query depth limit of 12 exceeded, found 13\.$/);
  });

  it(`refuses more than ${LIMITS.aliases} aliases with too_many_aliases, and runs ${LIMITS.aliases}`, async () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __type(name: "Query") { name }`).join(" ")} }`;
    expect((await post(t.url, aliases(LIMITS.aliases), {}, key)).body.errors).toBeUndefined();
    expectRefused(await post(t.url, aliases(LIMITS.aliases + 1), {}, key), "too_many_aliases", /^Aliases limit of 30 exceeded, found 31\.$/);
  });

  it(`refuses more than ${LIMITS.directives} directives with too_many_directives, and runs ${LIMITS.directives}`, async () => {
    const directives = (n: number) => `{ ${"__typename @skip(if: false) ".repeat(n)} }`;
    expect((await post(t.url, directives(LIMITS.directives), {}, key)).body.errors).toBeUndefined();
    expectRefused(await post(t.url, directives(LIMITS.directives + 1), {}, key), "too_many_directives", /^Directives limit of 20 exceeded, found 21\.$/);
  });

  it(`refuses a document of more than ${LIMITS.tokens} tokens with too_many_tokens before it is parsed whole`, async () => {
    // `__type(name: "Query") { name }` is 9 tokens; graphql merges the repeats.
    const repeated = (n: number) => `{ ${'__type(name: "Query") { name } '.repeat(n)}}`;
    const within = repeated(220);
    expect(measureOperation(within).tokens).toBeGreaterThan(LIMITS.tokens - 30);
    expect(measureOperation(within).tokens).toBeLessThanOrEqual(LIMITS.tokens);
    expect((await post(t.url, within, {}, key)).body).toEqual({ data: { __type: { name: "Query" } } });
    expectRefused(await post(t.url, repeated(230), {}, key), "too_many_tokens", /^Token limit of 2000 exceeded\.$/);
  });

  describe(`the cost limit (${LIMITS.cost}), computed with the request's variables`, () => {
    it("refuses the issue's nested, aliased products → vendor → products query with page sizes in variables (n = 100) with 400 query_too_costly", async () => {
      const query = issueQuery("$n");
      expect(query.length).toBeLessThan(3_072);
      const cost = measureOperation(query, { n: 100 }).cost!;
      expect(cost).toBeGreaterThan(1_000 * LIMITS.cost);
      const refused = await post(t.url, query, { n: 100 }, key);
      expectRefused(refused, "query_too_costly", new RegExp(`^Query cost limit of ${LIMITS.cost} exceeded, found ${cost}\\.$`));
      expect(refused.body.errors[0].extensions).toMatchObject({ cost, limit: LIMITS.cost });
      // Small pages make the same document cheap: it runs.
      const small = await post(t.url, query, { n: 2 }, key);
      expect(small.body.errors, JSON.stringify(small.body)).toBeUndefined();
      expect(small.body.data.a0.nodes.length).toBeGreaterThan(0);
    });

    it("costs each request of one document with its own variables, also after a request whose variables did not coerce", async () => {
      const query = `query Page($n: Int, $s: ProductStatus) { products(first: $n, status: $s) { nodes { vendor { products(first: $n) { nodes { id } } } } } }`;
      expect((await post(t.url, query, { n: 2, s: "AVAILABLE" }, key)).body.errors).toBeUndefined();
      // Refused by variable coercion: no cost is known (and none is remembered) for n = 100.
      const invalid = await post(t.url, query, { n: 100, s: "NOPE" }, key);
      expect(invalid.body.errors[0].extensions.code).not.toBe("query_too_costly");
      expectRefused(await post(t.url, query, { n: 100, s: "AVAILABLE" }, key), "query_too_costly", /^Query cost limit of 5000 exceeded, found 20300\.$/);
      expect((await post(t.url, query, { n: 2 }, key)).body.errors).toBeUndefined();
      expectRefused(await post(t.url, query, { n: 100 }, key), "query_too_costly", /found 20300\.$/);
    });

    it("refuses a fragment bomb (each fragment spreading the next twelve times) as query_too_costly without walking all of it", async () => {
      // Four levels, within the depth limit: 12^4 selections for the walk (graphql-js's execution merges the spreads).
      const fragments = Array.from({ length: 5 }, (_, i) =>
        i < 4 ? `fragment F${i} on Query { ${`...F${i + 1} `.repeat(12)}}` : `fragment F${i} on Query { __typename }`,
      );
      const bomb = `query Bomb { ...F0 } ${fragments.join(" ")}`;
      expectRefused(await post(t.url, bomb, {}, key), "query_too_costly", /^Query cost cannot be estimated: more than 10000 selections to walk$/);
    });

    it("refuses the same query with literal page sizes at the same cost", async () => {
      const cost = measureOperation(issueQuery("100")).cost!;
      expect(cost).toBe(measureOperation(issueQuery("$n"), { n: 100 }).cost);
      const refused = await post(t.url, issueQuery("100"), {}, key);
      expectRefused(refused, "query_too_costly", new RegExp(`found ${cost}\\.$`));
      expect(refused.body.errors[0].extensions.cost).toBe(cost);
    });

    it("refuses it over GET /graphql too", async () => {
      const search = new URLSearchParams({ query: issueQuery("$n"), variables: JSON.stringify({ n: 100 }) });
      const response = await fetch(`${t.url}/graphql?${search}`, { headers: { accept: "application/graphql-response+json", authorization: `Bearer ${key}` } });
      expectRefused({ status: response.status, body: await response.json() }, "query_too_costly", /^Query cost limit of \d+ exceeded/);
    });

    it("refuses a costly subscription over SSE and over graphql-ws before it starts", async () => {
      const variables = { n: 100 };
      expect(measureOperation(COSTLY_SUBSCRIPTION, variables).cost).toBeGreaterThan(LIMITS.cost);
      const codes = (events: { errors?: GraphqlError[] }[]) => events.flatMap((e) => e.errors ?? []).map((e) => e.extensions?.code);
      // One result with the error, then the end of the stream: the subscription never started.
      const sse = await collectSse(t.url, COSTLY_SUBSCRIPTION, variables, { authorization: `Bearer ${key}` });
      expect(codes(sse.events)).toEqual(["query_too_costly"]);
      expect(sse.events.some((e) => e.data)).toBe(false);
      const client = wsClient(t.url, { authorization: `Bearer ${key}` });
      try {
        const ws = await collect(client, COSTLY_SUBSCRIPTION, variables).done;
        expect(ws.error).toBeUndefined();
        expect(codes(ws.events)).toEqual(["query_too_costly"]);
        expect(ws.events[0].errors[0].extensions).toMatchObject({ http: { status: 400 }, cost: measureOperation(COSTLY_SUBSCRIPTION, variables).cost });
        expect(ws.events.some((e) => e.data)).toBe(false);
      } finally {
        await client.dispose();
      }
    });

    it("runs the 100-task, 100-order dashboard, costing under a quarter of the limit", async () => {
      expect(measureOperation(DASHBOARD).cost).toBeLessThan(LIMITS.cost / 4);
      const dashboard = await post(t.url, DASHBOARD, {}, key);
      expect(dashboard.body.errors).toBeUndefined();
      expect(dashboard.body.data.viewer.tasks.totalCount).toBe(0);
    });

    it("costs any operation the same whether its page sizes are literals or variables", () => {
      fc.assert(
        fc.property(selectionTree, (tree) => {
          const literal = renderTree(tree, "literal");
          const variable = renderTree(tree, "variable");
          const literalCost = measureOperation(literal.query, literal.variables).cost;
          expect(literalCost).toEqual(expect.any(Number));
          expect(measureOperation(variable.query, variable.variables).cost, `${literal.query}\n${variable.query}`).toBe(literalCost);
        }),
        { numRuns: 300 },
      );
    });

    it("counts a page by its size: absent or null is the default 20, below 1 never lowers the cost", () => {
      const cost = (args: string, variables?: Record<string, unknown>) =>
        measureOperation(`query Q($n: Int) { products${args} { nodes { id } } }`, variables).cost;
      expect(cost("")).toBe(20 * 2);
      expect(cost("(first: null)")).toBe(20 * 2);
      expect(cost("(first: $n)")).toBe(20 * 2);
      expect(cost("(first: $n)", { n: null })).toBe(20 * 2);
      expect(cost("(first: $n)", { n: 7 })).toBe(7 * 2);
      expect(cost("(first: -50)")).toBe(2);
      expect(measureOperation(`{ a: products(first: -1000) { nodes { id } } b: ${"products(first: 100) { nodes { id } }"} }`).cost).toBe(2 + 200);
    });

    it("counts no paginated field under a list without a page argument (such lists count once)", () => {
      const schema = supergraphSchema();
      const offending: string[] = [];
      const seen = new Set<string>();
      // `page`: the type is what a paginated field returns (a connection): its lists are the page.
      const visit = (type: GraphQLNamedType, underUnslicedList: string | null, page: boolean) => {
        const key = `${type.name}:${underUnslicedList !== null}:${page}`;
        if (!isObjectType(type) || type.name.startsWith("__") || seen.has(key)) return;
        seen.add(key);
        for (const field of Object.values(type.getFields())) {
          const sliced = field.args.some((a) => a.name === "first" || a.name === "last");
          if (sliced && underUnslicedList) offending.push(`${underUnslicedList} → ${type.name}.${field.name}`);
          const unsliced = !sliced && !page && isListType(getNullableType(field.type)) ? `${type.name}.${field.name}` : null;
          visit(getNamedType(field.type), underUnslicedList ?? unsliced, sliced);
        }
      };
      for (const root of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) if (root) visit(root, null, false);
      expect(offending).toEqual([]);
    });
  });

  it("refuses first above 100 given literally, with a clear message, before any subgraph runs", async () => {
    expectRefused(
      await post(t.url, "{ viewer { tasks(first: 101) { nodes { id } } } }", {}, key),
      "page_size_too_large",
      /^first must be an integer from 1 to 100$/,
    );
    expectRefused(
      await post(t.url, "{ viewer { orders(first: 1000) { nodes { id } } } }", {}, key),
      "page_size_too_large",
      /^first must be an integer from 1 to 100$/,
    );
    expect((await post(t.url, "{ viewer { tasks(first: 100) { nodes { id } } } }", {}, key)).body.errors).toBeUndefined();
  });

  it("refuses first above 100 given in a variable, or as a variable's default, or inside a fragment", async () => {
    const query = "query Page($n: Int) { viewer { tasks(first: $n) { nodes { id } } } }";
    const refused = await post(t.url, query, { n: 101 }, key);
    expectRefused(refused, "page_size_too_large", /^first must be an integer from 1 to 100$/);
    expect(refused.body.errors[0].extensions).toMatchObject({ field: "tasks", argument: "first", limit: 100 });
    expect((await post(t.url, query, { n: 100 }, key)).body.errors).toBeUndefined();
    // The validation cache keeps a document's verdict; the page size is checked on every request.
    expectRefused(await post(t.url, query, { n: 5000 }, key), "page_size_too_large", /^first must be an integer from 1 to 100$/);
    expectRefused(await post(t.url, "query Page($n: Int = 500) { viewer { tasks(first: $n) { nodes { id } } } }", {}, key), "page_size_too_large", /first/);
    expectRefused(
      await post(t.url, "query Page($n: Int) { viewer { ...Orders } } fragment Orders on Account { orders(first: $n) { nodes { id } } }", { n: 101 }, key),
      "page_size_too_large",
      /^first must be an integer from 1 to 100$/,
    );
  });

  it("answers 413 with a JSON GraphQL error for a body over the limit, by content-length and by streamed bytes", async () => {
    const limit = loadConfig({}).bodyLimitBytes; // BODY_LIMIT_BYTES's default: the test stack keeps it
    const body = JSON.stringify({ query: "{ __typename }", extensions: { pad: "x".repeat(limit) } });
    // With credentials (authentication comes first: without them this is 401, trust-edges.test.ts).
    const declared = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sy_unchecked" },
      body,
    });
    expect(declared.status).toBe(413);
    expect(declared.headers.get("content-type")).toMatch(/application\/json/);
    expect(await declared.json()).toEqual({
      errors: [{ message: `Request body is too large: the limit is ${limit} bytes`, extensions: { code: "payload_too_large", http: { status: 413 } } }],
    });

    // Chunked, no content-length: refused once the bytes received pass the limit.
    const streamed = await new Promise<{ status: number; text: string; sent: number }>((resolve, reject) => {
      const url = new URL(`${t.url}/graphql`);
      const req = http.request({
        host: url.hostname,
        port: url.port,
        path: "/graphql",
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer sy_unchecked" },
      });
      let sent = 0;
      let stop = false;
      req.on("response", (res) => {
        stop = true;
        let text = "";
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, text, sent }));
      });
      req.on("error", reject);
      const chunk = Buffer.alloc(64 * 1024, "x");
      req.write('{"query":"{ __typename }","extensions":{"pad":"');
      const pump = () => {
        // Keeps sending (up to 8x the limit) until the router answers.
        while (!stop && sent < 8 * limit) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once("drain", pump);
        }
        if (!stop) req.end('"}}');
      };
      pump();
    });
    expect(streamed.status).toBe(413);
    expect(JSON.parse(streamed.text).errors[0].extensions.code).toBe("payload_too_large");
    expect(streamed.sent).toBeLessThan(8 * limit);

    // Just under the limit is served.
    const under = JSON.stringify({ query: "{ __typename }", extensions: { pad: "x".repeat(limit - 100) } });
    const served = await fetch(`${t.url}/graphql`, { method: "POST", headers: { "content-type": "application/json" }, body: under });
    expect(served.status).toBe(200);
    expect(await served.json()).toEqual({ data: { __typename: "Query" } });
  });

  it("reads the rest of a refused body, so a client still sending gets the 413 and keeps its connection (lingering close)", async () => {
    const limit = loadConfig({}).bodyLimitBytes;
    const url = new URL(t.url);
    const socket = net.connect(Number(url.port), url.hostname);
    let received = "";
    let failure: Error | undefined;
    const statusLines = () => received.match(/HTTP\/1\.1 \d{3}/g) ?? [];
    // Resolves once `count` answers have begun arriving, or the connection failed or closed.
    const answered = (count: number) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (statusLines().length < count && !failure && !socket.destroyed) return;
          socket.off("data", check).off("close", check);
          resolve();
        };
        socket.on("data", check).on("close", check);
        check();
      });
    socket.on("data", (chunk) => (received += chunk.toString("utf8")));
    socket.on("error", (error) => (failure = error));
    socket.write(
      "POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer sy_unchecked\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    const chunk = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;
    socket.write(chunk('{"query":"{ __typename }","extensions":{"pad":"'));
    const piece = "x".repeat(64 * 1024);
    for (let sent = 0; sent <= limit; sent += piece.length) socket.write(chunk(piece));
    await answered(1);
    expect(received).toMatch(/^HTTP\/1\.1 413/);
    expect(received).not.toMatch(/connection: close/i);
    // The client had more on the wire: it sends another limit's worth and ends the body, then asks again.
    for (let sent = 0; sent <= limit; sent += piece.length) socket.write(chunk(piece));
    socket.write(chunk('"}}') + "0\r\n\r\n");
    const next = JSON.stringify({ query: "{ __typename }" });
    socket.write(`POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${next.length}\r\n\r\n${next}`);
    await answered(2);
    socket.destroy();
    expect(failure).toBeUndefined();
    expect(statusLines()).toEqual(["HTTP/1.1 413", "HTTP/1.1 200"]);
    expect(received).toContain('{"data":{"__typename":"Query"}}');
  });

  it("allows introspection and shows field suggestions outside production", async () => {
    const introspection = await post(t.url, "{ __schema { queryType { name } } }", {}, key);
    expect(introspection.body).toEqual({ data: { __schema: { queryType: { name: "Query" } } } });
    const typo = await post(t.url, "{ modls { id } }", {}, key);
    expect(typo.body.errors[0].message).toMatch(/Did you mean "models"/);
  });
});

describe("every REST shim operation within the limits", () => {
  it("measures every operation the shims and /health send at a small fraction of each limit", () => {
    let costliest = 0;
    for (const [name, operation] of Object.entries({ ...OPERATIONS, ...CLOUD_OPERATIONS })) {
      // The largest pages the shims ask for (`limit=100`): every Int variable 100.
      const size = measureOperation(operation, largestVariables(operation));
      expect(size.depth, name).toBeLessThanOrEqual(LIMITS.depth / 2);
      expect(size.aliases, name).toBe(0);
      expect(size.directives, name).toBe(0);
      expect(size.tokens, name).toBeLessThanOrEqual(LIMITS.tokens / 10);
      expect(size.cost, name).toEqual(expect.any(Number));
      expect(size.cost, name).toBeLessThanOrEqual(LIMITS.cost / 5);
      costliest = Math.max(costliest, size.cost!);
    }
    // Measured: 703 (RestUsage: 100 tasks and 100 request-log rows).
    expect(costliest).toBe(703);
  });

  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t.close());

  it("still serves each shim route through the limited gateway", async () => {
    const { key, account_id: accountId } = await t.createKey("100");
    await topUpCustomer(t.stack.db!, { accountId, customerId: "cust-limits", amount: parseYuan("1000") });
    const ok = async (method: string, path: string, body?: unknown, status = 200) => {
      const response = await t.rest(method, path, { key, body });
      expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).toBe(status);
      return response.body.data;
    };

    expect((await t.rest("GET", "/health")).status).toBe(200);
    const video = await ok("POST", "/api/v1/video/generations", { prompt: "a lighthouse", model_id: 69, seconds: 5 });
    const image = await ok("POST", "/api/v1/images/generations", { prompt: "a quiet harbour", model_id: 45, count: 1 });
    await t.waitForTask(key, video.task_id);
    expect((await ok("GET", `/api/v1/tasks/${image.task_id}`)).task_id).toBe(image.task_id);
    const usage = await ok("GET", "/api/v1/usage?limit=100");
    expect(usage.tasks).toHaveLength(2);

    const api = "/openapi/v1";
    expect((await ok("GET", `${api}/vendors?limit=100`)).items.length).toBeGreaterThanOrEqual(2);
    const products = await ok("GET", `${api}/products?category=cdn&status=available&limit=100`);
    const product = await ok("GET", `${api}/products/${products.items[0].product_id}`);
    const order = await ok(
      "POST",
      `${api}/orders`,
      {
        client_order_no: `limits-${Date.now()}`,
        product_id: product.product_id,
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "cust-limits" },
        metadata: { domain: "limits.example.com" },
      },
      201,
    );
    const active = await t.waitForAccount(
      key,
      () => t.rest("GET", `${api}/orders/${order.order_id}`, { key }),
      (r) => r.body.data?.status === "active",
    );
    expect(((await ok("GET", `${api}/orders?limit=100`)).items as { order_id: string }[]).map((o) => o.order_id)).toContain(order.order_id);
    await ok("POST", `${api}/orders/${order.order_id}/renew`, { periods: 1 });
    const domain = `www${Date.now()}.example.com`;
    await ok(
      "POST",
      `${api}/domains`,
      { domain, origin: { type: "ip", address: "93.184.216.34" }, protocol: "https", order_id: order.order_id, customer_id: "cust-limits" },
      201,
    );
    expect((await ok("GET", `${api}/domains/${domain}/status`)).domain).toBe(domain);
    await ok("POST", `${api}/domains/${domain}/purge`, { type: "url", targets: [`https://${domain}/a.html`] }, 201);
    const resourceId = active.body.data.resource_id;
    const now = new Date();
    await ok("GET", `${api}/usage/bandwidth?resource_id=${resourceId}&start=${new Date(now.getTime() - 3600_000).toISOString()}&end=${now.toISOString()}`);
    await ok("GET", `${api}/usage/traffic?resource_id=${resourceId}&start=${now.toISOString().slice(0, 10)}&end=${now.toISOString().slice(0, 10)}`);
    expect((await ok("GET", `${api}/resources?limit=100`)).items.length).toBeGreaterThanOrEqual(1);
    expect((await ok("GET", `${api}/billing/balance?customer_id=cust-limits`)).customer_id).toBe("cust-limits");
    expect((await ok("GET", `${api}/billing/transactions?customer_id=cust-limits&limit=100`)).items.length).toBeGreaterThanOrEqual(2);
    const statementId = `stm_${now.toISOString().slice(0, 7)}`;
    await ok("GET", `${api}/billing/statements/${statementId}`);
    const ready = await waitUntil(
      () => t.rest("GET", `${api}/billing/statements/${statementId}`, { key }),
      (r) => r.body.data?.export_status === "ready",
    );
    const csv = await fetch(`${t.url}${ready.body.data.export_url}`, { headers: { authorization: `Bearer ${key}` } });
    expect(csv.status).toBe(200);
  });
});

describe("the request timeout", () => {
  let router: Awaited<ReturnType<typeof startRouter>>;
  let stalled: http.Server;
  beforeAll(async () => {
    // A subgraph that accepts requests and never answers them.
    stalled = http.createServer(() => {});
    await new Promise<void>((resolve) => stalled.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(stalled.address() as AddressInfo).port}/graphql`;
    router = await startRouter({
      host: "127.0.0.1",
      port: 0,
      subgraphUrls: { generation: url, cloud: url },
      production: false,
      bodyLimit: 1_048_576,
      requestTimeoutMs: 300,
      logger: pino({ level: "silent" }),
      subgraphSecret: "x".repeat(32),
    });
  });
  afterAll(async () => {
    await router.close();
    stalled.closeAllConnections();
    await new Promise((resolve) => stalled.close(resolve));
  });

  it("answers 504 request_timeout when an operation takes longer than REQUEST_TIMEOUT_MS", async () => {
    const started = Date.now();
    const response = await fetch(`${router.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ query: "{ models { id } }" }),
    });
    const elapsed = Date.now() - started;
    expect(response.status).toBe(504);
    expect(await response.json()).toEqual({
      errors: [{ message: "Request timed out after 300 ms", extensions: { code: "request_timeout", http: { status: 504 } } }],
    });
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(5_000);
  });

  it("leaves an operation that finishes in time alone", async () => {
    const response = await fetch(`${router.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ __typename }" }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { __typename: "Query" } });
  });
});

describe("limits in production (NODE_ENV=production)", () => {
  let t: TestStack;
  let key: string;
  beforeAll(async () => {
    t = await startTestStack({ NODE_ENV: "production" });
    key = (await t.createKey("100")).key;
  });
  afterAll(() => t.close());

  it("turns introspection off, for __schema and __type, and keeps __typename", async () => {
    for (const query of ["{ __schema { queryType { name } } }", '{ __type(name: "Query") { name } }']) {
      const result = await post(t.url, query, {}, key);
      expect(result.status).toBe(400);
      expect(result.body.data ?? null).toBeNull();
      expect(result.body.errors[0].message).toMatch(/^GraphQL introspection has been disabled/);
    }
    expect((await post(t.url, "{ __typename }", {}, key)).body).toEqual({ data: { __typename: "Query" } });
  });

  it("hides field, argument and enum value suggestions, in literals and in variables", async () => {
    const cases: [string, Record<string, unknown>][] = [
      ["{ modls { id } }", {}],
      ["{ viewer { tasks(frist: 1) { nodes { id } } } }", {}],
      ["{ viewer { tasks(first: 1, status: SUCCEEDE) { nodes { id } } } }", {}],
      ["query Q($s: TaskStatus) { viewer { tasks(first: 1, status: $s) { nodes { id } } } }", { s: "SUCCEEDE" }],
    ];
    for (const [query, variables] of cases) {
      const result = await post(t.url, query, variables, key);
      expect(result.body.errors, query).toHaveLength(1);
      expect(result.body.errors[0].message, query).not.toMatch(/Did you mean|models|SUCCEEDED|"first"/);
      expect(result.body.errors[0].message, query).toMatch(/\[Suggestion hidden\]$/);
    }
  });

  it("keeps every limit and serves GraphiQL to no one", async () => {
    expectRefused(
      await post(t.url, "{ viewer { tasks(first: 101) { nodes { id } } } }", {}, key),
      "page_size_too_large",
      /^first must be an integer from 1 to 100$/,
    );
    expectRefused(
      await post(t.url, `{ viewer { ${Array.from({ length: 31 }, (_, i) => `a${i}: id`).join(" ")} } }`, {}, key),
      "too_many_aliases",
      /^Aliases limit of 30 exceeded, found 31\.$/,
    );
    const page = await fetch(`${t.url}/graphql`, { headers: { accept: "text/html" } });
    expect(await page.text()).not.toMatch(/graphiql/i);
  });
});
