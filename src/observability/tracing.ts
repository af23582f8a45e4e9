/**
 * OpenTelemetry tracing, off by default: with OTEL_EXPORTER_OTLP_ENDPOINT unset no OpenTelemetry
 * module is even loaded (the SDK lives in ./otel.ts, imported on demand), and the servers call
 * their handlers directly. Set, spans of the router (HTTP request, GraphQL operation, subgraph
 * execution and fetch) and of the subgraphs (HTTP request, operation, root-field resolvers) go
 * to `{endpoint}/v1/traces` as OTLP/HTTP JSON, with W3C `traceparent` carried from the router to
 * the subgraphs so one trace spans every process.
 */
import type { Tracing, TracingOptions } from "./tracing-types.ts";

export type { Tracing, TracingOptions } from "./tracing-types.ts";

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
