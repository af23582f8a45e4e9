/**
 * A document nested so deeply (lists in lists in an argument) that graphql-js's recursive parser
 * overflows the stack before the token limit stops it: a 400 `query_too_deep`, not a 500
 * (router/limits.ts, the table's `nesting the parser cannot recurse through` row).
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { LIMIT_CODES, limitError } from "../limits.ts";

/** The gateway plugin: wraps the parser in place (after Armor's token-counting one, router/plugins/useTokenLimit.ts). */
export const useDeepDocumentIs400: GatewayPlugin = {
  onParse({ parseFn, setParseFn }) {
    setParseFn((source, options) => {
      try {
        return parseFn(source, options);
      } catch (error) {
        if (error instanceof RangeError) throw limitError("Document is nested too deeply to parse", LIMIT_CODES.depth);
        throw error;
      }
    });
  },
};
