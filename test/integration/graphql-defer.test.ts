/**
 * `@defer` (issue 21 §4; README "Transports"; docs/adr/0021-transports.md): off by default (an
 * unknown directive, 400); with GRAPHQL_DEFER=1 the deferred fields arrive in later payloads,
 * across both subgraphs, over multipart/mixed (Apollo Client), SSE (graphql-sse, both modes) and graphql-ws,
 * with the same limits as any operation.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { Defer20220824Handler } from "@apollo/client/incremental";
import { createClient } from "graphql-sse";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { collect, wsClient } from "../support/graphql-ws.ts";

/** The dashboard's shape: the account at once, its balance (generation) and orders (cloud) later. */
const DASHBOARD = "query Dash { viewer { id ... @defer { balance { amount } orders(first: 5) { totalCount } } } }";

let t: TestStack;
let plain: TestStack;
beforeAll(async () => {
  [t, plain] = await Promise.all([startTestStack({ GRAPHQL_DEFER: "1" }), startTestStack()]);
});
afterAll(() => Promise.all([t.close(), plain.close()]));

/** The JSON payloads of a multipart/mixed answer, in order. */
function multipartPayloads(text: string): any[] {
  return text
    .split(/\r?\n---/)
    .map((part) => part.slice(part.indexOf("{")))
    .filter((body) => body.startsWith("{"))
    .map((body) => JSON.parse(body.trim()));
}

async function post(stack: TestStack, key: string, accept: string, query = DASHBOARD) {
  return fetch(`${stack.url}/graphql`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept },
    body: JSON.stringify({ query }),
  });
}

describe("with GRAPHQL_DEFER=1", () => {
  it("sends the deferred fields of both subgraphs in a later multipart/mixed payload", async () => {
    const { key } = await t.createKey("4");
    const response = await post(t, key, "multipart/mixed;deferSpec=20220824, application/json;q=0.9");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^multipart\/mixed/);
    const [first, ...rest] = multipartPayloads(await response.text());
    expect(first).toEqual({ data: { viewer: { id: expect.any(String) } }, hasNext: true });
    expect(rest.at(-1).hasNext).toBe(false);
    const incremental = rest.flatMap((payload) => payload.incremental ?? []);
    expect(incremental).toEqual([{ data: { balance: { amount: "4.00" }, orders: { totalCount: 0 } }, path: ["viewer"] }]);
  });

  it("gives Apollo Client (its HttpLink with the @defer handler) the initial result, then the whole one", async () => {
    const { key } = await t.createKey("9");
    const client = new ApolloClient({
      link: new HttpLink({ uri: `${t.url}/graphql`, headers: { authorization: `Bearer ${key}` } }),
      cache: new InMemoryCache(),
      incrementalHandler: new Defer20220824Handler(),
    });
    const seen: any[] = [];
    await new Promise<void>((resolve, reject) => {
      const sub = client.watchQuery({ query: gql(DASHBOARD), fetchPolicy: "network-only" }).subscribe({
        next: (result) => {
          if (result.data) seen.push(result.data);
          if ((result.data as any)?.viewer?.balance) {
            sub.unsubscribe();
            resolve();
          }
        },
        error: reject,
      });
    });
    // First the account alone (the deferred fragment not yet there), then the whole dashboard.
    expect(seen[0].viewer.balance).toBeUndefined();
    expect(seen[0].viewer.id).toEqual(expect.any(String));
    expect(seen.at(-1).viewer).toMatchObject({ balance: { amount: "9.00" }, orders: { totalCount: 0 } });
  });

  for (const singleConnection of [false, true]) {
    it(`streams the deferred payloads over SSE (graphql-sse, ${singleConnection ? "single connection" : "distinct connections"} mode)`, async () => {
      const { key } = await t.createKey("2");
      const client = createClient({ url: `${t.url}/graphql`, singleConnection, headers: { authorization: `Bearer ${key}` }, retryAttempts: 0 });
      try {
        const results: any[] = [];
        for await (const result of client.iterate({ query: DASHBOARD })) results.push(result);
        expect(results[0]).toEqual({ data: { viewer: { id: expect.any(String) } }, hasNext: true });
        expect(results.at(-1).hasNext).toBe(false);
        expect(results.flatMap((r) => r.incremental ?? [])[0].data.balance.amount).toBe("2.00");
      } finally {
        client.dispose();
      }
    });
  }

  it("sends the deferred payloads over graphql-ws as further `next` messages", async () => {
    const { key } = await t.createKey("3");
    const client = wsClient(t.url, { Authorization: `Bearer ${key}` });
    try {
      const { events, error } = await collect(client, DASHBOARD).done;
      expect(error).toBeUndefined();
      expect(events[0]).toEqual({ data: { viewer: { id: expect.any(String) } }, hasNext: true });
      expect(events.at(-1).hasNext).toBe(false);
      expect(events.flatMap((e) => e.incremental ?? [])[0].data.balance.amount).toBe("3.00");
    } finally {
      await client.dispose();
    }
  });

  it("answers a client that accepts only JSON with 400 invalid_request naming what to accept", async () => {
    const { key } = await t.createKey("1");
    const response = await post(t, key, "application/json");
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body.errors[0].extensions.code).toBe("invalid_request");
    expect(body.errors[0].message).toMatch(/multipart\/mixed or text\/event-stream/);
  });

  it("keeps the limits: a deferred selection over the cost limit is refused before anything runs", async () => {
    const { key } = await t.createKey("1");
    const costly = "{ models { id } ... @defer { products(first: 100) { nodes { vendor { products(first: 100) { nodes { id } } } } } } }";
    const response = await post(t, key, "multipart/mixed, application/json", costly);
    const text = await response.text();
    expect(text).toContain('"code":"query_too_costly"');
    expect(text).not.toContain('"models"');
  });
});

describe("by default", () => {
  it("refuses @defer as an unknown directive (400 graphql_validation_failed): nothing pretends to defer", async () => {
    const { key } = await plain.createKey("1");
    const response = await post(plain, key, "application/graphql-response+json");
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body.errors[0]).toMatchObject({ message: 'Unknown directive "@defer".', extensions: { code: "graphql_validation_failed" } });
  });
});
