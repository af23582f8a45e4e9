/**
 * The shapes of tracing (src/observability/tracing.ts), apart from its loader so that the
 * OpenTelemetry module (./otel.ts), loaded on demand, can use them without importing the loader.
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
