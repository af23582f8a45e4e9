/**
 * `PERSISTED_ONLY=true` (issue 21 §3; router/plugins/usePersistedQueries.ts): a router that runs
 * the trusted documents of its manifests and nothing else, over HTTP (POST and GET), SSE and
 * graphql-ws, while every page and every REST path of the project still works (their operations
 * are in schema/trusted-documents.json).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createHash, randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "graphql-ws";
import { createClient as createSseClient, type Client as SseClient } from "graphql-sse";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { collect, sseEvents, submitUntil, wsClient } from "../support/graphql-ws.ts";
import { PROJECT_MANIFEST } from "../../router/plugins/usePersistedQueries.manifest.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const manifest: Record<string, string> = JSON.parse(fs.readFileSync(PROJECT_MANIFEST, "utf8"));
const manifestId = (name: string) => Object.keys(manifest).find((id) => manifest[id]!.includes(name))!;
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } });

/** A document of the deployment's own manifest (PERSISTED_DOCUMENTS), in Apollo's format. */
const DEPLOYMENT_DOCUMENT = "query DeploymentModels { models { id name } }";

let t: TestStack;
let key: string;
let ws: Client;
let sseSingle: SseClient<true>;
let extraManifest: string;

beforeAll(async () => {
  extraManifest = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-pq-")), "apollo-manifest.json");
  fs.writeFileSync(
    extraManifest,
    JSON.stringify({
      format: "apollo-persisted-query-manifest",
      version: 1,
      operations: [{ id: sha256(DEPLOYMENT_DOCUMENT), name: "DeploymentModels", type: "query", body: DEPLOYMENT_DOCUMENT }],
    }),
  );
  t = await startTestStack({ PERSISTED_ONLY: "true", PERSISTED_DOCUMENTS: extraManifest, ADMIN_TOKEN: "persisted-only-admin" });
  key = (await t.createKey("20")).key;
  ws = wsClient(t.url, { authorization: `Bearer ${key}` });
  sseSingle = createSseClient({ url: `${t.url}/graphql`, singleConnection: true, headers: { authorization: `Bearer ${key}` }, retryAttempts: 0 });
}, 60_000);

afterAll(async () => {
  await ws?.dispose();
  sseSingle?.dispose();
  await t?.close();
});

type Transport = "post" | "get" | "sse" | "graphql-ws" | "batch" | "sse-single";

/** The first result one transport answers for GraphQL parameters. */
async function send(transport: Transport, params: { query?: string; extensions?: unknown }): Promise<{ data?: unknown; errors?: any[] }> {
  const headers = { authorization: `Bearer ${key}` };
  if (transport === "post") {
    const response = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify(params),
    });
    return response.json();
  }
  if (transport === "get") {
    const search = new URLSearchParams();
    if (params.query !== undefined) search.set("query", params.query);
    if (params.extensions !== undefined) search.set("extensions", JSON.stringify(params.extensions));
    return (await fetch(`${t.url}/graphql?${search}`, { headers: { ...headers, accept: "application/json" } })).json();
  }
  if (transport === "batch") {
    const response = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify([params]),
    });
    const answers = await response.json();
    return answers[0];
  }
  if (transport === "sse-single") {
    return new Promise((resolve, reject) => {
      const stop = sseSingle.subscribe(
        { query: params.query ?? "", extensions: params.extensions as Record<string, unknown> },
        {
          next: (value) => {
            resolve(value as { data?: unknown; errors?: any[] });
            stop();
          },
          error: reject,
          complete: () => reject(new Error("completed without a result")),
        },
      );
    });
  }
  if (transport === "sse") {
    const response = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(params),
    });
    for await (const event of sseEvents(response.body!)) return event;
    throw new Error(`no event (status ${response.status})`);
  }
  return new Promise((resolve, reject) => {
    const stop = ws.subscribe(
      { query: params.query ?? "", extensions: params.extensions as Record<string, unknown> },
      {
        next: (value) => {
          resolve(value as { data?: unknown; errors?: any[] });
          stop();
        },
        error: reject,
        complete: () => reject(new Error("completed without a result")),
      },
    );
  });
}

/** Queries that would run (and answer data) on any router: anything of the public schema. */
const selection = fc.constantFrom(
  "models { id }",
  "models { id name kind }",
  "apiKey { id }",
  "viewer { balance { amount } }",
  "vendors(first: 1) { nodes { id } }",
  "__typename",
);
const arbitraryDocument = fc
  .record({
    name: fc.option(fc.stringMatching(/^[A-Z][A-Za-z0-9]{0,11}$/), { nil: undefined }),
    fields: fc.uniqueArray(selection, { minLength: 1, maxLength: 3 }),
    alias: fc.option(fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/), { nil: undefined }),
    spacing: fc.constantFrom(" ", "\n", "  ", "\t"),
  })
  .map(({ name, fields, alias, spacing }) => {
    const body = fields.map((field, i) => (alias && i === 0 ? `${alias}: ${field}` : field)).join(spacing);
    return name ? `query ${name}${spacing}{${spacing}${body}${spacing}}` : `{${spacing}${body}${spacing}}`;
  })
  .filter((text) => !manifest[sha256(text)] && text !== DEPLOYMENT_DOCUMENT);

