/**
 * Global object identification (docs/adr/0019-global-object-ids.md; issue 21 §1): `Query.node`
 * and `Query.nodes` through the router over GraphQL HTTP answer every type implementing `Node`,
 * of both subgraphs, with the scope and ownership rules of each type's own root field; the
 * `_entities` of every such type on the subgraphs' ports answer only the caller's objects; the
 * router's cost counts `nodes` with N ids as a list of N.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signSubgraphRequest } from "../../subgraphs/shared/internal-context.ts";
import { createKey } from "../../src/auth/keys.ts";
import { ALL_SCOPES } from "../../src/auth/scopes.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { upsertVendor } from "../../src/cloud/catalog.ts";
import { parseYuan } from "../../src/money.ts";
import { LIMITS } from "../../router/limits.ts";
import { measureOperation } from "../../bench/measure.ts";
import { startTestStack, type GraphqlError, type TestStack } from "../support/stack.ts";
import { measureStatements } from "../support/sql-count.ts";

let t: TestStack;
/** The owner's account and two of its keys (`other` holds every scope but created nothing), and a stranger of another account. */
const keys = { owner: "", other: "", stranger: "" };
/** One object of every Node type, all of the owner's account (the task the owner key's). */
const ids = {
  task: "",
  order: "",
  resource: "",
  domain: "",
  purge: "",
  product: "prd_cdn_standard",
  vendor: "vnd_nimbus",
  transaction: "",
  statement: "",
  account: "",
};
let domainName = "";
const strangerIds = { task: "", order: "", account: "" };

const cloud = (method: string, path: string, body?: unknown, key = keys.owner) => t.rest(method, `/openapi/v1${path}`, { key, body });

/** Creates an order (funding its customer first) and waits until it is active. */
async function activeOrder(key: string, accountId: string, tag: string) {
  await topUpCustomer(t.stack.db!, { accountId, customerId: "c1", amount: parseYuan("1000") });
  const created = await cloud(
    "POST",
    "/orders",
    {
      client_order_no: `gid-${tag}-${Date.now()}`,
      product_id: "prd_cdn_standard",
      quantity: 1,
      billing_cycle: "monthly",
      customer: { customer_id: "c1" },
      metadata: { domain: `${tag}.gid.example` },
    },
    key,
  );
  expect(created.status).toBe(201);
  const active = await t.waitForAccount(
    key,
    () => cloud("GET", `/orders/${created.body.data.order_id}`, undefined, key),
    (r) => r.body.data?.status === "active",
  );
  return active.body.data as { order_id: string; resource_id: string };
}

const ADMIN_TOKEN = "admin-token-for-the-global-id-tests";

beforeAll(async () => {
  t = await startTestStack({ ADMIN_TOKEN });
  const owner = await t.createKey("100");
  keys.owner = owner.key;
  ids.account = owner.account_id;
  keys.other = (await createKey(t.stack.db!, { name: "other", accountId: owner.account_id })).key;
  const stranger = await t.createKey("100");
  keys.stranger = stranger.key;
  strangerIds.account = stranger.account_id;

  const task = await t.rest("POST", "/api/v1/video/generations", { key: keys.owner, body: { prompt: "a heron", model_id: 52 } });
  ids.task = task.body.data.task_id;
  const order = await activeOrder(keys.owner, owner.account_id, "owner");
  ids.order = order.order_id;
  ids.resource = order.resource_id;
  domainName = `www.gid${Date.now().toString(36)}.example`;
  const domain = await cloud("POST", "/domains", {
    domain: domainName,
    origin: { type: "ip", address: "93.184.216.34", port: 443 },
    protocol: "https",
    order_id: ids.order,
    customer_id: "c1",
  });
  expect(domain.status).toBe(201);
  ids.domain = `dom_${domainName}`;
  const purge = await cloud("POST", `/domains/${domainName}/purge`, { type: "url", targets: [`https://${domainName}/a.html`] });
  ids.purge = purge.body.data.task_id;
  const transactions = await t.graphql(`{ transactions(first: 1) { nodes { id } } }`, {}, keys.owner);
  ids.transaction = transactions.body.data.transactions.nodes[0].id;
  ids.statement = `stm_${new Date().toISOString().slice(0, 7)}`;

  const strangerTask = await t.rest("POST", "/api/v1/video/generations", { key: keys.stranger, body: { prompt: "a crane", model_id: 52 } });
  strangerIds.task = strangerTask.body.data.task_id;
  strangerIds.order = (await activeOrder(keys.stranger, stranger.account_id, "stranger")).order_id;
});

