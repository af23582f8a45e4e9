/**
 * The cost of an operation (issue "Trust at the edges" item 3; router/limits.ts): computed by
 * graphql-query-complexity over the gateway's schema with the request's own variables, after
 * validation and before anything runs, so `products(first: $n)` costs what `products(first: 100)`
 * costs when `n` is 100.
 *
 * The model is the IBM GraphQL cost directive specification's default (the one Hive Gateway's
 * demand control and Apollo Router implement), with every page argument a slicing argument:
 * - a field returning an object (or interface, union) costs 1; a scalar or enum costs 0;
 * - a field taking `first` or `last` returns up to that many items: it costs its own weight and
 *   its selection's cost times that size (literal, variable or the schema's default, 20; an
 *   explicit null is the resolvers' default, 20; below 1, which the resolvers refuse, counts 1);
 * - a field taking a list of ids (`nodes(ids:)`) returns one item per id: it costs its own weight
 *   and its selection's cost times the number of ids (at least 1), like a page of that size;
 * - a list without a page argument (billing cycles, a delivery's attempts, usage points) is part
 *   of its parent's row and counts {@link ASSUMED_LIST_SIZE} items.
 * So the cost is about the number of objects (rows) the answer can hold.
 */
import { getComplexity, type ComplexityEstimator } from "graphql-query-complexity";
import {
  GraphQLError,
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  Kind,
  type DocumentNode,
  type OperationDefinitionNode,
  type GraphQLSchema,
} from "graphql";
import { DEFAULT_PAGE_SIZE } from "../src/pagination.ts";
import { operationOf } from "./operation.ts";

/** Items counted for a list field that takes no page argument. */
const ASSUMED_LIST_SIZE = 1;

/** The page-size (slicing) arguments. */
const SLICING_ARGUMENTS = ["first", "last"] as const;

/** List arguments whose length is the number of items the field returns (`Query.nodes`). */
const SIZING_LIST_ARGUMENTS = ["ids"] as const;

/**
 * Most selections the estimate walks (fragments spread many times count each time): a document
 * within the token limit that needs more is refused as too costly rather than walked on.
 */
export const MAX_COST_NODES = 10_000;

/**
 * The size of the list a field returns, as the cost multiplies by it.
 * @param args the field's arguments, coerced with the request's variables and the schema's defaults
 */
function listSize(field: { type: Parameters<typeof getNullableType>[0]; args: readonly { name: string }[] }, args: Record<string, unknown>): number {
  for (const arg of field.args) {
    const value = args[arg.name];
    // Coerced: a single id sent for a list is already a list of one.
    if ((SIZING_LIST_ARGUMENTS as readonly string[]).includes(arg.name) && Array.isArray(value)) return Math.max(1, value.length);
  }
  const sliced = field.args.filter((arg) => (SLICING_ARGUMENTS as readonly string[]).includes(arg.name));
  if (sliced.length === 0) return isListType(getNullableType(field.type)) ? ASSUMED_LIST_SIZE : 1;
  let size: number | null = null;
  for (const arg of sliced) {
    const value = args[arg.name];
    if (typeof value === "number") size = Math.max(size ?? value, value);
  }
  if (size === null) return DEFAULT_PAGE_SIZE;
  // A size below 1 is refused by the resolvers; counted as 1 so it never lowers the sum.
  return Math.max(1, size);
}

/** The estimator of the model above (graphql-query-complexity walks the operation). */
const estimator: ComplexityEstimator = ({ field, args, childComplexity }) => {
  const own = isCompositeType(getNamedType(field.type)) ? 1 : 0;
  return listSize(field, args) * (own + childComplexity);
};

/**
 * Computed costs by schema, document (the gateway reuses one parsed document per query text) and
 * {@link cacheKey}. Only numbers are kept: a request whose variables do not coerce is costed anew.
 */
const costCache = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, number>>>();

/** Most cached costs per document (different page sizes in variables); then it starts afresh. */
const MAX_CACHED_PER_DOCUMENT = 256;

/** Names of the variable types that can change a cost: `Int` (page sizes) and `Boolean` (`@skip`, `@include`). */
const COST_VARIABLE_TYPES = new Set(["Int", "Boolean"]);

/**
 * What a cost depends on besides the document: the operation, the values of its Int and Boolean
 * variables as sent, and the lengths of its list variables (`nodes(ids: $ids)`); a REST read's
 * `$id` changes nothing, so all its reads share one entry.
 */
function cacheKey(operation: OperationDefinitionNode, variables: Record<string, unknown>): string {
  const values: unknown[] = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const type = definition.type.kind === Kind.NON_NULL_TYPE ? definition.type.type : definition.type;
    const value = variables[definition.variable.name.value];
    if (type.kind === Kind.NAMED_TYPE && COST_VARIABLE_TYPES.has(type.name.value)) {
      values.push(value === undefined ? "\u0000absent" : value);
    } else if (type.kind === Kind.LIST_TYPE) {
      // Only the length counts; a value that is no list is coerced to a list of one (or refused).
      values.push(Array.isArray(value) ? `\u0000length ${value.length}` : value === undefined ? "\u0000absent" : value === null ? null : "\u0000one");
    }
  }
  return `${operation.name?.value ?? ""}\u0000${JSON.stringify(values)}`;
}

/**
 * The cost of the operation a request runs.
 * @param schema the gateway's schema (the supergraph's API)
 * @param document the parsed, validated document
 * @param operationName the request's `operationName` (needed when the document holds several)
 * @param variables the request's variables as sent (coerced here as execution coerces them)
 * @returns the cost (see the model above), or null when the cost cannot be told because the
 *   operation or its variables are invalid: execution then refuses the request itself (the same
 *   coercion, graphql-tools' copy of graphql-js's, runs there)
 * @throws GraphQLError when the operation has more than {@link MAX_COST_NODES} selections to walk
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
): number | null {
  const operation = operationOf(document, operationName);
  if (!operation) return null;
  const values = variables ?? {};
  const key = cacheKey(operation, values);
  let byDocument = costCache.get(schema);
  if (!byDocument) {
    byDocument = new WeakMap();
    costCache.set(schema, byDocument);
  }
  let byKey = byDocument.get(document);
  const cached = byKey?.get(key);
  if (cached !== undefined) return cached;
  let cost: number;
  try {
    cost = getComplexity({
      schema,
      query: document,
      // The operation's own name: graphql-query-complexity reads `operation.name` of every operation once a name is given.
      operationName: operation.name?.value,
      variables: values,
      estimators: [estimator],
      maxQueryNodes: MAX_COST_NODES,
    });
  } catch (error) {
    if (error instanceof GraphQLError && /maximum allowed number of nodes/.test(error.message)) throw error;
    // Variables or arguments that do not coerce: execution answers with its own error.
    if (error instanceof GraphQLError) return null;
    throw error;
  }
  if (!byKey || byKey.size >= MAX_CACHED_PER_DOCUMENT) {
    byKey = new Map();
    byDocument.set(document, byKey);
  }
  byKey.set(key, cost);
  return cost;
}