describe("PERSISTED_ONLY=true", () => {
  it("runs no document outside the manifests, over POST, GET, a batch, SSE in both modes and graphql-ws, and registers none (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        arbitraryDocument,
        fc.constantFrom<Transport>("post", "get", "batch", "sse", "sse-single", "graphql-ws"),
        fc.constantFrom("document", "document and hash", "hash"),
        async (query, transport, form) => {
          const hash = sha256(query);
          const params = form === "document" ? { query } : form === "hash" ? { extensions: persisted(hash) } : { query, extensions: persisted(hash) };
          const result = await send(transport, params);
          expect(result.data ?? null).toBeNull();
          expect(result.errors?.[0]?.extensions?.code).toBe(form === "hash" ? "PERSISTED_QUERY_NOT_FOUND" : "persisted_query_required");
          // Nothing was registered: the hash alone is still unknown.
          expect((await send("post", { extensions: persisted(hash) })).errors?.[0]?.message).toBe("PersistedQueryNotFound");
        },
      ),
      { numRuns: 90, seed: 2104 },
    );
  }, 120_000);

  it("refuses a document outside the manifests before it is parsed: a document that does not even parse gets persisted_query_required", async () => {
    const result = await send("post", { query: "query { this is not GraphQL" });
    expect(result.errors).toEqual([
      {
        message: "Only trusted documents are accepted: send the id of a document in the router's manifest",
        extensions: { code: "persisted_query_required", http: { status: 400 } },
      },
    ]);
  });

  it("runs a manifest document sent in full, by hash alone, and one of PERSISTED_DOCUMENTS' (Apollo's manifest format)", async () => {
    const models = manifestId("query PageModels");
    for (const transport of ["post", "get", "batch", "sse", "sse-single", "graphql-ws"] as const) {
      expect(((await send(transport, { query: manifest[models] })).data as any).models.length, transport).toBeGreaterThan(0);
      expect(((await send(transport, { extensions: persisted(models) })).data as any).models.length, transport).toBeGreaterThan(0);
    }
    expect(((await send("post", { extensions: persisted(sha256(DEPLOYMENT_DOCUMENT)) })).data as any).models[0].name).toBeTypeOf("string");
    // A manifest document with a hash that is not its own is still refused.
    const wrong = await send("post", { query: manifest[models], extensions: persisted(sha256(randomUUID())) });
    expect(wrong.errors?.[0]?.extensions?.code).toBe("persisted_query_hash_mismatch");
  });

  it("runs the pages' subscription over graphql-ws and refuses any other", async () => {
    const changes = manifest[manifestId("subscription PageTaskChanges")]!;
    const live = collect(ws, changes, {}, (_event, all) => all.length === 1 && live.stop());
    const { events, error } = await submitUntil(t, key, live.done);
    expect(error).toBeUndefined();
    expect(events[0].data.tasks.id).toBeDefined();
    const other = await send("graphql-ws", { query: "subscription { tasks { id } }" });
    expect(other.errors?.[0]?.extensions?.code).toBe("persisted_query_required");
  });

  it("serves every page and answers every REST path", async () => {
    for (const page of ["/", "/client", "/test", "/admin"]) expect((await fetch(`${t.url}${page}`)).status, page).toBe(200);
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a heron", model_id: 52, seconds: 5 } });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
    const task = await t.waitForTask(key, submitted.body.data.task_id);
    expect(task.status).toBe(1);
    const usage = await t.rest("GET", "/api/v1/usage", { key });
    expect(usage.status).toBe(200);
    expect(usage.body.data.balance).toBeLessThan(20);
    expect((await t.rest("GET", "/health")).status).toBe(200);
    const vendors = await t.rest("GET", "/openapi/v1/vendors", { key });
    expect(vendors.status, JSON.stringify(vendors.body)).toBe(200);
    const products = await t.rest("GET", "/openapi/v1/products", { key });
    expect(products.status).toBe(200);
    const product = products.body.data.items[0];
    expect((await t.rest("GET", `/openapi/v1/products/${product.product_id}`, { key })).status).toBe(200);
    for (const list of ["/openapi/v1/orders", "/openapi/v1/resources", "/openapi/v1/billing/transactions?customer_id=c1"]) {
      expect((await t.rest("GET", list, { key })).status, list).toBe(200);
    }
    expect((await t.rest("GET", "/openapi/v1/orders/ord_missing", { key })).status).toBe(404);
    expect((await t.rest("GET", "/api/v1/tasks/task_missing", { key })).status).toBe(404);
    // The admin console's operations are trusted documents too.
    const admin = await t.graphql(manifest[manifestId("adminCustomerWallets")]!, {}, "persisted-only-admin");
    expect(admin.body.errors).toBeUndefined();
  });
});
