/**
 * Variable coercion errors stay request errors: the Rust planner's executor
 * (@graphql-hive/router-runtime) throws them where graphql-js returns them as a result.
 */
import { GraphQLError } from "graphql";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

/**
 * The errors of a thrown variable-coercion failure (one GraphQLError, or an AggregateError of
 * them), marked 400 as graphql-tools' `execute` marks them; else null.
 */
function requestErrorsOf(error: unknown): GraphQLError[] | null {
  const errors = error instanceof AggregateError ? error.errors : [error];
  if (!errors.length || !errors.every((e) => e instanceof GraphQLError)) return null;
  return (errors as GraphQLError[]).map((e) => {
    const http = (e.extensions?.http ?? {}) as Record<string, unknown>;
    return Object.defineProperty(e, "extensions", { value: { ...e.extensions, http: { ...http, status: 400 } } });
  });
}

/**
 * The Rust planner's executor (@graphql-hive/router-runtime) throws variable coercion errors
 * where graphql-js returns them as a result. This plugin turns them back into an error result,
 * so they stay request errors (400 with `extensions.http.status`) and pass the later hooks
 * (suggestion masking in production, router/plugins/useHiddenSuggestions.ts) as before.
 */
export const useVariableErrorsAsResult: GatewayPlugin = {
  onExecute({ executeFn, setExecuteFn }) {
    setExecuteFn(returningRequestErrors(executeFn));
  },
  onSubscribe({ subscribeFn, setSubscribeFn }) {
    setSubscribeFn(returningRequestErrors(subscribeFn));
  },
};

/**
 * Wraps an execute or subscribe function: thrown request errors become an error result. A
 * result that is not a promise is handed on as it is (no async frame and await per request);
 * any other error still leaves as a rejected promise, as from an async function.
 */
function returningRequestErrors<Args, Result>(run: (args: Args) => Result | Promise<Result>) {
  return (args: Args): Result | Promise<Result | { errors: GraphQLError[] }> => {
    let result: Result | Promise<Result>;
    try {
      result = run(args);
    } catch (error) {
      return Promise.resolve().then(() => asErrorResult(error));
    }
    // (A thenable that is not a native promise, such as a fake promise, is settled as `await` would.)
    if (result instanceof Promise) return result.then(undefined, asErrorResult);
    return typeof (result as { then?: unknown } | null)?.then === "function" ? Promise.resolve(result).then(undefined, asErrorResult) : result;
  };
}

/** A thrown request error as an error result; any other error thrown on. */
function asErrorResult(error: unknown): { errors: GraphQLError[] } {
  const errors = requestErrorsOf(error);
  if (!errors) throw error;
  return { errors };
}
