/**
 * The router's metrics (docs/architecture.md §2 `/metrics`): HTTP requests by route pattern, GraphQL operations
 * by name, type and outcome, and open subscriptions (graphql-ws and SSE alike: counted in the
 * gateway, which runs both). Labels are bounded: routes are patterns (never raw paths), operation
 * names are capped (src/observability/metrics.ts `LabelCap`).
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { DocumentNode } from "graphql";
import { operationOf } from "./operation.ts";
import { SUBGRAPHS } from "./subgraphs.ts";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { DURATION_BUCKETS, LabelCap, METRIC_PREFIX } from "../src/observability/metrics.ts";
import { SHARED_UPSTREAM, type SharedObserver } from "./subscription-fanout.ts";

/** Methods reported as themselves; anything else is `other`. */
const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]);

/** The router's own metrics in a registry. */
export interface RouterMetrics {
  registry: Registry;
  /**
   * Records one finished HTTP request.
   * @param route the route pattern (`/api/v1/tasks/:task_id`, `/graphql`) or `other`
   * @param seconds time from the request's arrival to the response's end
   */
  observeHttp(route: string, method: string | undefined, status: number, seconds: number): void;
  /** Gateway plugin counting operations and open subscriptions. */
  gatewayPlugin: GatewayPlugin;
  /**
   * Counts the clients of a shared graphql-ws subscription (router/subscription-fanout.ts): each
   * is an open subscription, and each one that joined a running stream an operation (the one
   * that started it went through the gateway, which counted it).
   */
  observeShared: SharedObserver;
  /** Counts a `/graphql` operation run on its in-process subgraph without the plan's executor (router/graph/direct-graphql.ts). */
  observeDirect(subgraph: string): void;
  /** Counts an operation run without the gateway (router/graph/direct.ts), as its plugin would. */
  observeOperation(labels: { operation_name: string; operation_type: string }, outcome: "ok" | "error", seconds: number): void;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return value != null && typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function";
}

/**
 * Registers the router's metrics:
 * - `switchyard_http_requests_total{route,method,status}`, `switchyard_http_request_duration_seconds{route,method}`;
 * - `switchyard_graphql_operations_total{operation_name,operation_type,outcome}` (outcome `ok`,
 *   `error` when the result carries errors, `invalid` when parsing or validation refused it) and
 *   `switchyard_graphql_operation_duration_seconds{operation_name,operation_type}` (execution, from
 *   the plan to the last subgraph answer; for a subscription, until its first result);
 * - `switchyard_subscriptions_open`;
 * - `switchyard_graphql_direct_operations_total{subgraph}`: `/graphql` operations run on their
 *   in-process subgraph without the plan's executor (also counted in the operations above).
 * @param registry the stack's registry
 * @param maxOperationNames distinct operation names kept before `other` (default 100)
 */