afterAll(() => t?.close());

/** A selection reading a few fields of every Node type (status fields aliased: their types differ). */
const EVERY_TYPE = `__typename id
  ... on Task { taskStatus: status prompt price { amount } }
  ... on Order { orderStatus: status clientOrderNo amount { amount } }
  ... on Resource { expiresAt customerId }
  ... on Domain { domain cname }
  ... on PurgeTask { domain targets }
  ... on Product { name vendor { id } }
  ... on Vendor { name }
  ... on Transaction { type amount { amount } }
  ... on Statement { period totalAmount { amount } }
  ... on Account { balance { amount } }`;

/** A node as a test selects it: its id, its type and the fields the selection adds. */
type NodeView = { id: string; __typename: string; [field: string]: unknown };

/** The data of a root read below: the object `x`, or a page of them. */
type RootRead = { x: NodeView & { nodes: NodeView[] } };

/** What each type's own root field answers for the same fields. */
const ROOT_READS: Record<
  keyof typeof ids,
  { typename: string; query: string; variables?: () => Record<string, unknown>; select: (data: RootRead) => NodeView | undefined }
> = {
  task: {
    typename: "Task",
    query: `query($id: ID!) { x: task(id: $id) { taskStatus: status prompt price { amount } } }`,
    select: (d) => d.x,
  },
  order: {
    typename: "Order",
    query: `query($id: ID!) { x: order(id: $id) { orderStatus: status clientOrderNo amount { amount } } }`,
    select: (d) => d.x,
  },
  resource: {
    typename: "Resource",
    query: `{ x: resources(first: 100) { nodes { id expiresAt customerId } } }`,
    variables: () => ({}),
    select: (d) => d.x.nodes.find((r) => r.id === ids.resource),
  },
  domain: {
    typename: "Domain",
    query: `query($d: String!) { x: domain(domain: $d) { domain cname } }`,
    variables: () => ({ d: domainName }),
    select: (d) => d.x,
  },
  purge: { typename: "PurgeTask", query: `query($id: ID!) { x: purgeTask(id: $id) { domain targets } }`, select: (d) => d.x },
  product: { typename: "Product", query: `query($id: ID!) { x: product(id: $id) { name vendor { id } } }`, select: (d) => d.x },
  vendor: {
    typename: "Vendor",
    query: `{ x: vendors(first: 100) { nodes { id name } } }`,
    variables: () => ({}),
    select: (d) => d.x.nodes.find((v) => v.id === ids.vendor),
  },
  transaction: {
    typename: "Transaction",
    query: `{ x: transactions(first: 100) { nodes { id type amount { amount } } } }`,
    variables: () => ({}),
    select: (d) => d.x.nodes.find((x) => x.id === ids.transaction),
  },
  statement: { typename: "Statement", query: `query($id: ID!) { x: statement(id: $id) { period totalAmount { amount } } }`, select: (d) => d.x },
  account: { typename: "Account", query: `{ x: viewer { balance { amount } } }`, variables: () => ({}), select: (d) => d.x },
};

const KINDS = Object.keys(ids) as (keyof typeof ids)[];

