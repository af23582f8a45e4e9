/**
 * Compiled execution (subgraphs/shared/compiled.ts, ADR 0029): graphql-jit answers as graphql-js
 * does — list items that fail keep their index whatever order they fail in, variable errors are
 * graphql-js's own words, mutations run their root fields one after another, and what graphql-jit
 * does not run (subscriptions) is graphql-js's.
 */
import { describe, expect, it } from "vitest";
import { buildSchema, execute, parse, type ExecutionResult, type GraphQLSchema } from "graphql";
import { compiledExecutor } from "../../subgraphs/shared/compiled.ts";

/** A promise settled by the test, so items fail in an order it chooses. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The answer as JSON, as it leaves a subgraph (errors as their formatted shape). */
const asJson = (result: ExecutionResult) => JSON.parse(JSON.stringify(result));

function schemaWith(resolvers: Record<string, (...args: never[]) => unknown>): GraphQLSchema {
  const schema = buildSchema(`
    interface Node { id: ID! }
    type Item implements Node { id: ID! }
    type Query { nodes(ids: [ID!]!): [Node]! count(limit: Int!): Int }
    type Mutation { first: String second: String }
    type Subscription { ticks: Int }
  `);
  (schema.getType("Node") as unknown as { resolveType: (value: { __typename: string }) => string }).resolveType = (value) => value.__typename;
  for (const type of [schema.getQueryType(), schema.getMutationType()]) {
    for (const [name, field] of Object.entries(type!.getFields())) {
      if (resolvers[name]) field.resolve = resolvers[name] as never;
    }
  }
  return schema;
}

describe("compiled execution of a subgraph's operations", () => {
  it("answers each failed list item at its own index, even when the last item fails first", async () => {
    const items = [deferred<object>(), deferred<object>(), deferred<object>()];
    const schema = schemaWith({ nodes: () => items.map((item) => item.promise) });
    const run = compiledExecutor(schema);
    const document = parse(`query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`);
    const answer = run({ schema, document, variableValues: { ids: ["a", "b", "c"] } });
    items[2]!.reject(new Error("c is not yours"));
    items[1]!.reject(new Error("b is not yours"));
    items[0]!.resolve({ __typename: "Item", id: "a" });
    const result = asJson(await answer);
    expect(result.data).toEqual({ nodes: [{ __typename: "Item", id: "a" }, null, null] });
    expect(result.errors.map((e: { path: unknown; message: string }) => [e.path, e.message]).sort()).toEqual([
      [["nodes", 1], "b is not yours"],
      [["nodes", 2], "c is not yours"],
    ]);
  });

  it("keeps the resolver's error as the located error's originalError, as graphql-js does", async () => {
    const failure = new Error("refused");
    const schema = schemaWith({ nodes: () => [Promise.reject(failure)] });
    const result = await compiledExecutor(schema)({ schema, document: parse(`{ nodes(ids: ["x"]) { id } }`) });
    expect(result.errors?.[0]?.originalError).toBe(failure);
    expect(result.errors?.[0]?.path).toEqual(["nodes", 0]);
  });

  it("words a variable error as graphql-js does, without running a resolver", async () => {
    let ran = 0;
    const schema = schemaWith({ count: () => ++ran });
    const document = parse(`query($limit: Int!) { count(limit: $limit) }`);
    const compiled = await compiledExecutor(schema)({ schema, document, variableValues: { limit: "many" } });
    const reference = await execute({ schema, document, variableValues: { limit: "many" } });
    expect(asJson(compiled)).toEqual(asJson(reference));
    expect(ran).toBe(0);
  });

  it("runs a mutation's root fields one after another", async () => {
    const order: string[] = [];
    const first = deferred<string>();
    const schema = schemaWith({
      first: () => {
        order.push("first started");
        return first.promise.then((value) => {
          order.push("first done");
          return value;
        });
      },
      second: () => {
        order.push("second started");
        return "2";
      },
    });
    const answer = compiledExecutor(schema)({ schema, document: parse(`mutation { first second }`) });
    first.resolve("1");
    expect(asJson(await answer)).toEqual({ data: { first: "1", second: "2" } });
    expect(order).toEqual(["first started", "first done", "second started"]);
  });

  it("leaves subscriptions to graphql-js, which refuses them in execute as it always has", async () => {
    const schema = schemaWith({});
    const document = parse(`subscription { ticks }`);
    const compiled = await compiledExecutor(schema)({ schema, document });
    expect(asJson(compiled)).toEqual(asJson(await execute({ schema, document })));
  });
});
