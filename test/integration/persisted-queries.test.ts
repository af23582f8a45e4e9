/**
 * Automatic persisted queries on the router's `/graphql` (issue 21 §3; router/plugins/usePersistedQueries.ts):
 * Apollo Client's persisted-query link and urql's persisted exchange, against a real router, send
 * a hash alone, get `PersistedQueryNotFound`, send the document with its hash, and from then on
 * the hash alone runs it; a hash that is not the document's is refused; two routers sharing Redis
 * share the registered documents.
 */
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { Client, fetchExchange } from "@urql/core";
import { persistedExchange } from "@urql/exchange-persisted";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { collect, submitUntil, wsClient } from "../support/graphql-ws.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** One request a client sent to `/graphql`, as the router received it. */
interface Sent {
  method: string;
  query?: string;
  hash?: string;
}

/** A fetch that records what it sends (the client's own requests: nothing is changed). */
function recordingFetch(sent: Sent[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const method = init?.method ?? "GET";
    const params =
      method === "GET"
        ? { query: url.searchParams.get("query") ?? undefined, extensions: JSON.parse(url.searchParams.get("extensions") ?? "null") }
        : JSON.parse(String(init?.body));
    sent.push({ method, query: params.query || undefined, hash: params.extensions?.persistedQuery?.sha256Hash });
    return fetch(input, init);
  };
}

/** A POST of raw GraphQL parameters; the status and body. */
async function post(url: string, params: Record<string, unknown>, key?: string) {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/graphql-response+json" };
  if (key) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`${url}/graphql`, { method: "POST", headers, body: JSON.stringify(params) });
  return { status: response.status, body: await response.json() };
}

const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

