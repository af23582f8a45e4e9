/**
 * The page-size and cost limits (router/limits.ts `operationLimitErrors`), checked just before the
 * gateway plans the operation: queries, mutations and subscriptions alike, over every transport
 * (POST and GET `/graphql`, SSE, graphql-ws, the REST shims). Not a validation rule: the gateway
 * caches validation per document, and a variable's value is not part of the document.
 */
import type { DocumentNode, ExecutionResult, GraphQLSchema } from "graphql";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { operationLimitErrors } from "../limits.ts";

/** What the hook reads of an operation: the arguments of execute and subscribe alike. */
interface OperationArgs {
  schema: GraphQLSchema;
  document: DocumentNode;
  operationName?: string | null;
  variableValues?: Record<string, unknown> | null;
}

/** The hook: answers the limits' errors (400, registry codes) instead of running the operation. */
function refuseOverLimits({ args, setResultAndStopExecution }: { args: OperationArgs; setResultAndStopExecution(result: ExecutionResult): void }) {
  const errors = operationLimitErrors(args.schema, args.document, args.operationName, args.variableValues);
  if (errors.length) setResultAndStopExecution({ errors });
}

/** The gateway plugin: {@link operationLimitErrors} on execute and subscribe. */
export const useOperationLimits: GatewayPlugin = { onExecute: refuseOverLimits, onSubscribe: refuseOverLimits };