export function createRouterMetrics(registry: Registry, maxOperationNames = 100): RouterMetrics {
  const requests = new Counter({
    name: `${METRIC_PREFIX}http_requests_total`,
    help: "HTTP requests answered by the router, by route pattern, method and status",
    labelNames: ["route", "method", "status"] as const,
    registers: [registry],
  });
  const requestDuration = new Histogram({
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    help: "Time from an HTTP request's arrival to the end of its response, by route pattern and method",
    labelNames: ["route", "method"] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const operations = new Counter({
    name: `${METRIC_PREFIX}graphql_operations_total`,
    help: "GraphQL operations run by the gateway, by operation name (capped), type and outcome",
    labelNames: ["operation_name", "operation_type", "outcome"] as const,
    registers: [registry],
  });
  const operationDuration = new Histogram({
    name: `${METRIC_PREFIX}graphql_operation_duration_seconds`,
    help: "Execution time of GraphQL operations in the gateway, by operation name (capped) and type",
    labelNames: ["operation_name", "operation_type"] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const subscriptions = new Gauge({
    name: `${METRIC_PREFIX}subscriptions_open`,
    help: "GraphQL subscriptions open on the router (graphql-ws and SSE)",
    registers: [registry],
  });
  const direct = new Counter({
    name: `${METRIC_PREFIX}graphql_direct_operations_total`,
    help: "GraphQL operations the gateway ran on their in-process subgraph without the query plan's executor, by subgraph",
    labelNames: ["subgraph"] as const,
    registers: [registry],
  });
  // Every subgraph starts at 0, so the family has samples (and `rate()` a start) on a router
  // whose subgraphs are all reached over HTTP, where it stays 0.
  for (const subgraph of SUBGRAPHS) direct.inc({ subgraph: subgraph.name }, 0);
  const names = new LabelCap(maxOperationNames);

  type Labels = { operation_name: string; operation_type: string };
  const describeNow = (document: DocumentNode, operationName: string | null | undefined): Labels => {
    const operation = operationOf(document, operationName);
    return { operation_name: names.label(operation?.name?.value), operation_type: operation?.operation ?? "unknown" };
  };
  // The labels of an operation, with each outcome, built once per document (and operation name).
  type Described = { labels: Labels; ok: Labels & { outcome: string }; error: Labels & { outcome: string } };
  const described = new WeakMap<DocumentNode, Map<string, Described>>();
  const describe = (document: DocumentNode, operationName: string | null | undefined): Described => {
    let byName = described.get(document);
    if (!byName) {
      byName = new Map();
      described.set(document, byName);
    }
    let entry = byName.get(operationName ?? "");
    if (!entry) {
      if (byName.size >= 16) byName.clear();
      const labels = describeNow(document, operationName);
      entry = { labels, ok: { ...labels, outcome: "ok" }, error: { ...labels, outcome: "error" } };
      byName.set(operationName ?? "", entry);
    }
    return entry;
  };
  const outcomeOf = (result: unknown) => ((result as { errors?: unknown[] } | null)?.errors?.length ? "error" : "ok");

  const gatewayPlugin: GatewayPlugin = {
    onParse() {
      return ({ result }) => {
        if (result instanceof Error) operations.inc({ operation_name: "anonymous", operation_type: "unknown", outcome: "invalid" });
      };
    },
    onValidate({ params, context }) {
      return ({ valid }) => {
        if (!valid)
          operations.inc({
            ...describeNow(params.documentAST, (context as { params?: { operationName?: string } }).params?.operationName),
            outcome: "invalid",
          });
      };
    },
    onExecute({ args }) {
      const operation = describe(args.document, args.operationName);
      const started = process.hrtime.bigint();
      return {
        onExecuteDone({ result }) {
          operationDuration.observe(operation.labels, Number(process.hrtime.bigint() - started) / 1e9);
          operations.inc(isAsyncIterable(result) || outcomeOf(result) === "ok" ? operation.ok : operation.error);
        },
      };
    },
    onSubscribe({ args }) {
      const operation = describe(args.document, args.operationName);
      const labels = operation.labels;
      const shared = (args.contextValue as Record<string, unknown> | undefined)?.[SHARED_UPSTREAM] === true;
      const started = process.hrtime.bigint();
      return {
        onSubscribeResult({ result }) {
          operationDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
          if (!isAsyncIterable(result)) {
            operations.inc(outcomeOf(result) === "ok" ? operation.ok : operation.error);
            return;
          }
          operations.inc(operation.ok);
          if (shared) return; // its clients are counted by observeShared
          subscriptions.inc();
          // onEnd runs once the stream ends: completed, failed, or returned by a client that left.
          return { onEnd: () => subscriptions.dec() };
        },
        onSubscribeError() {
          operations.inc({ ...labels, outcome: "error" });
        },
      };
    },
  };

  return {
    registry,
    observeHttp(route, method, status, seconds) {
      const m = method && METHODS.has(method) ? method : "other";
      requests.inc({ route, method: m, status: String(status) });
      requestDuration.observe({ route, method: m }, seconds);
    },
    observeShared(operationName, joined) {
      if (joined) operations.inc({ operation_name: names.label(operationName || undefined), operation_type: "subscription", outcome: "ok" });
      subscriptions.inc();
      return () => subscriptions.dec();
    },
    observeDirect(subgraph) {
      direct.inc({ subgraph });
    },
    observeOperation(labels, outcome, seconds) {
      const capped = { operation_name: names.label(labels.operation_name), operation_type: labels.operation_type };
      operationDuration.observe(capped, seconds);
      operations.inc({ ...capped, outcome });
    },
    gatewayPlugin,
  };
}