describe("automatic persisted queries", () => {
  let t: TestStack;
  let key: string;
  beforeAll(async () => {
    t = await startTestStack();
    key = (await t.createKey("10")).key;
  }, 60_000);
  afterAll(() => t?.close());

  it("Apollo Client sends the hash, then the document on PersistedQueryNotFound, then the hash alone", async () => {
    const sent: Sent[] = [];
    const client = () =>
      new ApolloClient({
        cache: new InMemoryCache(),
        link: new PersistedQueryLink({ sha256 }).concat(
          new HttpLink({ uri: `${t.url}/graphql`, headers: { authorization: `Bearer ${key}` }, fetch: recordingFetch(sent) }),
        ),
      });
    const query = gql`query ApolloApq${randomUUID().slice(0, 8)} { viewer { balance { amount } } }`;
    const first = await client().query({ query, fetchPolicy: "network-only" });
    expect(first.data).toMatchObject({ viewer: { balance: { amount: "10.00" } } });
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatchObject({ method: "POST", query: undefined });
    expect(sent[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(sent[1]!.query).toContain("viewer");
    expect(sent[1]!.hash).toBe(sha256(sent[1]!.query!));
    // A new client (no memory of the first): the router knows the hash now.
    const second = await client().query({ query, fetchPolicy: "network-only" });
    expect(second.data).toEqual(first.data);
    expect(sent).toHaveLength(3);
    expect(sent[2]).toMatchObject({ query: undefined, hash: sent[0]!.hash });
  });

  it("urql's persisted exchange sends the hash, then the document on PersistedQueryNotFound, then the hash alone", async () => {
    const sent: Sent[] = [];
    const client = () =>
      new Client({
        url: `${t.url}/graphql`,
        exchanges: [persistedExchange({ generateHash: async (text) => sha256(text) }), fetchExchange],
        fetch: recordingFetch(sent),
        fetchOptions: { headers: { authorization: `Bearer ${key}` } },
        requestPolicy: "network-only",
      });
    const query = `query UrqlApq${randomUUID().slice(0, 8)} { viewer { spent { amount } } }`;
    const first = await client().query(query, {}).toPromise();
    expect(first.error).toBeUndefined();
    expect(first.data).toMatchObject({ viewer: { spent: { amount: "0.00" } } });
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatchObject({ query: undefined });
    expect(sent[1]!.hash).toBe(sent[0]!.hash);
    expect(sent[1]!.query).toBeDefined();
    const second = await client().query(query, {}).toPromise();
    expect(second.data).toEqual(first.data);
    expect(sent).toHaveLength(3);
    expect(sent[2]).toMatchObject({ query: undefined, hash: sent[0]!.hash });
  });

  it("answers an unknown hash with the protocol's PersistedQueryNotFound, over POST, GET and graphql-ws", async () => {
    const hash = sha256(`query Unknown${randomUUID()} { models { id } }`);
    const expected = { message: "PersistedQueryNotFound", extensions: { code: "PERSISTED_QUERY_NOT_FOUND", http: { status: 400 } } };
    const posted = await post(t.url, { extensions: persisted(hash) });
    expect(posted.status).toBe(400);
    expect(posted.body.errors).toEqual([expected]);
    const got = await fetch(`${t.url}/graphql?extensions=${encodeURIComponent(JSON.stringify(persisted(hash)))}`, { headers: { accept: "application/json" } });
    expect(got.status).toBe(400);
    expect((await got.json()).errors).toEqual([expected]);
    const ws = wsClient(t.url, { authorization: `Bearer ${key}` });
    try {
      const result = await new Promise<any>((resolve, reject) => {
        let last: unknown;
        ws.subscribe({ query: "", extensions: persisted(hash) } as never, { next: (v) => (last = v), error: reject, complete: () => resolve(last) });
      });
      expect(result.errors).toEqual([expected]);
    } finally {
      await ws.dispose();
    }
  });

  it("refuses a document whose hash is not its SHA-256, and does not register it", async () => {
    const query = `query Mismatch${randomUUID().slice(0, 8)} { models { id } }`;
    const wrong = sha256(`${query} `);
    const refused = await post(t.url, { query, extensions: persisted(wrong) });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      errors: [
        {
          message: "The persisted query hash is not the SHA-256 of the document sent with it",
          extensions: { code: "persisted_query_hash_mismatch", http: { status: 400 } },
        },
      ],
    });
    expect((await post(t.url, { extensions: persisted(wrong) })).body.errors[0].message).toBe("PersistedQueryNotFound");
    expect((await post(t.url, { extensions: persisted(sha256(query)) })).body.errors[0].message).toBe("PersistedQueryNotFound");
  });

  it("registers only documents that pass validation", async () => {
    const query = `query Invalid${randomUUID().slice(0, 8)} { noSuchField }`;
    const first = await post(t.url, { query, extensions: persisted(sha256(query)) });
    expect(first.body.errors[0].extensions.code).toBe("graphql_validation_failed");
    expect((await post(t.url, { extensions: persisted(sha256(query)) })).body.errors[0].message).toBe("PersistedQueryNotFound");
  });

  it("runs a registered query by hash over GET, SSE and graphql-ws", async () => {
    const query = `query Everywhere${randomUUID().slice(0, 8)} { models { id } }`;
    const hash = sha256(query);
    expect((await post(t.url, { query, extensions: persisted(hash) })).body.data.models.length).toBeGreaterThan(0);
    const got = await fetch(`${t.url}/graphql?extensions=${encodeURIComponent(JSON.stringify(persisted(hash)))}`, { headers: { accept: "application/json" } });
    expect(got.status).toBe(200);
    expect((await got.json()).data.models.length).toBeGreaterThan(0);
    const sse = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ extensions: persisted(hash) }),
    });
    expect(await sse.text()).toContain('"models"');
    const ws = wsClient(t.url, { authorization: `Bearer ${key}` });
    try {
      const events: any[] = [];
      await new Promise<void>((resolve, reject) =>
        ws.subscribe({ query: "", extensions: persisted(hash) } as never, { next: (v) => void events.push(v), error: reject, complete: resolve }),
      );
      expect(events[0].data.models.length).toBeGreaterThan(0);
    } finally {
      await ws.dispose();
    }
  });

  it("runs a registered mutation by hash over POST only: by GET it is 405, as a mutation sent in full by GET is", async () => {
    const mutation = `mutation ByGet${randomUUID().slice(0, 8)} { submitImageGeneration(input: { modelId: 45, prompt: "" }) { task { id } } }`;
    const hash = sha256(mutation);
    // Registered once valid, whatever the run answers (here: no key).
    const registered = await post(t.url, { query: mutation, extensions: persisted(hash) });
    expect(registered.body.errors[0].extensions.code).toBe("unauthorized");
    const byGet = await fetch(`${t.url}/graphql?extensions=${encodeURIComponent(JSON.stringify(persisted(hash)))}`, {
      headers: { accept: "application/json" },
    });
    expect(byGet.status).toBe(405);
    expect(byGet.headers.get("allow")).toBe("POST");
    const byPost = await post(t.url, { extensions: persisted(hash) });
    expect(byPost.body.errors[0].extensions.code).toBe("unauthorized");
  });

  it("runs an Apollo Client subscription over GraphQLWsLink with the persisted-query link (document and hash in the payload) and registers it", async () => {
    const ws = wsClient(t.url, { authorization: `Bearer ${key}` });
    // The hash Apollo sent (of the document as its cache rewrote it: `__typename` added).
    const hashes: string[] = [];
    const recordHash = new ApolloLink((operation, forward) => {
      hashes.push((operation.extensions.persistedQuery as { sha256Hash: string }).sha256Hash);
      return forward(operation);
    });
    const client = new ApolloClient({
      cache: new InMemoryCache(),
      link: ApolloLink.from([new PersistedQueryLink({ sha256 }), recordHash, new GraphQLWsLink(ws)]),
    });
    const query = gql`subscription ApolloLive${randomUUID().slice(0, 8)} { tasks { id status } }`;
    try {
      const first = new Promise<any>((resolve, reject) => {
        const subscription = client.subscribe({ query }).subscribe({
          next: (result) => {
            subscription.unsubscribe();
            resolve(result);
          },
          error: reject,
        });
      });
      const result = await submitUntil(t, key, first);
      expect(result.error).toBeUndefined();
      expect(result.data.tasks.id).toBeDefined();
      // Registered: the hash alone now runs it (its first event comes with the next change).
      expect(hashes).toHaveLength(1);
      const byHash = new Promise<any>((resolve) => {
        const stop = ws.subscribe({ query: "", extensions: persisted(hashes[0]!) } as never, {
          next: (value) => {
            stop();
            resolve(value);
          },
          error: resolve,
          complete: () => {},
        });
      });
      const hashed = await submitUntil(t, key, byHash);
      expect(hashed.data?.tasks?.id, JSON.stringify(hashed)).toBeDefined();
    } finally {
      await ws.dispose();
    }
  });

  it("registers a subscription's document over graphql-ws, as Apollo's link sends it in the payload", async () => {
    const query = `subscription Live${randomUUID().slice(0, 8)} { tasks { id status } }`;
    const ws = wsClient(t.url, { authorization: `Bearer ${key}` });
    try {
      const notFound = await new Promise<any>((resolve) => {
        ws.subscribe({ query: "", extensions: persisted(sha256(query)) } as never, { next: resolve, error: resolve, complete: () => {} });
      });
      expect(notFound.errors[0].message).toBe("PersistedQueryNotFound");
      // The retry: document and hash; the subscription runs (an event arrives when a task is submitted).
      const live = collect(ws, query, {}, (_event, all) => all.length === 1 && live.stop());
      const { events, error } = await submitUntil(t, key, live.done);
      expect(error).toBeUndefined();
      expect(events[0].data.tasks.id).toBeDefined();
    } finally {
      await ws.dispose();
    }
  });
});

describe("automatic persisted queries across routers", () => {
  const prefix = `switchyard-apq-${randomUUID().slice(0, 8)}:`;
  const env = { REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379", REDIS_KEY_PREFIX: prefix };
  let a: TestStack;
  let b: TestStack;
  beforeAll(async () => {
    a = await startTestStack(env);
    b = await startTestStack(env);
  }, 90_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it("runs by hash on one router a document registered through another (Redis)", async () => {
    const query = `query Shared${randomUUID().slice(0, 8)} { models { id } }`;
    const hash = sha256(query);
    expect((await post(b.url, { extensions: persisted(hash) })).body.errors[0].message).toBe("PersistedQueryNotFound");
    expect((await post(a.url, { query, extensions: persisted(hash) })).body.data.models.length).toBeGreaterThan(0);
    const shared = await post(b.url, { extensions: persisted(hash) });
    expect(shared.status).toBe(200);
    expect(shared.body.data.models.length).toBeGreaterThan(0);
  });
});
