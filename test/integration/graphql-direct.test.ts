/**
 * `/graphql` operations one in-process subgraph owns whole run on it without the plan's executor
 * (router/graph/direct-graphql.ts, ADR 0030): the answer is the gateway's, byte for byte (status,
 * headers, body), and the direct path is the one taken (the router's
 * `switchyard_graphql_direct_operations_total`); an operation of both subgraphs keeps the gateway.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";

const TASK = "query Task($id: ID!) { task(id: $id) { id status statusCode statusName result price { amount currency } createdAt } }";
const TASKS_PAGE =
  "query Tasks($first: Int) { tasks(first: $first) { totalCount edges { cursor node { id statusName model { id } } } pageInfo { hasNextPage endCursor } } }";
const ORDERS_PAGE = "query Orders { orders(first: 5) { totalCount edges { node { id status } } pageInfo { hasNextPage } } }";
const SUBMIT =
  "mutation Submit($input: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $input) { task { statusCode price { amount } model { id } } } }";
const BOTH = "query Both { viewer { id } orders(first: 1) { totalCount } }";

/** What the client sees of one answer, minus what differs per request by design. */
interface Seen {
  status: number;
  headers: Record<string, string>;
  body: string;
  remaining?: number;
}

describe("/graphql operations one in-process subgraph owns", () => {
  let t: TestStack;
  let key: string;
  let taskId: string;

  beforeAll(async () => {
    t = await startTestStack();
    ({ key } = await t.createKey("100", { rateLimit: 1000 }));
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a harbour at dawn", model_id: 67, seconds: 5 } });
    expect(submitted.status).toBe(200);
    taskId = submitted.body.data.task_id;
    await t.waitForTask(key, taskId);
  });
  afterAll(() => t?.close());

  async function directCount(subgraph: string): Promise<number> {
    const metric = t.stack.metrics!.getSingleMetric("switchyard_graphql_direct_operations_total");
    const values = (await metric!.get()).values;
    return values.find((value) => value.labels.subgraph === subgraph)?.value ?? 0;
  }

  async function send(query: string, variables: Record<string, unknown>, auth: string | null): Promise<Seen> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (auth) headers.authorization = `Bearer ${auth}`;
    const response = await fetch(`${t.url}/graphql`, { method: "POST", headers, body: JSON.stringify({ query, variables }) });
    const seen: Record<string, string> = {};
    for (const [name, value] of response.headers) if (!["date", "x-request-id", "ratelimit", "ratelimit-remaining"].includes(name)) seen[name] = value;
    const rateLimit = response.headers.get("ratelimit");
    const remaining = rateLimit ? Number(/r=(\d+)/.exec(rateLimit)?.[1]) : undefined;
    return { status: response.status, headers: seen, body: await response.text(), remaining };
  }

  /**
   * The same operation through the gateway's executor and then directly: the first run plans it
   * (gateway), the second has the direct path off, the third takes it.
   * @returns both answers and how many operations the subgraph ran directly meanwhile
   */
  async function bothWays(subgraph: string, query: string, variables: Record<string, unknown> = {}, auth: string | null = key) {
    t.stack.graphqlDirect!.enabled = true;
    await send(query, variables, auth);
    t.stack.graphqlDirect!.enabled = false;
    const before = await directCount(subgraph);
    const gateway = await send(query, variables, auth);
    t.stack.graphqlDirect!.enabled = true;
    const direct = await send(query, variables, auth);
    return { gateway, direct, taken: (await directCount(subgraph)) - before };
  }

  function expectSameAnswer(gateway: Seen, direct: Seen): void {
    expect(direct.status).toBe(gateway.status);
    expect(direct.headers).toEqual(gateway.headers);
    expect(direct.body).toBe(gateway.body);
    // Both carry the quota left (its count moves with each request and each 1 s window).
    expect(direct.remaining === undefined).toBe(gateway.remaining === undefined);
  }

  it("answers a task read directly on the generation subgraph, byte for byte as the gateway does", async () => {
    const { gateway, direct, taken } = await bothWays("generation", TASK, { id: taskId });
    expect(gateway.status).toBe(200);
    expect(JSON.parse(gateway.body).data.task.id).toBe(taskId);
    expect(gateway.remaining).toBeTypeOf("number");
    expectSameAnswer(gateway, direct);
    expect(taken).toBe(1);
  });

  it("answers a page of tasks and a page of orders directly, each on its own subgraph", async () => {
    const tasks = await bothWays("generation", TASKS_PAGE, { first: 2 });
    expect(JSON.parse(tasks.gateway.body).data.tasks.totalCount).toBe(1);
    expectSameAnswer(tasks.gateway, tasks.direct);
    expect(tasks.taken).toBe(1);
    const orders = await bothWays("cloud", ORDERS_PAGE);
    expect(JSON.parse(orders.gateway.body).data.orders).toEqual({ totalCount: 0, edges: [], pageInfo: { hasNextPage: false } });
    expectSameAnswer(orders.gateway, orders.direct);
    expect(orders.taken).toBe(1);
  });

  it("runs a mutation directly with the same answer and the same charge", async () => {
    const input = { prompt: "a lighthouse", modelId: 67, seconds: 5 };
    const balance = async () => (await t.rest("GET", "/api/v1/usage", { key })).body.data.balance as number;
    const before = await balance();
    const { gateway, direct, taken } = await bothWays("generation", SUBMIT, { input });
    expect(JSON.parse(gateway.body).data.submitVideoGeneration.task.statusCode).toBe(0);
    expectSameAnswer(gateway, direct);
    expect(taken).toBe(1);
    const price = Number(JSON.parse(direct.body).data.submitVideoGeneration.task.price.amount);
    expect(await balance()).toBeCloseTo(before - 3 * price, 3);
  });

  it("answers a task that is not there, a call without a key and an unknown key with the gateway's errors and status", async () => {
    const missing = await bothWays("generation", TASK, { id: "task_nothere" });
    expect(JSON.parse(missing.gateway.body).errors[0].extensions.code).toBe("task_not_found");
    expectSameAnswer(missing.gateway, missing.direct);
    expect(missing.taken).toBe(1);

    const anonymous = await bothWays("generation", TASKS_PAGE, { first: 1 }, null);
    expect(anonymous.gateway.status).toBe(401);
    expectSameAnswer(anonymous.gateway, anonymous.direct);
    expect(anonymous.taken).toBe(1);

    const unknown = await bothWays("generation", TASKS_PAGE, { first: 1 }, "sk-not-a-key");
    expect(unknown.gateway.status).toBe(401);
    expectSameAnswer(unknown.gateway, unknown.direct);
  });

  it("refuses a page over the limit, a variable of the wrong type and an invalid document before any subgraph runs, as the gateway does", async () => {
    const over = await bothWays("generation", TASKS_PAGE, { first: 1000 });
    expect(over.gateway.status).toBe(400);
    expect(JSON.parse(over.gateway.body).errors[0].extensions.code).toBe("page_size_too_large");
    expectSameAnswer(over.gateway, over.direct);
    expect(over.taken).toBe(0);

    const badVariable = await bothWays("generation", TASKS_PAGE, { first: "two" });
    expect(badVariable.gateway.status).toBe(400);
    expectSameAnswer(badVariable.gateway, badVariable.direct);
    expect(badVariable.taken).toBe(0);

    const invalid = await bothWays("generation", "query { task(id: 1) { nope } }");
    expect(JSON.parse(invalid.gateway.body).errors[0].extensions.code).toBe("graphql_validation_failed");
    expectSameAnswer(invalid.gateway, invalid.direct);
    expect(invalid.taken).toBe(0);
  });

  it("writes the same request-log row for the direct answer as for the gateway's", async () => {
    const { key: own } = await t.createKey("10");
    const { gateway, direct, taken } = await bothWays("generation", TASK, { id: "task_logged" }, own);
    expectSameAnswer(gateway, direct);
    expect(taken).toBe(1);
    const usage = await t.rest("GET", "/api/v1/usage?limit=10", { key: own });
    const rows = (usage.body.data.recent_requests as Record<string, unknown>[]).filter((row) => row.path === "/graphql");
    // Newest first: the direct answer, the gateway's, the planning run.
    expect(rows).toHaveLength(3);
    const { at: _directAt, ...directRow } = rows[0]!;
    const { at: _gatewayAt, ...gatewayRow } = rows[1]!;
    expect(directRow).toEqual(gatewayRow);
  });

  it("keeps an operation of both subgraphs, and a fragment, on the gateway", async () => {
    const both = await bothWays("generation", BOTH);
    expect(both.gateway.status).toBe(200);
    expectSameAnswer(both.gateway, both.direct);
    expect(both.taken).toBe(0);
    expect(await directCount("cloud")).toBe(1);

    const fragment = await bothWays("generation", "query Frag($id: ID!) { task(id: $id) { ...T } } fragment T on Task { id statusName }", { id: taskId });
    expect(JSON.parse(fragment.gateway.body).data.task.id).toBe(taskId);
    expectSameAnswer(fragment.gateway, fragment.direct);
    expect(fragment.taken).toBe(0);
  });
});
