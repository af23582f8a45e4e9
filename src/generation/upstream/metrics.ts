/**
 * The generation upstream's metrics (docs/architecture.md §2 `/metrics`, §5): its failures, counted
 * around the adapter, so the adapters themselves know nothing of Prometheus.
 */
import { Counter, type Registry } from "prom-client";
import { METRIC_PREFIX } from "../../observability/metrics.ts";
import { UpstreamError, type GenerationUpstream } from "./types.ts";

/** Why a generation upstream call failed (label `kind` of `switchyard_upstream_errors_total`). */
function upstreamErrorKind(error: unknown): string {
  return error instanceof UpstreamError ? error.reason : "unexpected";
}

/**
 * Counts the failures of a generation upstream adapter in `switchyard_upstream_errors_total{kind,operation}`
 * (kind: transport, timeout, http, code, body, unexpected; operation: submit, status, lookup — the
 * recovery sweep asking whether a lost submission reached the provider).
 * @returns an upstream that behaves exactly like `upstream` (errors are rethrown unchanged)
 */
export function countUpstreamErrors(upstream: GenerationUpstream, registry: Registry): GenerationUpstream {
  const errors = new Counter({
    name: `${METRIC_PREFIX}upstream_errors_total`,
    help: "Failed calls to the generation upstream, by failure kind and operation",
    labelNames: ["kind", "operation"] as const,
    registers: [registry],
  });
  const counted =
    <A extends unknown[], R>(operation: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args);
      } catch (error) {
        errors.inc({ kind: upstreamErrorKind(error), operation });
        throw error;
      }
    };
  return {
    name: upstream.name,
    submit: counted("submit", upstream.submit.bind(upstream)),
    fetchStatus: counted("status", upstream.fetchStatus.bind(upstream)),
    ...(upstream.findSubmission ? { findSubmission: counted("lookup", upstream.findSubmission.bind(upstream)) } : {}),
    ...(upstream.probe ? { probe: upstream.probe.bind(upstream) } : {}),
    ...(upstream.admits ? { admits: upstream.admits.bind(upstream) } : {}),
  };
}
