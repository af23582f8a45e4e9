/**
 * An SSE answer (`Accept: text/event-stream`, graphql-sse's distinct connections mode) is always
 * `200 OK`: its errors travel in the stream as a `next` event (with `extensions.code` and
 * `extensions.http.status`) before `complete`, as graphql-sse's own server answers a refused
 * operation to an event-stream client. GraphQL Yoga (under the gateway) gives such a stream the
 * status of its errors (400 for the cost limit, 401 for a bad key), and the graphql-sse client
 * then throws a network error instead of handing the GraphQL errors to the caller.
 * README "Transports"; docs/adr/0021-transports.md.
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

/** The gateway plugin: an event-stream response of another status is answered 200, body and headers unchanged. */
export const useEventStreamStatus: GatewayPlugin = {
  onResponse({ response, setResponse, fetchAPI }) {
    if (response.status === 200 || !(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) return;
    setResponse(new fetchAPI.Response(response.body, { status: 200, headers: response.headers }));
  },
};
