/**
 * Observability of one stack (docs/architecture.md §2 `/metrics`; README "Observability"): its metrics registry,
 * the `/metrics` handler the subgraph ports serve, and tracing when OTEL_EXPORTER_OTLP_ENDPOINT
 * is set.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Registry } from "prom-client";
import type { Config } from "../config.ts";
import { createRegistry, serveMetrics } from "./metrics.ts";
import { startTracing, type Tracing } from "./tracing.ts";

/** What a stack's servers share for observability. */
export interface Observability {
  registry: Registry;
  /** Tracing hooks; undefined when tracing is off. */
  tracing?: Tracing;
  /** Answers `GET /metrics` from this registry (METRICS_TOKEN or loopback clients only). */
  metrics(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Exports the spans still buffered (nothing to do when tracing is off). */
  close(): Promise<void>;
}

/**
 * Sets up the observability of a stack.
 * @param config METRICS_TOKEN and the OTEL_* settings
 * @param roles the roles of this process: `service.name` defaults to `switchyard-<roles joined by +>`
 * @returns the registry, the `/metrics` handler and the tracing hooks
 */
export async function startObservability(config: Config, roles: readonly string[]): Promise<Observability> {
  const registry = createRegistry();
  const tracing = await startTracing({
    endpoint: config.otlpEndpoint,
    serviceName: config.otelServiceName ?? `switchyard-${roles.join("+")}`,
    scheduleDelayMs: config.otelScheduleDelayMs,
    sampleRatio: config.otelSampleRatio,
  });
  return {
    registry,
    tracing,
    metrics: (req, res) => serveMetrics(req, res, registry, { token: config.metricsToken }),
    close: async () => tracing?.shutdown(),
  };
}
