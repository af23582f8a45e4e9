/**
 * The router's key check for long-lived operations (subscriptions): asks the graph who the key
 * is (`apiKey`, no scope needed), so the refusal happens before anything is forwarded.
 */
import { randomUUID } from "node:crypto";
import { GraphQLError } from "graphql";
import type { Gateway } from "./gateway.ts";
import { runOperation } from "./rest/graph-client.ts";

/**
 * Checks an Authorization value (with or without `Bearer `).
 * @returns null when the key is valid, else the GraphQL error the subgraph gave (401/403/429)
 */
export async function checkKey(gateway: Gateway, authorization: string | undefined | null): Promise<GraphQLError | null> {
  if (!authorization) return new GraphQLError("Invalid or missing API key", { extensions: { code: "unauthorized", http: { status: 401 } } });
  const result = await runOperation(gateway, "query KeyCheck { apiKey { id } }", {}, { authorization, requestId: randomUUID(), route: "POST /graphql" });
  const error = result.errors?.[0];
  return error ? new GraphQLError(error.message, { extensions: error.extensions }) : null;
}

/**
 * An envelop plugin refusing subscriptions over HTTP (SSE) whose key is bad: the answer is one
 * error result instead of a stream that never starts.
 */
export function subscriptionKeyCheck(gateway: () => Gateway) {
  return {
    async onSubscribe({ args, setResultAndStopExecution }: { args: { contextValue: any }; setResultAndStopExecution(result: unknown): void }) {
      const context = args.contextValue ?? {};
      // graphql-ws connections were checked when they connected.
      if (context.connectionParams) return;
      const headers = context.headers ?? {};
      const authorization = typeof headers.get === "function" ? headers.get("authorization") : headers.authorization;
      const error = await checkKey(gateway(), authorization);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
  };
}
