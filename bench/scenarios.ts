/**
 * The read and join scenarios (bench/README.md): what each variant sends, how each answer is
 * checked, and a preflight that validates one full answer before load is put on it.
 */
import { createHash, randomUUID } from "node:crypto";
import { signSubgraphRequest } from "../subgraphs/shared/internal-context.ts";
import type { LoadSpec } from "./load.ts";
import { BENCH_CUSTOMER, PER_ACCOUNT } from "./seed.ts";

/** `task(id)`: one row by primary key, sent to the subgraph directly and through the router. */
export const TASK_QUERY = "query Task($id: ID!) { task(id: $id) { id status statusCode statusName result price { amount currency } createdAt } }";

/** The dashboard of README "GraphQL": both subgraphs joined on `Account`. */
export const DASHBOARD_QUERY = `query Dashboard {
  viewer {
    id
    balance { amount } spent { amount }
    tasks(first: ${PER_ACCOUNT}) { totalCount nodes { id status result price { amount } model { name } } }
    orders(first: ${PER_ACCOUNT}) { totalCount nodes { id status amount { amount } product { name vendor { name } } resource { expiresAt } } }
    customerBalance(customerId: "${BENCH_CUSTOMER}") { available { amount } creditLine { amount } }
  }
}`;

/** An endpoint under load: the request and its checks. */
export interface Endpoint {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  /** The request body, or a function making a fresh one for every request. */
  body?: string | (() => string);
  /** Headers of each next request on top of `headers`: the load goes round several keys. */
  nextHeaders?: () => Record<string, string>;
  /** Every key's headers, each checked in full by the preflight (`headers` alone when absent). */
  everyKeyHeaders?: Record<string, string>[];
  /** Run once before the preflight (registering a persisted document); null when it went well, else what went wrong. */
  setup?: () => Promise<string | null>;
  /** Cheap check run on every answer during load. */
  verify: (body: string) => boolean;
  /** Full check of one answer: null when right, else what is wrong. */
  preflight: (json: Answer) => string | null;
}

/** An answer as the preflights read it: any part may be missing, which is what they check. */
interface Answer {
  errors?: unknown;
  code?: number;
  data?: {
    task_id?: string;
    task?: { id?: string } | null;
    viewer?: {
      tasks?: { nodes?: { model?: { name?: string }; price?: { amount?: string } }[] };
      orders?: { nodes?: { product?: { vendor?: { name?: string } }; resource?: { expiresAt?: string } | null }[] };
      balance?: { amount?: string };
      customerBalance?: { available?: unknown } | null;
    } | null;
  } | null;
}

