/**
 * The depth, alias and directive limits (router/limits.ts, the table's first rows): GraphQL Armor's
 * validation rules, each reporting its registry code (`query_too_deep`, `too_many_aliases`,
 * `too_many_directives`, 400) through the validation context. The cost and page size are not
 * validation rules (they depend on the variables): router/plugins/useOperationLimits.ts.
 */
import type { ValidationRule } from "graphql";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDirectivesRule } from "@escape.tech/graphql-armor-max-directives";
import { LIMITS, LIMIT_CODES, armorRejection } from "../limits.ts";

/** The gateway plugin: adds Armor's rules, with our limits and codes, to every validation (cached per document by the gateway). */
export function useValidationLimits(): GatewayPlugin {
  const rules = [
    maxDepthRule({ n: LIMITS.depth, ...armorRejection(LIMIT_CODES.depth) }),
    maxAliasesRule({ n: LIMITS.aliases, ...armorRejection(LIMIT_CODES.aliases) }),
    maxDirectivesRule({ n: LIMITS.directives, ...armorRejection(LIMIT_CODES.directives) }),
  ] as ValidationRule[];
  return {
    onValidate: ({ addValidationRule }) => {
      for (const rule of rules) addValidationRule(rule);
    },
  };
}
