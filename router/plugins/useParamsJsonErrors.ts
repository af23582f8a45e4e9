/**
 * GraphQL over HTTP: `variables` or `extensions` that are not JSON, in a GET query string or a
 * form-encoded body, are the client's error. Yoga's parsers let JSON.parse's SyntaxError through
 * as a 500; this wraps whichever parser Yoga chose (user plugins run after its parsers) and
 * answers 400 `invalid_request`, as Yoga does (`BAD_REQUEST`, translated by
 * router/plugins/useRegistryCodes.ts) for such a parameter that is JSON but not an object.
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { limitError } from "../limits.ts";

/** The gateway plugin: a JSON syntax error in the parameters becomes 400 `invalid_request`. */
export const useParamsJsonErrors: GatewayPlugin = {
  onRequestParse({ requestParser, setRequestParser }) {
    if (!requestParser) return;
    setRequestParser(async (request) => {
      try {
        return await requestParser(request);
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        throw limitError(`variables and extensions must be valid JSON: ${error.message}`, "invalid_request");
      }
    });
  },
};