const graphqlHeaders = (key: string) => ({ authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json" });

/** `task(id)` over GraphQL at `url` (the router's or the subgraph's `/graphql`). */
export function readGraphql(url: string, key: string, taskId: string): Endpoint {
  return {
    url,
    method: "POST",
    headers: graphqlHeaders(key),
    body: JSON.stringify({ query: TASK_QUERY, variables: { id: taskId } }),
    verify: (body) => body.includes(taskId) && !body.includes('"errors"'),
    preflight: (json) =>
      json?.errors
        ? JSON.stringify(json.errors).slice(0, 300)
        : json?.data?.task?.id === taskId
          ? null
          : `unexpected answer ${JSON.stringify(json).slice(0, 300)}`,
  };
}

/**
 * `task(id)` straight at the generation subgraph's `/graphql`, signed as the router signs (the
 * subgraph serves nothing else); a subgraph serves each signed request once, so every request
 * is signed as it is sent.
 */
export function readSubgraph(url: string, key: string, taskId: string, secret: string): Endpoint {
  const body = () =>
    JSON.stringify(
      signSubgraphRequest(secret, {
        query: TASK_QUERY,
        variables: { id: taskId },
        audience: "generation",
        headers: { authorization: `Bearer ${key}`, "x-switchyard-client-ip": "127.0.0.1", "x-switchyard-count-id": randomUUID() },
      }),
    );
  return { ...readGraphql(url, key, taskId), body };
}

/** `GET /api/v1/tasks/{id}` through the REST shim. */
export function readRest(routerUrl: string, key: string, taskId: string): Endpoint {
  return {
    url: `${routerUrl}/api/v1/tasks/${taskId}`,
    method: "GET",
    headers: { authorization: `Bearer ${key}` },
    verify: (body) => body.startsWith('{"code":200') && body.includes(taskId),
    preflight: (json) => (json?.code === 200 && json?.data?.task_id === taskId ? null : `unexpected answer ${JSON.stringify(json).slice(0, 300)}`),
  };
}

/**
 * Headers that go round the keys, one key per request, so no stack answers one key from a warm
 * cache (issue 25: load spread over several keys).
 */
function roundRobin(keys: string[]): { headers: Record<string, string>; next: () => Record<string, string>; every: Record<string, string>[] } {
  if (keys.length === 0) throw new Error("at least one key is needed");
  const auth = keys.map((key) => ({ authorization: `Bearer ${key}` }));
  let n = 0;
  return { headers: graphqlHeaders(keys[0]!), next: () => auth[n++ % auth.length]!, every: keys.map(graphqlHeaders) };
}

/** The dashboard over GraphQL at `url` (our router, or a peer gateway), each request for the next of `keys`. */
export function dashboard(url: string, keys: string[]): Endpoint {
  const spread = roundRobin(keys);
  return {
    url,
    method: "POST",
    headers: spread.headers,
    nextHeaders: spread.next,
    everyKeyHeaders: spread.every,
    body: JSON.stringify({ query: DASHBOARD_QUERY }),
    verify: (body) => !body.includes('"errors"') && body.includes('"creditLine"'),
    preflight: (json) => {
      if (json?.errors) return JSON.stringify(json.errors).slice(0, 300);
      const viewer = json?.data?.viewer;
      const tasks = viewer?.tasks?.nodes ?? [];
      const orders = viewer?.orders?.nodes ?? [];
      if (tasks.length !== PER_ACCOUNT || orders.length !== PER_ACCOUNT)
        return `expected ${PER_ACCOUNT} tasks and orders, got ${tasks.length} and ${orders.length}`;
      if (!orders.every((o) => o.product?.vendor?.name && o.resource?.expiresAt)) return "an order lacks its product's vendor or its resource";
      if (!tasks.every((t) => t.model?.name && t.price?.amount)) return "a task lacks its model or price";
      if (!viewer?.balance?.amount || !viewer.customerBalance?.available) return "balance or customer balance missing";
      return null;
    },
  };
}

/** SHA-256 (hex) of the dashboard document: its persisted-document id (APQ). */
export const DASHBOARD_HASH = createHash("sha256").update(DASHBOARD_QUERY).digest("hex");

/**
 * The dashboard sent to our router as a persisted document id alone (APQ's
 * `extensions.persistedQuery`; router/plugins/usePersistedQueries.ts): the setup registers the
 * document once, as a client's first request does; then every request carries the 64-character
 * hash instead of the text, and the router skips parsing and validating it.
 */
export function dashboardPersisted(url: string, keys: string[]): Endpoint {
  const extensions = { persistedQuery: { version: 1, sha256Hash: DASHBOARD_HASH } };
  const plain = dashboard(url, keys);
  return {
    ...plain,
    body: JSON.stringify({ extensions }),
    setup: async () => {
      const response = await fetch(url, { method: "POST", headers: plain.headers, body: JSON.stringify({ query: DASHBOARD_QUERY, extensions }) });
      return response.ok ? null : `registering the document: HTTP ${response.status} ${(await response.text()).slice(0, 300)}`;
    },
  };
}

/**
 * Runs the endpoint's setup, then sends one request per key (or one) and runs the full check on each answer.
 * @returns null when the answer is right, else a description of what came back
 */
export async function preflight(endpoint: Endpoint): Promise<string | null> {
  try {
    const failedSetup = await endpoint.setup?.();
    if (failedSetup) return failedSetup;
    for (const headers of endpoint.everyKeyHeaders ?? [endpoint.headers]) {
      const body = typeof endpoint.body === "function" ? endpoint.body() : endpoint.body;
      const response = await fetch(endpoint.url, { method: endpoint.method, headers, body });
      const text = await response.text();
      if (!response.ok) return `HTTP ${response.status}: ${text.slice(0, 300)}`;
      const problem = endpoint.preflight(JSON.parse(text));
      if (problem) return problem;
      if (!endpoint.verify(text)) return `answer fails the load check: ${text.slice(0, 300)}`;
    }
    return null;
  } catch (error) {
    return String(error);
  }
}

/** The load spec of an endpoint with the run's settings. */
export function loadSpec(endpoint: Endpoint, settings: { connections: number; durationSeconds: number; warmupSeconds: number }): LoadSpec {
  const { url, method, headers, body, nextHeaders, verify } = endpoint;
  return { url, method, headers, body, nextHeaders, verify, ...settings };
}
