/**
 * OpenTelemetry tracing, off by default: with OTEL_EXPORTER_OTLP_ENDPOINT unset no OpenTelemetry
 * module is even loaded (the SDK lives in ./otel.ts, imported on demand), and the servers call
 * their handlers directly. Set, spans of the router (HTTP request, GraphQL operation, subgraph
 * execution and fetch) and of the subgraphs (HTTP request, operation, root-field resolvers) go
 * to `{endpoint}/v1/traces` as OTLP/HTTP JSON, with W3C `traceparent` carried from the router to
 * the subgraphs so one trace spans every process.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ApolloServerPlugin, BaseContext } from "@apollo/server";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

/** Settings of tracing (src/config.ts: OTEL_* variables). */
export interface TracingOptions {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: OTLP/HTTP base URL; unset: tracing off. */
  endpoint?: string;
  /** `service.name` of this process's spans. */
  serviceName: string;
  /** OTEL_BSP_SCHEDULE_DELAY: how long finished spans wait to be batched (ms). */
  scheduleDelayMs: number;
  /** OTEL_TRACES_SAMPLER_ARG: share of new traces recorded (0-1); a caller's sampled flag is honoured. */
  sampleRatio: number;
}

/** The hooks the servers call when tracing is on. */
export interface Tracing {
  /**
   * Runs `handle` inside a SERVER span for one HTTP request, continuing the caller's trace from
   * its `traceparent` header; the span ends when the response closes.
   * @param route the route pattern served (read when the response closes; names the span)
   */
  traceHttp(req: IncomingMessage, res: ServerResponse, route: () => string, handle: () => Promise<void>): Promise<void>;
  /** Gateway plugin of the router: operation, execution, subgraph and fetch spans; injects `traceparent`. */
  gatewayPlugin: GatewayPlugin;
  /** Apollo Server plugin of a subgraph: operation and root-field resolver spans. */
  apolloPlugin: ApolloServerPlugin<BaseContext>;
  /** Exports the spans still buffered and stops the exporter. */
  shutdown(): Promise<void>;
}

/**
 * Starts tracing for this stack when an endpoint is configured.
 * @returns the tracing hooks, or undefined (tracing off, nothing loaded) without an endpoint
 * @throws Error when the endpoint is not a URL
 */
export async function startTracing(options: TracingOptions): Promise<Tracing | undefined> {
  if (!options.endpoint) return undefined;
  const { createOtelTracing } = await import("./otel.ts");
  return createOtelTracing({ ...options, endpoint: options.endpoint });
}
