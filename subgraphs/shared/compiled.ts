/**
 * Compiled execution of a subgraph's in-process queries and mutations (docs/adr/0029-compiled-execution.md):
 * graphql-jit turns each operation into a function once per document, instead of graphql-js
 * walking the document field by field on every request. The same resolvers, scalars and
 * `_entities` run; anything graphql-jit does not compile, or a request it refuses before any
 * resolver runs, goes to graphql-js `execute`, whose answers are the contract.
 */
import {
  BREAK,
  execute,
  getNullableType,
  getOperationAST,
  isListType,
  isObjectType,
  visit,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLFieldResolver,
  type GraphQLSchema,
} from "graphql";
import { compileQuery, isCompiledQuery, type CompiledQuery } from "graphql-jit";
import { LRUCache } from "lru-cache";

/** Runs one operation as graphql-js `execute` would, for the arguments it takes (and the operation's text, when known). */
export type Executor = (args: ExecutionArgs, text?: string) => Promise<ExecutionResult>;

/** Whether a document uses incremental delivery, which graphql-jit does not know. */
function usesIncrementalDelivery(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value === "defer" || node.name.value === "stream") {
        found = true;
        return BREAK;
      }
    },
  });
  return found;
}

/** An item that failed, as a value: graphql-js and graphql-jit both answer an Error item as that item's error. */
function failedAsValue(error: unknown): unknown {
  if (error instanceof Error) return error;
  throw error;
}

/** A list's items with each rejected promise turned into its error as a value. */
function settledItems(list: unknown): unknown {
  if (!Array.isArray(list)) return list;
  let items: unknown[] | undefined;
  for (let index = 0; index < list.length; index++) {
    const item = list[index];
    if (item && typeof (item as PromiseLike<unknown>).then === "function") {
      items ??= list.slice();
      items[index] = Promise.resolve(item).then(undefined, failedAsValue);
    }
  }
  return items ?? list;
}

/**
 * Wraps the resolver of every list field so that an item's rejected promise reaches the executor
 * as an Error item. graphql-jit 0.8 appends a rejected item's null at the end of the list
 * (`push`) instead of at its index, so a list whose items fail out of order came back short
 * (global-ids.test.ts `nodes(ids:)`); an Error item takes its own index in both executors.
 */
function listItemsFailingInPlace(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith("__")) continue;
    for (const field of Object.values(type.getFields())) {
      const resolve = field.resolve;
      if (!resolve || !isListType(getNullableType(field.type))) continue;
      const wrapped: GraphQLFieldResolver<unknown, unknown> = (source, args, context, info) => {
        const result = resolve(source, args, context, info);
        return result && typeof (result as PromiseLike<unknown>).then === "function" ? (result as Promise<unknown>).then(settledItems) : settledItems(result);
      };
      field.resolve = wrapped;
    }
  }
}

/** How many compiled operations are kept by their text (plans are few; a bound all the same). */
const COMPILED_BY_TEXT = 500;

/**
 * Creates the executor of one schema: each query or mutation compiled once, the rest by graphql-js.
 * A compiled operation is found by its document object (the Rust planner hands one DocumentNode
 * per planned fetch) or else by its text (the default planner, GRAPHQL_DEFER=1, builds a new
 * document per request), so nothing is compiled per request.
 * @param schema the subgraph's schema (resolvers attached); its list fields' resolvers are
 *   wrapped in place ({@link listItemsFailingInPlace}), which changes nothing for graphql-js
 * @returns an executor taking graphql-js's arguments and, when known, the operation's text; its
 *   results have the shape of graphql-js's (errors carry path, locations and the resolver's error
 *   as `originalError`). Variable errors come from graphql-js itself: graphql-jit's own messages
 *   differ, so such a request is run again by graphql-js, which refuses it before any resolver
 *   runs, in its words.
 * @throws nothing of its own; `execute`'s own throws (a schema or document that is not one)
 */
export function compiledExecutor(schema: GraphQLSchema): Executor {
  listItemsFailingInPlace(schema);
  const byDocument = new WeakMap<DocumentNode, Map<string, CompiledQuery | null>>();
  const byText = new LRUCache<string, { query: CompiledQuery | null }>({ max: COMPILED_BY_TEXT });
  const compile = (document: DocumentNode, operationName: string | null | undefined): CompiledQuery | null => {
    const operation = getOperationAST(document, operationName);
    if (!operation || operation.operation === "subscription" || usesIncrementalDelivery(document)) return null;
    try {
      const result = compileQuery(schema, document, operationName ?? undefined);
      return isCompiledQuery(result) ? result : null;
    } catch {
      // graphql-js answers what graphql-jit cannot compile.
      return null;
    }
  };
  const compiledOf = (document: DocumentNode, operationName: string | null | undefined, text: string | undefined): CompiledQuery | null => {
    let byName = byDocument.get(document);
    if (!byName) {
      byName = new Map();
      byDocument.set(document, byName);
    }
    const name = operationName ?? "";
    let query = byName.get(name);
    if (query === undefined) {
      const textKey = text === undefined ? undefined : `${name}\n${text}`;
      const known = textKey === undefined ? undefined : byText.get(textKey);
      query = known ? known.query : compile(document, operationName);
      if (textKey !== undefined && !known) byText.set(textKey, { query });
      byName.set(name, query);
    }
    return query;
  };
  return async (args, text) => {
    const query = compiledOf(args.document, args.operationName, text);
    if (!query) return execute(args);
    const result = await query.query(args.rootValue, args.contextValue, args.variableValues ?? {});
    // No `data`: refused before execution (variable coercion); graphql-js words the errors.
    if (result.errors?.length && !("data" in result)) return execute(args);
    return result as ExecutionResult;
  };
}
