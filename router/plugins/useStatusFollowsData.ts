/**
 * The HTTP status of a `/graphql` answer (GraphQL over HTTP; docs/adr/0006-mutation-errors.md):
 * an answer whose `data` is not null is 200, whatever errors it carries (they keep their
 * `extensions.code` and `extensions.http.status` in the body); only an answer without data (a
 * request error, or a failed non-null root field) takes its status from its errors. A client that
 * trusts `response.ok` then never throws away what an operation did, for example the tasks one
 * alias of a mutation charged while another failed.
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

/** Requests whose single result carries non-null `data` (set before their response is built). */
const answeredWithData = new WeakSet<object>();

/** Whether a processed result is one execution result with non-null `data`. */
function hasData(result: unknown): boolean {
  if (!result || typeof result !== "object" || Array.isArray(result) || Symbol.asyncIterator in result) return false;
  const data = (result as { data?: unknown }).data;
  return data !== null && data !== undefined;
}

/**
 * The gateway (GraphQL Yoga) plugin applying the rule. Yoga sets the status from the highest
 * `extensions.http.status` of the errors, data or not; this notes which results carry data and
 * answers those with 200, body and headers unchanged.
 */
export const useStatusFollowsData: GatewayPlugin = {
  onResultProcess({ request, result }) {
    if (hasData(result)) answeredWithData.add(request);
  },
  onResponse({ request, response, setResponse, fetchAPI }) {
    if (response.status === 200 || !answeredWithData.has(request)) return;
    setResponse(new fetchAPI.Response(response.body, { status: 200, headers: response.headers }));
  },
};
