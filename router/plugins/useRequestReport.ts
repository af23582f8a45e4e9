/**
 * Fills the report of each client request (router/request-report.ts) as the gateway runs it: the
 * operation's name, and the subgraphs' caller reports (key id, rate-limit quota, `Retry-After`),
 * which it strips from their results (they are the subgraphs' note to the router, never passed
 * on). The request is found by its count id (`x-switchyard-count-id`), which the router's edge
 * mints for every client request.
 */
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { operationOf } from "../operation.ts";
import type { RequestReports } from "../request-report.ts";

/** The count id of a gateway request (none for an operation without an HTTP request). */
const countIdOfRequest = (request: Request | undefined) => request?.headers?.get("x-switchyard-count-id") ?? undefined;

/** The count id of an operation, from its gateway context. */
const countIdOf = (context: unknown) => countIdOfRequest((context as { request?: Request } | undefined)?.request);

/**
 * The gateway plugin.
 * @param reports the router's open reports
 */
export function useRequestReport(reports: RequestReports): GatewayPlugin {
  const noteOperation = ({ args }: { args: { contextValue: unknown; document: Parameters<typeof operationOf>[0]; operationName?: string | null } }) => {
    const name = operationOf(args.document, args.operationName)?.name?.value;
    if (name) reports.noteOperation(countIdOf(args.contextValue), name);
  };
  return {
    // A `/graphql` answer refused by the rate limit keeps `Retry-After`, as the REST shims' do.
    onResponse({ request, response }) {
      if (response.status !== 429) return;
      const retryAfter = reports.retryAfterSeconds(countIdOfRequest(request));
      if (retryAfter && !response.headers.has("retry-after")) response.headers.set("retry-after", String(retryAfter));
    },
    onExecute: noteOperation,
    onSubscribe: noteOperation,
    onSubgraphExecute({ executionRequest }) {
      return ({ result, setResult }) => {
        const countId = countIdOf(executionRequest.context);
        const taken = reports.takeCallerReport(countId, result as { extensions?: Record<string, unknown> });
        if (taken !== result) setResult(taken as typeof result);
      };
    },
  };
}
