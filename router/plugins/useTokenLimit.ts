/**
 * The token limit (router/limits.ts, the table's `tokens` row): GraphQL Armor's max-tokens wraps
 * the parser and throws at the first token past {@link LIMITS.tokens}, before a huge document is
 * parsed whole; the error carries the registry code `too_many_tokens` (400).
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { maxTokensPlugin } from "@escape.tech/graphql-armor-max-tokens";
import { LIMITS, LIMIT_CODES, armorRejection } from "../limits.ts";

/** The gateway plugin: Armor's token-counting parser with our limit and code (one per gateway). */
export function useTokenLimit(): GatewayPlugin {
  return maxTokensPlugin({ n: LIMITS.tokens, ...armorRejection(LIMIT_CODES.tokens) }) as GatewayPlugin;
}
