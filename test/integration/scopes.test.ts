/**
 * Scopes follow the data (README "Scopes", docs/adr/0007-scopes.md). The README's table is the
 * contract: this file reads it and walks every row through the real router (GraphQL over HTTP,
 * graphql-ws subscriptions, both REST shims) or a subgraph's own port (`_entities`):
 *
 * - a key holding every scope but the row's is refused with 403 `forbidden` naming that scope, on
 *   that field (a link field's siblings survive);
 * - a key holding only the row's scope, plus what the entry point needs (the table's third
 *   column), is answered.
 *
 * It also checks that every root field of the supergraph and every REST path of the OpenAPI
 * documents has a row, and that migration 007 gives `resources:write` to the keys that held
 * `resources:read`.
 */
import { signSubgraphRequest } from "../../subgraphs/shared/internal-context.ts";
import fs from "node:fs";
import { Kind, parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { startCallbackReceiver, type CallbackReceiver } from "../support/callback-receiver.ts";
import { createTestDatabase } from "../support/db.ts";
import { wsClient } from "../support/graphql-ws.ts";
import { createKey } from "../../src/auth/keys.ts";
import { ALL_SCOPES } from "../../src/auth/scopes.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { parseYuan } from "../../src/money.ts";
import { migrate, openDb } from "../../src/db/index.ts";
import { migrationSource } from "../../src/db/migrations/index.ts";
import { cloudOpenApi, generationOpenApi } from "../../router/openapi/index.ts";
import { cloudTypeDefs } from "../../subgraphs/cloud/server.ts";
import { generationTypeDefs } from "../../subgraphs/generation/server.ts";
import { TYPE_SCOPES as CLOUD_TYPE_SCOPES } from "../../subgraphs/cloud/resolvers.ts";
import { TYPE_SCOPES as GENERATION_TYPE_SCOPES } from "../../subgraphs/generation/resolvers.ts";

// ---------------------------------------------------------------------------------------------
// The README table
// ---------------------------------------------------------------------------------------------

/** One row of the README's scope table. */
interface Row {
  /** `Query.order`, `Transaction.order`, `_entities: Order`, `GET /openapi/v1/orders`... */
  name: string;
  /** A key scope, or `none` (no key), `any key` (any valid key), `operator` (an operator whose role allows it: README roles table), `POST /admin/session`. */
  scope: string;
  /** Scopes the entry point needs besides the row's own (backticked scopes of the third column). */
  needs: string[];
}

/** Parses the table of the README's "Scopes" section. */
function readScopeTable(): Row[] {
  const readme = fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const start = readme.indexOf("\n## Scopes\n");
  expect(start, "README has a ## Scopes section").toBeGreaterThan(0);
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const rows: Row[] = [];
  for (const line of section.split("\n")) {
    const cells = line
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.length !== 3 || !cells[0]!.startsWith("`")) continue;
    const name = cells[0]!.replace(/^`|`$/g, "");
    const scope = cells[1]!.replace(/^`|`$/g, "");
    const needs = [...cells[2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((s) => (ALL_SCOPES as readonly string[]).includes(s));
    rows.push({ name, scope, needs });
  }
  return rows;
}

const ROWS = readScopeTable();
const isKeyScope = (scope: string) => (ALL_SCOPES as readonly string[]).includes(scope);

// ---------------------------------------------------------------------------------------------
// The stack and what the rows act on
// ---------------------------------------------------------------------------------------------

const ADMIN_TOKEN = "admin-token-for-the-scope-tests";
let t: TestStack;
let receiver: CallbackReceiver;
/** Ids of the things the rows read and change, all in one account. */
const fx = {
  accountId: "",
  setupKey: "",
  setupKeyId: "",
  orderId: "",
  unpaidOrderId: "",
  resourceId: "",
  domain: "",
  purgeTaskId: "",
  taskId: "",
  statementId: "",
  deliveryId: "",
};
let seq = 0;
const unique = () => `${++seq}-${Date.now().toString(36)}`;

const cloudApi = (method: string, path: string, body?: unknown, key = fx.setupKey) => t.rest(method, `/openapi/v1${path}`, { key, body });
const orderBody = (customerId = "c1") => {
  const n = unique();
  return {
    client_order_no: `scopes-${n}`,
    product_id: "prd_cdn_standard",
    quantity: 1,
    billing_cycle: "monthly",
    customer: { customer_id: customerId, contact: "ops@scopes.example" },
    metadata: { domain: `o${n}.scopes.example` },
  };
};

beforeAll(async () => {
  // Every admin field is probed with an API key, a wrong admin token to the throttle (admin-throttle.test.ts):
  // far more than 10 a minute from one address.
  t = await startTestStack({ ADMIN_TOKEN, ADMIN_FAILURES_PER_MINUTE: "1000", CHANNEL_KEY_SECRET: "scopes-channel-secret-0123456789abcdef" });
  receiver = await startCallbackReceiver();
  const setup = await t.createKey("1000", { callbackUrl: receiver.url });
  Object.assign(fx, { accountId: setup.account_id, setupKey: setup.key, setupKeyId: setup.id });
  await topUpCustomer(t.stack.db!, { accountId: fx.accountId, customerId: "c1", amount: parseYuan("100000") });

  const created = await cloudApi("POST", "/orders", orderBody());
  expect(created.status).toBe(201);
  fx.orderId = created.body.data.order_id;
  const active = await t.waitForAccount(
    fx.setupKey,
    () => cloudApi("GET", `/orders/${fx.orderId}`),
    (r) => r.body.data?.status === "active",
  );
  fx.resourceId = active.body.data.resource_id;

  fx.domain = `www.${unique()}.scopes.example`;
  const domain = await cloudApi("POST", "/domains", domainBody(fx.domain));
  expect(domain.status).toBe(201);
  const purge = await cloudApi("POST", `/domains/${fx.domain}/purge`, { type: "url", targets: [`https://${fx.domain}/index.html`] });
  expect(purge.status).toBe(201);
  fx.purgeTaskId = purge.body.data.task_id;

  // Created unpaid (the customer has nothing), then funded: payOrder can pay it.
  const unpaid = await cloudApi("POST", "/orders", orderBody("poor"));
  expect(unpaid.body.data.status).toBe("unpaid");
  fx.unpaidOrderId = unpaid.body.data.order_id;
  await topUpCustomer(t.stack.db!, { accountId: fx.accountId, customerId: "poor", amount: parseYuan("1000") });

  const task = await t.rest("POST", "/api/v1/video/generations", { key: fx.setupKey, body: { prompt: "a heron", model_id: 52 } });
  expect(task.status).toBe(200);
  fx.taskId = task.body.data.task_id;

  fx.statementId = `stm_${new Date().toISOString().slice(0, 7)}`;
  await waitUntil(
    () => cloudApi("GET", `/billing/statements/${fx.statementId}`),
    (r) => r.body.data?.export_status === "ready",
  );
  const deliveries = await waitUntil(
    () => t.graphql(`query($id: ID!) { order(id: $id) { deliveries { id } } }`, { id: fx.orderId }, fx.setupKey),
    (r) => r.body.data?.order?.deliveries?.length > 0,
  );
  fx.deliveryId = deliveries.body.data.order.deliveries[0].id;
});

afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

function domainBody(domain: string) {
  return { domain, origin: { type: "ip", address: "93.184.216.34", port: 443 }, protocol: "https", order_id: fx.orderId, customer_id: "c1" };
}

/** Keys of the test account by scope list (created once each). */
const keys = new Map<string, Promise<string>>();
function keyWith(scopes: readonly string[]): Promise<string> {
  const id = [...scopes].sort().join(",");
  let key = keys.get(id);
  if (!key) {
    key = createKey(t.stack.db!, { name: `scopes ${id}`, accountId: fx.accountId, scopes: [...scopes] }).then((k) => k.key);
    keys.set(id, key);
  }
  return key;
}

/** A task of the calling key (tasks are visible to their key only); the setup key's when it may not submit. */
const ownTasks = new Map<string, Promise<string>>();
function ownTask(key: string | undefined): Promise<string> {
  if (!key) return Promise.resolve(fx.taskId);
  let task = ownTasks.get(key);
  if (!task) {
    task = t
      .rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a crane", model_id: 52 } })
      .then((r) => (r.status === 200 ? r.body.data.task_id : fx.taskId));
    ownTasks.set(key, task);
  }
  return task;
}

// ---------------------------------------------------------------------------------------------
// Probes: how each row is exercised
// ---------------------------------------------------------------------------------------------

/** What one call of a row answered. */
interface Outcome {
  ok: boolean;
  status?: number;
  code?: string;
  /** The scope the refusal names (`details.scope`, or the generation message). */
  scope?: string;
  path?: readonly (string | number)[];
  data?: any;
}

/** How the caller authenticates: an API key, the admin token, or nothing. */
type Auth = { key?: string; admin?: boolean };

interface Probe {
  run(auth: Auth): Promise<Outcome>;
  /** For link and `Account` fields: where the refusal must be, and a sibling that must survive. */
  field?: readonly (string | number)[];
  survives?: readonly (string | number)[];
}

const authHeaders = (auth: Auth): Record<string, string> =>
  auth.admin ? { authorization: `Bearer ${ADMIN_TOKEN}` } : auth.key ? { authorization: `Bearer ${auth.key}` } : {};

function graphqlOutcome(body: any, root?: string): Outcome {
  const errors: any[] = body?.errors ?? [];
  if (errors.length === 0) return { ok: root ? body?.data?.[root] != null : true, data: body?.data };
  const error = errors.find((e) => e.extensions?.code === "forbidden") ?? errors[0];
  return {
    ok: false,
    status: error.extensions?.http?.status,
    code: error.extensions?.code,
    scope: error.extensions?.scope,
    path: error.path,
    data: body?.data,
  };
}

/** A query or mutation through the router. */
/** A stored channel to update (added once, straight through the domain; low priority, so it takes no tasks). */
let channelFixture: Promise<{ id: string }> | undefined;
const storedChannel = () =>
  (channelFixture ??= t.stack.channels!.add({ name: "scopes-fixture", baseUrl: "https://93.184.216.34", apiKey: "k", models: [52], priority: -100 }));

function gql(
  query: string,
  variables: (auth: Auth) => Promise<Record<string, unknown>> | Record<string, unknown> = () => ({}),
  extra: Pick<Probe, "field" | "survives"> = {},
): Probe {
  const root = /\{\s*(\w+)/.exec(query.slice(query.indexOf("{")))?.[1];
  return {
    ...extra,
    async run(auth) {
      const response = await fetch(`${t.url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json", ...authHeaders(auth) },
        body: JSON.stringify({ query, variables: await variables(auth) }),
      });
      const body = await response.json();
      const outcome = graphqlOutcome(body, root);
      return outcome.ok || outcome.status ? outcome : { ...outcome, status: response.status };
    },
  };
}

/** `_entities` on a subgraph's own port, signed as the router signs (the subgraph serves nothing else). */
function entities(
  subgraph: "cloud" | "generation",
  representation: (auth: Auth) => Promise<Record<string, unknown>> | Record<string, unknown>,
  selection: string,
): Probe {
  return {
    async run(auth) {
      const url = subgraph === "cloud" ? t.stack.cloudUrl! : t.stack.generationUrl!;
      const params = signSubgraphRequest(t.stack.subgraphSecret!, {
        audience: subgraph,
        query: `query($r: [_Any!]!) { _entities(representations: $r) { ${selection} } }`,
        variables: { r: [await representation(auth)] },
        headers: { ...authHeaders(auth), "x-switchyard-client-ip": "127.0.0.1" },
      });
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params) });
      const body = await response.json();
      const outcome = graphqlOutcome(body);
      return outcome.ok ? { ...outcome, ok: body.data?._entities?.[0] != null } : outcome;
    },
  };
}

/** A subscription over graphql-ws through the router: its first event (or refusal). `cause` makes events happen. */
function subscription(
  query: string,
  variables: (auth: Auth) => Promise<Record<string, unknown>> | Record<string, unknown> = () => ({}),
  cause?: (auth: Auth) => Promise<unknown>,
): Probe {
  return {
    async run(auth) {
      const client = wsClient(t.url, auth.key ? { Authorization: `Bearer ${auth.key}` } : {});
      try {
        const vars = await variables(auth);
        const first = new Promise<{ value?: any; error?: any }>((resolve) => {
          client.subscribe(
            { query, variables: vars },
            { next: (value) => resolve({ value }), error: (error) => resolve({ error }), complete: () => resolve({}) },
          );
        });
        let settled = false;
        void first.then(() => (settled = true));
        // A subscription goes live a moment after it is sent: cause events until one arrives.
        for (let round = 0; cause && !settled && round < 100; round++) {
          await cause(auth);
          await Promise.race([first, new Promise((resolve) => setTimeout(resolve, 100))]);
        }
        const { value, error } = await first;
        if (value) return graphqlOutcome(value, Object.keys(value.data ?? {})[0]);
        const errors = Array.isArray(error) ? error : [];
        return errors.length ? graphqlOutcome({ errors }) : { ok: false, code: `closed ${error?.code ?? ""}` };
      } finally {
        await client.dispose();
      }
    },
  };
}

/** A REST call through the router (either shim). */
function rest(method: string, path: (auth: Auth) => Promise<string> | string, body?: (auth: Auth) => unknown): Probe {
  return {
    async run(auth) {
      const target = await path(auth);
      const response = await fetch(`${t.url}${target}`, {
        method,
        headers: { ...authHeaders(auth), ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body(auth)) : undefined,
      });
      const text = await response.text();
      let parsed: any = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* the CSV export */
      }
      if (response.ok) return { ok: true, status: response.status, data: parsed ?? text };
      if (parsed?.error) return { ok: false, status: response.status, code: parsed.error.code, scope: parsed.error.details?.scope };
      // Generation shim: {"code": status, "message"}.
      const code = { 401: "unauthorized", 403: "forbidden" }[response.status as 401 | 403] ?? String(response.status);
      return { ok: false, status: response.status, code, scope: /lacks the (\S+) scope/.exec(parsed?.message ?? "")?.[1] };
    },
  };
}

const orderInput = () => {
  const body = orderBody();
  return {
    clientOrderNo: body.client_order_no,
    productId: body.product_id,
    quantity: 1,
    billingCycle: "monthly",
    customer: { customerId: "c1" },
    metadata: body.metadata,
  };
};
const today = () => new Date().toISOString().slice(0, 10);
const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString();
const orderOnce = () => cloudApi("POST", "/orders", orderBody());

/** One probe per README row. */
const PROBES: Record<string, Probe> = {
  "Query.models": gql(`{ models { id } }`),
  "Query.model": gql(`{ model(id: 52) { name } }`),
  "Query.task": gql(`query($id: ID!) { task(id: $id) { id status } }`, async (a) => ({ id: await ownTask(a.key) })),
  "Query.tasks": gql(`{ tasks(first: 1) { totalCount } }`),
  "Query.viewer": gql(`{ viewer { id } }`),
  "Query.apiKey": gql(`{ apiKey { id scopes } }`),
  "Query.vendors": gql(`{ vendors(first: 1) { nodes { id name } } }`),
  "Query.products": gql(`{ products(first: 1) { nodes { id name } } }`),
  "Query.product": gql(`{ product(id: "prd_cdn_standard") { id name } }`),
  "Query.order": gql(`query($id: ID!) { order(id: $id) { id status metadata } }`, () => ({ id: fx.orderId })),
  "Query.orders": gql(`{ orders(first: 1) { nodes { id status } } }`),
  "Query.domain": gql(`query($d: String!) { domain(domain: $d) { domain cname } }`, () => ({ d: fx.domain })),
  "Query.purgeTask": gql(`query($id: ID!) { purgeTask(id: $id) { id status } }`, () => ({ id: fx.purgeTaskId })),
  "Query.resources": gql(`{ resources(first: 1) { nodes { id status } } }`),
  "Query.bandwidthUsage": gql(`query($r: ID!, $s: String!, $e: String!) { bandwidthUsage(resourceId: $r, start: $s, end: $e) { peakBps } }`, () => ({
    r: fx.resourceId,
    s: hourAgo(),
    e: new Date().toISOString(),
  })),
  "Query.trafficUsage": gql(`query($r: ID!, $s: String!, $e: String!) { trafficUsage(resourceId: $r, start: $s, end: $e) { totalBytes } }`, () => ({
    r: fx.resourceId,
    s: today(),
    e: today(),
  })),
  "Query.customerBalance": gql(`{ customerBalance(customerId: "c1") { available { amount } } }`),
  "Query.transactions": gql(`{ transactions(first: 1) { nodes { id amount { amount } } } }`),
  "Query.statement": gql(`query($id: ID!) { statement(id: $id) { id totalAmount { amount } } }`, () => ({ id: fx.statementId })),
  "Query.node": gql(`query($id: ID!) { node(id: $id) { id } }`, () => ({ id: fx.accountId })),
  "Query.nodes": gql(`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, () => ({ ids: [fx.accountId] })),

  "Mutation.submitVideoGeneration": gql(`mutation { submitVideoGeneration(input: { prompt: "a fox", modelId: 52 }) { task { id status } } }`),
  "Mutation.submitImageGeneration": gql(`mutation { submitImageGeneration(input: { prompt: "a lighthouse", modelId: 45 }) { task { id status } } }`),
  "Mutation.createOrder": gql(
    `mutation($input: CreateOrderInput!) { createOrder(input: $input) { order { id status metadata customer { customerId } product { id } resource { id } } } }`,
    () => ({
      input: orderInput(),
    }),
  ),
  "Mutation.renewOrder": gql(`mutation($id: ID!) { renewOrder(input: { orderId: $id, periods: 1 }) { order { id status } } }`, () => ({ id: fx.orderId })),
  "Mutation.payOrder": gql(`mutation($id: ID!) { payOrder(input: { orderId: $id }) { order { id status } } }`, () => ({ id: fx.unpaidOrderId })),
  "Mutation.resendDelivery": gql(`mutation($id: ID!) { resendDelivery(input: { deliveryId: $id }) { delivery { id status } } }`, () => ({ id: fx.deliveryId })),
  "Mutation.createDomain": gql(`mutation($input: CreateDomainInput!) { createDomain(input: $input) { domain { domain cname order { id } } } }`, () => ({
    input: {
      domain: `g${unique()}.scopes.example`,
      origin: { type: "ip", address: "93.184.216.34", port: 443 },
      protocol: "https",
      orderId: fx.orderId,
      customerId: "c1",
    },
  })),
  "Mutation.purgeDomain": gql(
    `mutation($d: String!, $url: String!) { purgeDomain(input: { domain: $d, type: "url", targets: [$url] }) { purgeTask { id status } } }`,
    () => ({
      d: fx.domain,
      url: `https://${fx.domain}/${unique()}.html`,
    }),
  ),
  "Mutation.setUsageThreshold": gql(
    `mutation($id: ID!) { setUsageThreshold(input: { resourceId: $id, thresholdBytes: 1000000000 }) { resource { id status order { id } } } }`,
    () => ({
      id: fx.resourceId,
    }),
  ),
  "Mutation.adminUpsertVendor": gql(`mutation { adminUpsertVendor(input: { name: "Scopes Vendor" }) { vendor { id name } } }`),
  "Mutation.adminUpsertProduct": gql(
    `mutation { adminUpsertProduct(input: { vendorId: "vnd_nimbus", category: "cdn", name: "Scopes CDN", billingCycles: [{ cycle: "monthly", price: "10.00" }] }) { product { id name vendor { name } } } }`,
  ),
  "Mutation.adminCreateApiKey": gql(`mutation { adminCreateApiKey(input: { name: "scopes-admin" }) { id } }`),
  "Mutation.adminSetApiKeyStatus": gql(`mutation($id: ID!) { adminSetApiKeyStatus(input: { keyId: $id, status: ACTIVE }) { apiKey { id status } } }`, () => ({
    id: fx.setupKeyId,
  })),
  "Mutation.adminTopUpAccount": gql(`mutation($id: ID!) { adminTopUpAccount(input: { keyId: $id, amount: "1" }) { balance { amount } } }`, () => ({
    id: fx.setupKeyId,
  })),
  "Mutation.adminTopUpCustomer": gql(
    `mutation($a: ID!) { adminTopUpCustomer(input: { accountId: $a, customerId: "c1", amount: "1" }) { customerBalance { available { amount } } } }`,
    () => ({
      a: fx.accountId,
    }),
  ),
  "Mutation.adminSetCustomerCreditLine": gql(
    `mutation($a: ID!) { adminSetCustomerCreditLine(input: { accountId: $a, customerId: "c2", limit: "0" }) { customerBalance { creditLine { amount } } } }`,
    () => ({
      a: fx.accountId,
    }),
  ),
  "Query.adminChannels": gql(`query { adminChannels { id status implicit stats { submissions openTasks } } }`),
  "Mutation.adminAddChannel": gql(
    `mutation { adminAddChannel(input: { name: "scopes", baseUrl: "https://93.184.216.34", apiKey: "k", models: [52], priority: -100 }) { channel { id } } }`,
  ),
  "Mutation.adminUpdateChannel": gql(`mutation($id: ID!) { adminUpdateChannel(input: { id: $id, weight: 2 }) { channel { id weight } } }`, async () => ({
    id: (await storedChannel()).id,
  })),
  "Mutation.adminSetChannelStatus": gql(`mutation { adminSetChannelStatus(input: { id: "chn_default", enabled: true }) { channel { id status } } }`),
  "Mutation.adminTestChannel": gql(`mutation { adminTestChannel(input: { id: "chn_default" }) { ok channel { id } } }`),
  "Query.adminApiKeys": gql(`{ adminApiKeys(first: 1) { totalCount } }`),
  "Query.adminApiKey": gql(`query($id: ID!) { adminApiKey(id: $id) { id } }`, () => ({ id: fx.setupKeyId })),
  "Query.adminCustomerWallets": gql(`{ adminCustomerWallets(first: 1) { totalCount } }`),
  "Query.adminOrders": gql(`{ adminOrders(first: 1) { totalCount } }`),
  "Query.adminWebhookDeliveries": gql(`{ adminWebhookDeliveries(first: 1) { totalCount } }`),
  "Query.adminOverview": gql(`{ adminOverview(minutes: 1) { at } }`),
  "Mutation.adminUpdateApiKey": gql(`mutation($id: ID!) { adminUpdateApiKey(input: { keyId: $id, rateLimit: 1000 }) { apiKey { id } } }`, () => ({
    id: fx.setupKeyId,
  })),
  "Mutation.adminResendDelivery": gql(`mutation($id: ID!) { adminResendDelivery(input: { deliveryId: $id }) { delivery { id } } }`, () => ({
    id: fx.deliveryId,
  })),
  "Query.adminMe": gql(`{ adminMe { role via allowedFields } }`),
  "Query.adminOperators": gql(`{ adminOperators { id email role } }`),
  "Query.adminAuditLog": gql(`{ adminAuditLog(first: 1) { totalCount } }`),
  "Mutation.adminCreateOperator": gql(`mutation($email: String!) { adminCreateOperator(input: { email: $email, role: VIEWER }) { operator { id } } }`, () => ({
    email: `scopes-${Math.random().toString(36).slice(2)}@example.com`,
  })),
  "Mutation.adminSetOperatorStatus": gql(
    `mutation($email: String!, $id: ID!) { adminCreateOperator(input: { email: $email, role: VIEWER }) { operator { id } } adminSetOperatorStatus(input: { id: $id, status: "DISABLED" }) { operator { id status } } }`,
    () => {
      const email = `scopes-${Math.random().toString(36).slice(2)}@example.com`;
      return { email, id: email };
    },
  ),
  "Mutation.adminSignOut": gql(`mutation { adminSignOut { ended } }`),
  // Only the router's sign-in route runs it: a GraphQL client is refused whatever it presents.
  "Mutation.adminSignIn": gql(`mutation { adminSignIn(input: { email: "nobody@example.com", password: "wrong password" }) { expiresAt } }`),

  "Subscription.taskStatusChanged": subscription(`subscription($id: ID!) { taskStatusChanged(taskId: $id) { id status } }`, async (a) => ({
    id: await ownTask(a.key),
  })),
  "Subscription.tasks": subscription(`subscription { tasks { id status } }`, undefined, (a) =>
    t.rest("POST", "/api/v1/video/generations", { key: a.key, body: { prompt: "a wren", model_id: 52 } }),
  ),
  "Subscription.orderEvents": subscription(`subscription { orderEvents { event order { id status } } }`, undefined, orderOnce),

  "Account.balance": gql(`{ viewer { id balance { amount } } }`, undefined, { field: ["viewer", "balance"], survives: ["viewer", "id"] }),
  "Account.spent": gql(`{ viewer { id spent { amount } } }`, undefined, { field: ["viewer", "spent"], survives: ["viewer", "id"] }),
  "Account.billedSeconds": gql(`{ viewer { id billedSeconds } }`, undefined, { field: ["viewer", "billedSeconds"], survives: ["viewer", "id"] }),
  "Account.billedImages": gql(`{ viewer { id billedImages } }`, undefined, { field: ["viewer", "billedImages"], survives: ["viewer", "id"] }),
  "Account.tasks": gql(`{ viewer { id tasks(first: 1) { totalCount } } }`, undefined, { field: ["viewer", "tasks"], survives: ["viewer", "id"] }),
  "Account.recentRequests": gql(`{ viewer { id recentRequests(first: 1) { path } } }`, undefined, {
    field: ["viewer", "recentRequests"],
    survives: ["viewer", "id"],
  }),
  "Account.orders": gql(`{ viewer { id orders(first: 1) { nodes { id status metadata } } } }`, undefined, {
    field: ["viewer", "orders"],
    survives: ["viewer", "id"],
  }),
  "Account.resources": gql(`{ viewer { id resources(first: 1) { nodes { id status } } } }`, undefined, {
    field: ["viewer", "resources"],
    survives: ["viewer", "id"],
  }),
  "Account.customerBalance": gql(`{ viewer { id customerBalance(customerId: "c1") { available { amount } } } }`, undefined, {
    field: ["viewer", "customerBalance"],
    survives: ["viewer", "id"],
  }),

  "Order.product": gql(`query($id: ID!) { order(id: $id) { id status product { id name } } }`, () => ({ id: fx.orderId }), {
    field: ["order", "product"],
    survives: ["order", "status"],
  }),
  "Order.resource": gql(`query($id: ID!) { order(id: $id) { id status resource { id expiresAt } } }`, () => ({ id: fx.orderId }), {
    field: ["order", "resource"],
    survives: ["order", "status"],
  }),
  "Resource.order": gql(`{ resources(first: 1) { nodes { id status order { id metadata customer { contact } } } } }`, undefined, {
    field: ["resources", "nodes", 0, "order"],
    survives: ["resources", "nodes", 0, "status"],
  }),
  "Resource.product": gql(`{ resources(first: 1) { nodes { id status product { id name } } } }`, undefined, {
    field: ["resources", "nodes", 0, "product"],
    survives: ["resources", "nodes", 0, "status"],
  }),
  "Domain.order": gql(`query($d: String!) { domain(domain: $d) { domain cname order { id metadata } } }`, () => ({ d: fx.domain }), {
    field: ["domain", "order"],
    survives: ["domain", "cname"],
  }),
  "Transaction.order": gql(
    `{ transactions(first: 1, type: DEDUCTION) { nodes { id amount { amount } order { id metadata customer { contact } } } } }`,
    undefined,
    {
      field: ["transactions", "nodes", 0, "order"],
      survives: ["transactions", "nodes", 0, "amount"],
    },
  ),

  "_entities: Order": entities("cloud", () => ({ __typename: "Order", id: fx.orderId }), `... on Order { id status metadata }`),
  "_entities: Resource": entities("cloud", () => ({ __typename: "Resource", id: fx.resourceId }), `... on Resource { id status }`),
  "_entities: Domain": entities("cloud", () => ({ __typename: "Domain", domain: fx.domain }), `... on Domain { domain cname }`),
  "_entities: PurgeTask": entities("cloud", () => ({ __typename: "PurgeTask", id: fx.purgeTaskId }), `... on PurgeTask { id status }`),
  "_entities: Product": entities("cloud", () => ({ __typename: "Product", id: "prd_cdn_standard" }), `... on Product { id name }`),
  "_entities: Vendor": entities("cloud", () => ({ __typename: "Vendor", id: "vnd_nimbus" }), `... on Vendor { id name }`),
  "_entities: Transaction": entities(
    "cloud",
    async () => {
      // One of the account's own (another account's answers null, as `transactions` never lists it).
      const listed = await t.graphql(`{ transactions(first: 1) { nodes { id } } }`, {}, fx.setupKey);
      return { __typename: "Transaction", id: listed.body.data.transactions.nodes[0].id };
    },
    `... on Transaction { id }`,
  ),
  "_entities: Statement": entities("cloud", () => ({ __typename: "Statement", id: fx.statementId }), `... on Statement { id }`),
  "_entities: Task": entities("generation", async (a) => ({ __typename: "Task", id: await ownTask(a.key) }), `... on Task { id status }`),
  "_entities: Account": entities("cloud", () => ({ __typename: "Account", id: fx.accountId }), `... on Account { id }`),

  "POST /api/v1/video/generations": rest(
    "POST",
    () => "/api/v1/video/generations",
    () => ({ prompt: "a fox", model_id: 52 }),
  ),
  "POST /api/v1/images/generations": rest(
    "POST",
    () => "/api/v1/images/generations",
    () => ({ prompt: "a lighthouse", model_id: 45 }),
  ),
  "GET /api/v1/tasks/{task_id}": rest("GET", async (a) => `/api/v1/tasks/${await ownTask(a.key)}`),
  "GET /api/v1/usage": rest("GET", () => "/api/v1/usage?limit=5"),
  "GET /openapi/v1/vendors": rest("GET", () => "/openapi/v1/vendors"),
  "GET /openapi/v1/products": rest("GET", () => "/openapi/v1/products"),
  "GET /openapi/v1/products/{product_id}": rest("GET", () => "/openapi/v1/products/prd_cdn_standard"),
  "POST /openapi/v1/orders": rest(
    "POST",
    () => "/openapi/v1/orders",
    () => orderBody(),
  ),
  "GET /openapi/v1/orders": rest("GET", () => "/openapi/v1/orders?limit=5"),
  "GET /openapi/v1/orders/{order_id}": rest("GET", () => `/openapi/v1/orders/${fx.orderId}`),
  "POST /openapi/v1/orders/{order_id}/renew": rest(
    "POST",
    () => `/openapi/v1/orders/${fx.orderId}/renew`,
    () => ({ periods: 1 }),
  ),
  "POST /openapi/v1/domains": rest(
    "POST",
    () => "/openapi/v1/domains",
    () => domainBody(`r${unique()}.scopes.example`),
  ),
  "GET /openapi/v1/domains/{domain}/status": rest("GET", () => `/openapi/v1/domains/${fx.domain}/status`),
  "POST /openapi/v1/domains/{domain}/purge": rest(
    "POST",
    () => `/openapi/v1/domains/${fx.domain}/purge`,
    () => ({ type: "url", targets: [`https://${fx.domain}/${unique()}.html`] }),
  ),
  "GET /openapi/v1/usage/bandwidth": rest(
    "GET",
    () => `/openapi/v1/usage/bandwidth?resource_id=${fx.resourceId}&start=${encodeURIComponent(hourAgo())}&end=${encodeURIComponent(new Date().toISOString())}`,
  ),
  "GET /openapi/v1/usage/traffic": rest("GET", () => `/openapi/v1/usage/traffic?resource_id=${fx.resourceId}&start=${today()}&end=${today()}`),
  "GET /openapi/v1/resources": rest("GET", () => "/openapi/v1/resources"),
  "GET /openapi/v1/billing/balance": rest("GET", () => "/openapi/v1/billing/balance?customer_id=c1"),
  "GET /openapi/v1/billing/transactions": rest("GET", () => "/openapi/v1/billing/transactions?customer_id=c1"),
  "GET /openapi/v1/billing/statements/{statement_id}": rest("GET", () => `/openapi/v1/billing/statements/${fx.statementId}`),
  "GET /openapi/v1/billing/statements/{statement_id}/export": rest("GET", async () => {
    // Every order placed by the rows above adds to this month's statement: wait for its export.
    await waitUntil(
      () => cloudApi("GET", `/billing/statements/${fx.statementId}`),
      (r) => r.body.data?.export_status === "ready",
    );
    return `/openapi/v1/billing/statements/${fx.statementId}/export`;
  }),
  "GET /health": rest("GET", () => "/health"),
  "GET /api/v1/openapi.json": rest("GET", () => "/api/v1/openapi.json"),
  "GET /openapi/v1/openapi.json": rest("GET", () => "/openapi/v1/openapi.json"),
};

const at = (data: any, path: readonly (string | number)[]) => path.reduce((value, step) => (value == null ? value : value[step]), data);

// ---------------------------------------------------------------------------------------------
// The walk
// ---------------------------------------------------------------------------------------------

describe("the README scope table", () => {
  it("has a row for every probe here and a probe for every row", () => {
    expect(ROWS.length).toBeGreaterThan(50);
    expect(ROWS.map((r) => r.name).sort()).toEqual(Object.keys(PROBES).sort());
    for (const row of ROWS)
      expect(isKeyScope(row.scope) || ["none", "any key", "operator", "POST /admin/session"].includes(row.scope), `${row.name}: ${row.scope}`).toBe(true);
  });

  it("has a row for every Query, Mutation and Subscription root field of the supergraph", () => {
    const supergraph = parse(fs.readFileSync(new URL("../../schema/supergraph.graphql", import.meta.url), "utf8"));
    const names = new Set(ROWS.map((r) => r.name));
    const roots: string[] = [];
    for (const definition of supergraph.definitions) {
      if (
        (definition.kind === Kind.OBJECT_TYPE_DEFINITION || definition.kind === Kind.OBJECT_TYPE_EXTENSION) &&
        ["Query", "Mutation", "Subscription"].includes(definition.name.value)
      ) {
        for (const field of definition.fields ?? []) roots.push(`${definition.name.value}.${field.name.value}`);
      }
    }
    expect(roots.length).toBeGreaterThan(30);
    expect(roots.filter((root) => !names.has(root))).toEqual([]);
  });

  it("names a scope for every entity type of both subgraphs (Account: each field its own)", () => {
    for (const [typeDefs, rules] of [
      [cloudTypeDefs, CLOUD_TYPE_SCOPES],
      [generationTypeDefs, GENERATION_TYPE_SCOPES],
    ] as const) {
      const entities = typeDefs.definitions.filter(
        (d: any) => (d.kind === Kind.OBJECT_TYPE_DEFINITION || d.kind === Kind.OBJECT_TYPE_EXTENSION) && d.directives?.some((x: any) => x.name.value === "key"),
      );
      expect(entities.length).toBeGreaterThan(0);
      for (const entity of entities as any[]) {
        if (entity.name.value === "Account") continue;
        expect(rules[entity.name.value]?.scope, entity.name.value).toBeDefined();
      }
    }
  });

  it("has a row for every REST path of both OpenAPI documents, with the scope the document states", () => {
    const byName = new Map(ROWS.map((r) => [r.name, r]));
    const missing: string[] = [];
    for (const document of [generationOpenApi, cloudOpenApi] as any[]) {
      for (const [path, item] of Object.entries<any>(document.paths)) {
        for (const [method, operation] of Object.entries<any>(item)) {
          const name = `${method.toUpperCase()} ${path}`;
          const row = byName.get(name);
          if (!row) {
            missing.push(name);
            continue;
          }
          const security: any[] = operation.security ?? document.security;
          const scopes = security.flatMap((s) => s.bearerAuth ?? []);
          if (security.length === 0) expect(row.scope, name).toBe("none");
          else if (scopes.length) expect(row.scope, name).toBe(scopes[0]);
          else expect(isKeyScope(row.scope), name).toBe(true);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  for (const row of ROWS) {
    if (isKeyScope(row.scope)) {
      it(`${row.name}: refused with 403 forbidden (${row.scope}) to a key with every other scope, answered with only ${[row.scope, ...row.needs].join(" + ")}`, async () => {
        const probe = PROBES[row.name];
        expect(probe, `a probe for ${row.name}`).toBeDefined();
        const refused = await probe!.run({ key: await keyWith(ALL_SCOPES.filter((s) => s !== row.scope)) });
        expect(refused, JSON.stringify(refused)).toMatchObject({ ok: false, status: 403, code: "forbidden", scope: row.scope });
        if (probe!.field) expect(refused.path?.slice(0, probe!.field.length), "the refusal is on the field").toEqual(probe!.field);
        if (probe!.survives) expect(at(refused.data, probe!.survives), "its sibling survives").not.toBeUndefined();
        if (probe!.survives) expect(at(refused.data, probe!.survives), "its sibling survives").not.toBeNull();
        if (probe!.field && refused.path?.length !== probe!.field.length) expect(at(refused.data, probe!.field), "the link is null").toBeNull();
        const answered = await probe!.run({ key: await keyWith([row.scope, ...row.needs]) });
        expect(answered, JSON.stringify(answered)).toMatchObject({ ok: true });
      });
    } else if (row.scope === "any key") {
      it(`${row.name}: refused without a key (401), answered to a key with any one scope`, async () => {
        const probe = PROBES[row.name]!;
        expect(await probe.run({})).toMatchObject({ ok: false, status: 401, code: "unauthorized" });
        const answered = await probe.run({ key: await keyWith(["usage:read"]) });
        expect(answered, JSON.stringify(answered)).toMatchObject({ ok: true });
      });
    } else if (row.scope === "POST /admin/session") {
      it(`${row.name}: refused (403) to a GraphQL client, API key or admin token alike`, async () => {
        const probe = PROBES[row.name]!;
        expect(await probe.run({ key: await keyWith(ALL_SCOPES) })).toMatchObject({ ok: false, status: 403, code: "forbidden" });
        expect(await probe.run({ admin: true })).toMatchObject({ ok: false, status: 403, code: "forbidden" });
      });
    } else if (row.scope === "operator") {
      it(`${row.name}: refused (401) to an API key with every scope, answered to the admin token (an owner)`, async () => {
        const probe = PROBES[row.name]!;
        expect(await probe.run({ key: await keyWith(ALL_SCOPES) })).toMatchObject({ ok: false, status: 401, code: "unauthorized" });
        const answered = await probe.run({ admin: true });
        expect(answered, JSON.stringify(answered)).toMatchObject({ ok: true });
      });
    } else {
      it(`${row.name}: answered without a key`, async () => {
        const answered = await PROBES[row.name]!.run({});
        expect(answered, JSON.stringify(answered)).toMatchObject({ ok: true });
      });
    }
  }
});

describe("order of checks with scopes", () => {
  // The generation shim's pre-check reads `viewer { balance }` now that `viewer` needs any key.
  it("answers 403 for the missing generation scope before a bad body's 400, on both submission paths", async () => {
    const key = await keyWith(ALL_SCOPES.filter((s) => s !== "generation"));
    for (const path of ["/api/v1/video/generations", "/api/v1/images/generations"]) {
      const answer = await t.rest("POST", path, { key, rawBody: "{not json", headers: { "content-type": "application/json" } });
      expect(answer.status, path).toBe(403);
      expect(answer.body, path).toEqual({ code: 403, message: "API key lacks the generation scope" });
    }
  });
});

describe("migration 007 (resources:write)", () => {
  it("gives resources:write to every key that held resources:read, and to no other key", async () => {
    const database = await createTestDatabase();
    const db = openDb({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
    try {
      const before = { ...migrationSource, getMigrations: async () => (await migrationSource.getMigrations([])).filter((name) => name < "007") };
      await db.migrate.latest({ migrationSource: before });
      const now = new Date().toISOString();
      await db("accounts").insert({ id: "acc_m", name: "m", balance: 0, credit_line: 0, created_at: now });
      const key = (id: string, scopes: string[]) => ({
        id,
        account_id: "acc_m",
        name: id,
        key_hash: id,
        key_prefix: id,
        status: "active",
        scopes: JSON.stringify(scopes),
        created_at: now,
      });
      await db("api_keys").insert([
        key("key_all", [
          "generation",
          "catalog:read",
          "orders:read",
          "orders:write",
          "domains:read",
          "domains:write",
          "usage:read",
          "resources:read",
          "billing:read",
        ]),
        key("key_resources", ["resources:read"]),
        key("key_other", ["usage:read", "orders:read"]),
      ]);
      await migrate(db);
      const scopes = Object.fromEntries((await db("api_keys").select("id", "scopes")).map((r: any) => [r.id, JSON.parse(r.scopes)]));
      expect(scopes.key_all).toEqual([
        "generation",
        "catalog:read",
        "orders:read",
        "orders:write",
        "domains:read",
        "domains:write",
        "usage:read",
        "resources:read",
        "resources:write",
        "billing:read",
      ]);
      expect(scopes.key_resources).toEqual(["resources:read", "resources:write"]);
      expect(scopes.key_other).toEqual(["usage:read", "orders:read"]);
      // A key with every scope today holds what a key created before held, and resources:write.
      expect([...scopes.key_all].sort()).toEqual([...ALL_SCOPES].sort());
    } finally {
      await db.destroy();
      await database.drop();
    }
  });
});
