/**
 * Field suggestions off in production (router/limits.ts, the table's `field suggestions` row):
 * GraphQL Armor's block-field-suggestions masks "Did you mean "x"?" in validation errors (it sits
 * in the pipeline with {@link SUGGESTION_MASK}); this plugin covers what its pattern misses — enum
 * values ("Did you mean the enum value ...?") in literals and in variables, whose coercion errors
 * come from execution, not validation.
 */
import type { ExecutionResult } from "graphql";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

/** The text that replaces a suggestion (Armor's own mask; give it to Armor's plugin too). */
export const SUGGESTION_MASK = "[Suggestion hidden]";

/** Masks every "Did you mean ...?" in the messages of a list of errors (mutating, as Armor does). */
function maskSuggestions<T>(errors: readonly T[]): T[] {
  return errors.map((error) => {
    const e = error as unknown as { message?: unknown } | null;
    if (e && typeof e.message === "string" && e.message.includes("Did you mean")) {
      e.message = e.message.replace(/Did you mean [^?]*\?/g, SUGGESTION_MASK).trim();
    }
    return error;
  });
}

/** An execution result with its errors' suggestions masked (streams are left alone). */
function withoutSuggestions<T extends ExecutionResult | AsyncIterable<ExecutionResult>>(result: T): T {
  if (!result || typeof result !== "object" || Symbol.asyncIterator in result || !result.errors?.length) return result;
  return { ...result, errors: maskSuggestions(result.errors) };
}

/** The gateway plugin: masks suggestions in validation, execution and subscription errors. */
export const useHiddenSuggestions: GatewayPlugin = {
  onValidate:
    () =>
    ({ valid, result, setResult }) => {
      if (!valid) setResult(maskSuggestions(result));
    },
  onExecute: () => ({
    onExecuteDone: ({ result, setResult }) => setResult(withoutSuggestions(result)),
  }),
  onSubscribe: () => ({
    onSubscribeResult: ({ result, setResult }) => setResult(withoutSuggestions(result)),
  }),
};
