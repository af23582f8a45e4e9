/**
 * An urql client for a Switchyard router: queries and mutations over HTTP (`/graphql`),
 * subscriptions over graphql-ws on the same path. The API key goes in the `Authorization` header
 * and in the graphql-ws connection params.
 */
import { Client, cacheExchange, fetchExchange, subscriptionExchange } from "@urql/core";
import { createClient as createWsClient } from "graphql-ws";

/** A dashboard client and a way to close its WebSocket. */
export interface DashboardClient {
  urql: Client;
  close(): Promise<void>;
}

/**
 * @param url the router's base URL, `http://127.0.0.1:4000`
 * @param key an API key, `sy_…`
 */
export function createDashboardClient(url: string, key: string): DashboardClient {
  const ws = createWsClient({
    url: `${url.replace(/^http/, "ws")}/graphql`,
    connectionParams: { Authorization: `Bearer ${key}` },
    // Node 22 and later have a global WebSocket; browsers too.
  });
  const urql = new Client({
    url: `${url}/graphql`,
    fetchOptions: { headers: { authorization: `Bearer ${key}` } },
    // Always ask the server: a dashboard shows what is true now.
    requestPolicy: "network-only",
    exchanges: [
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? "" }, sink) }),
        }),
      }),
    ],
  });
  return { urql, close: async () => await ws.dispose() };
}
