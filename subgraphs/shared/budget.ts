/**
 * Runs every resolver of a subgraph inside its request's database budget (src/db/budget.ts), on
 * every way a subgraph is reached (HTTP, graphql-ws, in-process): graphql-js calls each resolver
 * with the request's context, and the resolver's database work — with the DataLoader batches
 * and services it starts — then counts against `context.budget`. A mutation's budget keeps only
 * its connection cap (RequestBudget.forWrites).
 */
import { GraphQLScalarType, type GraphQLResolveInfo } from "graphql";
import { isCurrentBudget, runWithBudget, type RequestBudget } from "../../src/db/budget.ts";

/** A context carrying its request's budget. */
export interface BudgetedContext {
  budget: RequestBudget;
}

type AnyFunction = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Wraps one resolver.
 * @param contextAt the position of the context among its arguments: 2 for a field's
 *   `(parent, args, context, info)`, 1 for `__resolveReference(reference, context, info)` and
 *   `__resolveType(value, context, info)`
 */
function budgeted(resolver: AnyFunction, contextAt: number): AnyFunction {
  if (contextAt === 2) return budgetedField(resolver);
  return function (this: unknown, ...args: unknown[]) {
    const budget = (args[contextAt] as Partial<BudgetedContext> | undefined)?.budget;
    if (!budget) return resolver.apply(this, args);
    // The info follows the context; a mutation's writes are never cut between their steps.
    if ((args[contextAt + 1] as GraphQLResolveInfo | undefined)?.operation?.operation === "mutation") budget.forWrites();
    return runWithBudget(budget, () => resolver.apply(this, args));
  };
}

/**
 * {@link budgeted} for a field's `(parent, args, context, info)`, the one called per field of
 * every row: fixed parameters (no rest array), and no closure when the field runs inside its
 * parent's budget already.
 */
function budgetedField(resolver: AnyFunction): AnyFunction {
  return function (this: unknown, parent: unknown, args: unknown, context: unknown, info: unknown) {
    const budget = (context as Partial<BudgetedContext> | undefined)?.budget;
    if (!budget) return resolver.call(this, parent, args, context, info);
    if ((info as GraphQLResolveInfo | undefined)?.operation?.operation === "mutation") budget.forWrites();
    if (isCurrentBudget(budget)) return resolver.call(this, parent, args, context, info);
    return runWithBudget(budget, () => resolver.call(this, parent, args, context, info));
  } as AnyFunction;
}

/**
 * A resolver map whose every resolver (fields, `subscribe`, `__resolveReference`,
 * `__resolveType`) runs inside `context.budget`; scalars are kept as they are.
 * @param resolvers a resolver map (type name → field name → resolver or `{ subscribe, resolve }`)
 * @returns a new map; the given one is not changed
 */
export function withRequestBudget<R extends Record<string, unknown>>(resolvers: R): R {
  const wrapped: Record<string, unknown> = {};
  for (const [typeName, fields] of Object.entries(resolvers)) {
    if (fields instanceof GraphQLScalarType || !fields || typeof fields !== "object") {
      wrapped[typeName] = fields;
      continue;
    }
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(fields as Record<string, unknown>)) {
      const contextAt = name.startsWith("__") ? 1 : 2;
      if (typeof value === "function") out[name] = budgeted(value as AnyFunction, contextAt);
      else if (value && typeof value === "object") {
        const field = { ...(value as Record<string, unknown>) };
        for (const hook of ["subscribe", "resolve"]) if (typeof field[hook] === "function") field[hook] = budgeted(field[hook] as AnyFunction, contextAt);
        out[name] = field;
      } else out[name] = value;
    }
    wrapped[typeName] = out;
  }
  return wrapped as R;
}