describe("node(id:) and nodes(ids:)", () => {
  it("answers node(id:) for every Node type with what the type's own root field answers", async () => {
    for (const kind of KINDS) {
      const read = ROOT_READS[kind];
      const node = await t.graphql(`query($id: ID!) { node(id: $id) { ${EVERY_TYPE} } }`, { id: ids[kind] }, keys.owner);
      expect(node.body.errors, kind).toBeUndefined();
      const own = await t.graphql(read.query, read.variables?.() ?? { id: ids[kind] }, keys.owner);
      expect(own.body.errors, kind).toBeUndefined();
      const { __typename, id, ...fields } = node.body.data.node;
      expect({ kind, __typename, id }).toEqual({ kind, __typename: read.typename, id: ids[kind] });
      const { id: _same, ...expected } = read.select(own.body.data)!;
      expect(fields, kind).toEqual(expected);
    }
  });

  it("gives a domain the id dom_<domain>, which node(id:) reads back only in that exact spelling", async () => {
    const domain = await t.graphql(`query($d: String!) { domain(domain: $d) { id domain } }`, { d: domainName.toUpperCase() }, keys.owner);
    expect(domain.body.data.domain).toEqual({ id: ids.domain, domain: domainName });
    const upper = await t.graphql(`query($id: ID!) { node(id: $id) { id } }`, { id: `dom_${domainName.toUpperCase()}` }, keys.owner);
    expect(upper.body).toEqual({ data: { node: null } });
  });

  it("answers nodes(ids:) across both subgraphs in the order asked, a repeated id at each of its places", async () => {
    const asked = [ids.task, ids.order, ids.vendor, ids.account, ids.domain, ids.transaction, ids.task, ids.statement, ids.purge, ids.product, ids.resource];
    const answer = await t.graphql(`query($ids: [ID!]!) { nodes(ids: $ids) { ${EVERY_TYPE} } }`, { ids: asked }, keys.owner);
    expect(answer.status).toBe(200);
    expect(answer.body.errors).toBeUndefined();
    const nodes: NodeView[] = answer.body.data.nodes;
    expect(nodes.map((n) => n.id)).toEqual(asked);
    expect(nodes.map((n) => n.__typename)).toEqual([
      "Task",
      "Order",
      "Vendor",
      "Account",
      "Domain",
      "Transaction",
      "Task",
      "Statement",
      "PurgeTask",
      "Product",
      "Resource",
    ]);
    // Fields of the generation subgraph (Task, Account.balance) and of the cloud subgraph in one answer.
    expect(nodes[0]).toMatchObject({ prompt: "a heron", price: { amount: expect.any(String) } });
    expect(nodes[6]).toEqual(nodes[0]);
    expect(nodes[1]).toMatchObject({ orderStatus: "ACTIVE", amount: { amount: "30.00" } });
    expect(nodes[3]).toMatchObject({ balance: { amount: expect.any(String) } });
    expect(nodes[4]).toMatchObject({ domain: domainName });
  });

  it("answers another account's ids, another key's task and unknown ids with null and no error, as for ids that do not exist", async () => {
    const unknown = ["task_doesnotexist", "ord_doesnotexist", "res_doesnotexist", "dom_nowhere.example", "purge_doesnotexist", "txn_999999999"];
    const theirs = [ids.task, ids.order, ids.resource, ids.domain, ids.purge, ids.transaction];
    for (const selection of ["id", "__typename", EVERY_TYPE]) {
      const query = `query($ids: [ID!]!) { nodes(ids: $ids) { ${selection} } }`;
      const stranger = await t.graphql(query, { ids: [...theirs, ...unknown, ids.account] }, keys.stranger);
      expect(stranger.body, selection).toEqual({ data: { nodes: [...theirs, ...unknown, ids.account].map(() => null) } });
    }
    // Another key of the same account reads the account's objects, but not the owner key's task.
    const sibling = await t.graphql(`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: [ids.task, ids.order, ids.account] }, keys.other);
    expect(sibling.body).toEqual({ data: { nodes: [null, { id: ids.order }, { id: ids.account }] } });
    const single = await t.graphql(`query($id: ID!) { node(id: $id) { id } }`, { id: ids.task }, keys.other);
    expect(single.body).toEqual({ data: { node: null } });
    // The root fields answer the same ids as not found.
    const roots = await t.graphql(`query($t: ID!) { task(id: $t) { id } }`, { t: ids.task }, keys.other);
    expect(roots.body.errors[0].extensions.code).toBe("task_not_found");
    const order = await t.graphql(`query($o: ID!) { order(id: $o) { id } }`, { o: ids.order }, keys.stranger);
    expect(order.body.errors[0].extensions.code).toBe("not_found");
  });

  it("answers the stranger's own objects to the stranger, and never the owner's", async () => {
    const answer = await t.graphql(
      `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`,
      { ids: [strangerIds.task, strangerIds.order, strangerIds.account, ids.account] },
      keys.stranger,
    );
    expect(answer.body).toEqual({
      data: {
        nodes: [
          { __typename: "Task", id: strangerIds.task },
          { __typename: "Order", id: strangerIds.order },
          { __typename: "Account", id: strangerIds.account },
          null,
        ],
      },
    });
  });

  it("answers malformed ids with null and no error", async () => {
    const malformed = ["", "task_", "ord_", "dom_", "txn_abc", "txn_01", "stm_2026-13", "stm_2999-01", "acc_", "x".repeat(300), "not an id!", "ord_../../etc"];
    const answer = await t.graphql(`query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`, { ids: malformed }, keys.owner);
    expect(answer.body).toEqual({ data: { nodes: malformed.map(() => null) } });
    const unknownCatalog = await t.graphql(
      `{ a: node(id: "prd_nope") { id } b: node(id: "vnd_nope") { id } c: node(id: "nothing-at-all") { id } }`,
      {},
      keys.owner,
    );
    expect(unknownCatalog.body).toEqual({ data: { a: null, b: null, c: null } });
  });

  it("refuses an id of a type whose scope the key lacks with 403 forbidden at that index, whether or not it exists, and answers the others", async () => {
    const scopeOf: Record<string, string> = {
      task: "generation",
      order: "orders:read",
      resource: "resources:read",
      domain: "domains:read",
      purge: "domains:read",
      product: "catalog:read",
      vendor: "catalog:read",
      transaction: "billing:read",
      statement: "billing:read",
    };
    for (const [kind, scope] of Object.entries(scopeOf)) {
      const key = (await createKey(t.stack.db!, { name: `no ${scope}`, accountId: ids.account, scopes: ALL_SCOPES.filter((s) => s !== scope) })).key;
      const unknown = `${ids[kind as keyof typeof ids].split("_")[0]}_doesnotexist`;
      const answer = await t.graphql(
        `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`,
        { ids: [ids.account, ids[kind as keyof typeof ids], unknown] },
        key,
      );
      expect(answer.status, kind).toBe(200);
      expect(answer.body.data.nodes, kind).toEqual([{ __typename: "Account", id: ids.account }, null, null]);
      const errors = (answer.body.errors as GraphqlError[]).map((e) => ({
        path: e.path,
        code: e.extensions.code,
        scope: e.extensions.scope,
        status: e.extensions.http.status,
      }));
      expect(errors, kind).toEqual([
        { path: ["nodes", 1], code: "forbidden", scope, status: 403 },
        { path: ["nodes", 2], code: "forbidden", scope, status: 403 },
      ]);
      const single = await t.graphql(`query($id: ID!) { node(id: $id) { id } }`, { id: ids[kind as keyof typeof ids] }, key);
      expect(single.body.data, kind).toEqual({ node: null });
      expect(single.body.errors[0].extensions, kind).toMatchObject({ code: "forbidden", scope });
    }
  });

  it("needs a key: 401 unauthorized without one (HTTP 200 with node: null, as for any nullable root field)", async () => {
    const node = await t.graphql(`query($id: ID!) { node(id: $id) { id } }`, { id: ids.order });
    expect(node.body.data).toEqual({ node: null });
    expect(node.body.errors[0].extensions).toMatchObject({ code: "unauthorized", http: { status: 401 } });
    const nodes = await t.graphql(`query($ids: [ID!]!) { nodes(ids: $ids) { id } }`, { ids: [ids.order] });
    expect(nodes.status).toBe(401);
    expect(nodes.body.data ?? null).toBeNull();
    expect(nodes.body.errors[0].extensions).toMatchObject({ code: "unauthorized", http: { status: 401 } });
  });

  it(`answers 100 ids and refuses 101 with 400 invalid_request naming ids`, async () => {
    const query = `query($ids: [ID!]!) { nodes(ids: $ids) { id } }`;
    const hundred = await t.graphql(query, { ids: Array.from({ length: 100 }, () => ids.order) }, keys.owner);
    expect(hundred.body.data.nodes).toHaveLength(100);
    const tooMany = await t.graphql(query, { ids: Array.from({ length: 101 }, () => ids.order) }, keys.owner);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.data ?? null).toBeNull();
    expect(tooMany.body.errors[0]).toMatchObject({
      message: "ids must list at most 100 ids",
      extensions: { code: "invalid_request", field: "ids", http: { status: 400 } },
    });
  });
});

describe("the database work of nodes(ids:)", () => {
  it("reads many ids of each type in as many SQL statements as one id of each", async () => {
    for (const prompt of ["a wren", "a kite", "a rook"]) {
      expect((await t.rest("POST", "/api/v1/video/generations", { key: keys.owner, body: { prompt, model_id: 52 } })).status).toBe(200);
    }
    const tasks = await t.graphql(`{ tasks(first: 4) { nodes { id } } }`, {}, keys.owner);
    const transactions = await t.graphql(`{ transactions(first: 10) { nodes { id } } }`, {}, keys.owner);
    const taskIds = (tasks.body.data.tasks.nodes as NodeView[]).map((n) => n.id);
    const transactionIds = (transactions.body.data.transactions.nodes as NodeView[]).map((n) => n.id);
    expect(taskIds.length).toBe(4);
    expect(transactionIds.length).toBeGreaterThanOrEqual(2);
    const others = [ids.order, ids.resource, ids.purge, ids.domain, ids.product, ids.vendor, ids.account];
    const query = `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on Task { prompt } ... on Transaction { amount { amount } } } }`;
    const measure = async (asked: string[]) => {
      const { result, statements } = await measureStatements(t.stack.db!, () => t.graphql(query, { ids: asked }, keys.owner));
      expect(result.body.errors).toBeUndefined();
      expect((result.body.data.nodes as (NodeView | null)[]).every((n) => n !== null)).toBe(true);
      return statements.length;
    };
    await measure([taskIds[0]!, transactionIds[0]!, ...others]); // warm-up
    const one = await measure([taskIds[0]!, transactionIds[0]!, ...others]);
    const many = await measure([...taskIds, ...transactionIds, ...others]);
    expect(one).toBeGreaterThan(3);
    expect(many).toBe(one);
  });
});

describe("the cost of nodes(ids:)", () => {
  const query = `query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Product { vendor { id } } } }`;

  it("counts nodes with N ids as a list of N, each item its selection's cost", () => {
    expect(measureOperation(query, { ids: ["a"] }).cost).toBe(2);
    expect(measureOperation(query, { ids: Array.from({ length: 40 }, () => "a") }).cost).toBe(80);
    expect(measureOperation(`{ node(id: "a") { id ... on Product { vendor { id } } } }`).cost).toBe(2);
  });

  it("costs each request of one document with its own number of ids", async () => {
    const few = await t.graphql(query, { ids: [ids.product] }, keys.owner);
    expect(few.body.data.nodes).toEqual([{ id: ids.product, vendor: { id: ids.vendor } }]);
    const many = Array.from({ length: LIMITS.cost }, () => ids.product);
    const refused = await t.graphql(query, { ids: many }, keys.owner);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions).toMatchObject({ code: "query_too_costly", cost: 2 * LIMITS.cost, limit: LIMITS.cost });
  });
});

describe("_entities of every Node type on the subgraphs' ports", () => {
  /** `_entities` as the router signs it, with the given key. */
  async function entities(subgraph: "cloud" | "generation", representation: Record<string, unknown>, selection: string, key: string) {
    const url = subgraph === "cloud" ? t.stack.cloudUrl! : t.stack.generationUrl!;
    // `audience`: the subgraph the signature is for (signed requests name it once issue 20's signing lands).
    const request = {
      query: `query($r: [_Any!]!) { _entities(representations: $r) { ${selection} } }`,
      variables: { r: [representation] },
      headers: { authorization: `Bearer ${key}`, "x-switchyard-client-ip": "127.0.0.1" },
      audience: subgraph,
    };
    const params = await signSubgraphRequest(t.stack.subgraphSecret!, request);
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params) });
    return response.json();
  }

  const CASES = [
    { subgraph: "cloud", typename: "Transaction", key: () => ({ id: ids.transaction }), selection: "... on Transaction { id type amount { amount } }" },
    { subgraph: "cloud", typename: "Order", key: () => ({ id: ids.order }), selection: "... on Order { id clientOrderNo }" },
    { subgraph: "cloud", typename: "Resource", key: () => ({ id: ids.resource }), selection: "... on Resource { id customerId }" },
    { subgraph: "cloud", typename: "Domain", key: () => ({ id: ids.domain }), selection: "... on Domain { id domain cname }" },
    { subgraph: "cloud", typename: "Domain", key: () => ({ domain: domainName }), selection: "... on Domain { id domain cname }" },
    { subgraph: "cloud", typename: "PurgeTask", key: () => ({ id: ids.purge }), selection: "... on PurgeTask { id targets }" },
    { subgraph: "cloud", typename: "Task", key: () => ({ id: ids.task }), selection: "... on Task { id }" },
    { subgraph: "generation", typename: "Task", key: () => ({ id: ids.task }), selection: "... on Task { id prompt }" },
  ] as const;

  for (const c of CASES) {
    it(`answers ${c.typename} ${Object.keys(c.key())[0]} on the ${c.subgraph} subgraph to its owner and null to another account`, async () => {
      const representation = { __typename: c.typename, ...c.key() };
      const mine = await entities(c.subgraph, representation, c.selection, keys.owner);
      expect(mine.errors).toBeUndefined();
      expect(mine.data._entities[0]).toMatchObject(c.typename === "Domain" ? { id: ids.domain, domain: domainName } : { id: c.key().id });
      const theirs = await entities(c.subgraph, representation, c.selection, keys.stranger);
      expect(theirs.errors).toBeUndefined();
      expect(theirs.data).toEqual({ _entities: [null] });
    });
  }

  it("answers a Statement to each account as that account's own month: the owner's total, not another's", async () => {
    const selection = "... on Statement { id totalAmount { amount } items { transactionId } }";
    const mine = await entities("cloud", { __typename: "Statement", id: ids.statement }, selection, keys.owner);
    expect((mine.data._entities[0].items as { transactionId: string }[]).map((i) => i.transactionId)).toContain(ids.transaction);
    const theirs = await entities("cloud", { __typename: "Statement", id: ids.statement }, selection, keys.stranger);
    expect((theirs.data._entities[0].items as { transactionId: string }[]).map((i) => i.transactionId)).not.toContain(ids.transaction);
    const malformed = await entities("cloud", { __typename: "Statement", id: "stm_nope" }, selection, keys.owner);
    expect(malformed.data).toEqual({ _entities: [null] });
  });
});

describe("catalog ids", () => {
  it("refuses a new vendor or product whose chosen id lacks its prefix, and keeps answering a row that already has such an id", async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const vendor = await t.graphql(`mutation { adminUpsertVendor(input: { id: "acme", name: "Acme" }) { vendor { id } } }`, {}, undefined, admin);
    expect(vendor.body.errors[0]).toMatchObject({
      message: "the id of a new vendor must start with vnd_",
      extensions: { code: "validation_failed", field: "id" },
    });
    const product = await t.graphql(
      `mutation { adminUpsertProduct(input: { id: "vnd_acme_cdn", vendorId: "vnd_nimbus", category: "cdn", name: "Acme CDN", billingCycles: [{ cycle: "monthly", price: "1.00" }] }) { product { id } } }`,
      {},
      undefined,
      admin,
    );
    expect(product.body.errors[0]).toMatchObject({
      message: "the id of a new product must start with prd_",
      extensions: { code: "validation_failed", field: "id" },
    });
    const created = await t.graphql(`mutation { adminUpsertVendor(input: { id: "vnd_acme", name: "Acme" }) { vendor { id } } }`, {}, undefined, admin);
    expect(created.body.data.adminUpsertVendor.vendor).toEqual({ id: "vnd_acme" });
    // A vendor stored with an unprefixed id before the rule is updated, and node() finds it.
    const now = new Date().toISOString();
    await t.stack.db!("vendors").insert({ id: "legacy-cloud", name: "Legacy", status: "active", created_at: now });
    await expect(upsertVendor(t.stack.db!, { id: "legacy-cloud", name: "Legacy Cloud" })).resolves.toMatchObject({ id: "legacy-cloud", name: "Legacy Cloud" });
    const node = await t.graphql(`{ node(id: "legacy-cloud") { __typename id ... on Vendor { name } } }`, {}, keys.owner);
    expect(node.body).toEqual({ data: { node: { __typename: "Vendor", id: "legacy-cloud", name: "Legacy Cloud" } } });
  });
});

describe("node(id:) and nodes(ids:) with the subgraphs reached over HTTP", () => {
  let h: TestStack;
  beforeAll(async () => {
    h = await startTestStack({ SUBGRAPH_TRANSPORT: "http" });
  });
  afterAll(() => h?.close());

  it("plans a mixed nodes(ids:) across both subgraphs: the cloud subgraph's nodes, then the generation subgraph's _entities", async () => {
    const owner = await h.createKey("50");
    const task = await h.rest("POST", "/api/v1/video/generations", { key: owner.key, body: { prompt: "an owl", model_id: 52 } });
    const order = await h.rest("POST", "/openapi/v1/orders", {
      key: owner.key,
      body: {
        client_order_no: "http-1",
        product_id: "prd_cdn_standard",
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "poor" },
        metadata: { domain: "http.gid.example" },
      },
    });
    expect(order.body.data.status).toBe("unpaid");
    const asked = [order.body.data.order_id, task.body.data.task_id, owner.account_id, "vnd_nimbus", "task_doesnotexist"];
    const answer = await h.graphql(
      `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on Order { clientOrderNo status } ... on Task { prompt model { id } } ... on Account { spent { amount } orders(first: 1) { totalCount } } ... on Vendor { name } } }`,
      { ids: asked },
      owner.key,
    );
    expect(answer.body).toEqual({
      data: {
        nodes: [
          { __typename: "Order", id: asked[0], clientOrderNo: "http-1", status: "UNPAID" },
          { __typename: "Task", id: asked[1], prompt: "an owl", model: { id: 52 } },
          { __typename: "Account", id: asked[2], spent: { amount: expect.any(String) }, orders: { totalCount: 1 } },
          { __typename: "Vendor", id: "vnd_nimbus", name: "Nimbus Cloud" },
          null,
        ],
      },
    });
    // A fragment on the other subgraph's type selects nothing of an object that is not of it.
    const crossed = await h.graphql(
      `query($task: ID!, $order: ID!) { t: node(id: $task) { ... on Order { status } } o: node(id: $order) { ... on Task { status } } }`,
      { task: asked[1], order: asked[0] },
      owner.key,
    );
    expect(crossed.body).toEqual({ data: { t: {}, o: {} } });
  });
});
