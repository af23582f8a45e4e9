/**
 * The OpenTelemetry side of ./tracing.ts, loaded only when tracing is on. One tracer provider per
 * stack (its own `service.name` and exporter); the context manager (AsyncLocalStorage) is
 * process-wide, installed once. Propagation is W3C Trace Context, used directly rather than
 * through the global API so several stacks in one process stay independent.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, defaultTextMapGetter, defaultTextMapSetter, trace, type Span } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from "@opentelemetry/sdk-trace";
import type { ApolloServerPlugin, BaseContext } from "@apollo/server";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { getOperationAST, type DocumentNode } from "graphql";
import type { Tracing, TracingOptions } from "./tracing-types.ts";

let contextManagerInstalled = false;

/** Makes `context.with` follow async calls (once per process; later calls are no-ops). */
function installContextManager(): void {
  if (contextManagerInstalled) return;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  contextManagerInstalled = true;
}

/** `{endpoint}/v1/traces`, as the OTLP spec derives the traces URL from OTEL_EXPORTER_OTLP_ENDPOINT. */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, "")}/v1/traces`;
}

function recordError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** Runs `run` with `span` active and ends the span when `run` (or the promise it returns) settles. */
function within<T>(span: Span, run: () => T): T {
  let result: T;
  try {
    result = context.with(trace.setSpan(context.active(), span), run);
  } catch (error) {
    recordError(span, error);
    span.end();
    throw error;
  }
  if (result && typeof (result as { then?: unknown }).then === "function") {
    return (result as unknown as Promise<unknown>).then(
      (value) => {
        span.end();
        return value;
      },
      (error) => {
        recordError(span, error);
        span.end();
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}

/** Names an operation span after the operation (`graphql.operation NAME`). */
function describeOperation(span: Span | undefined, document: DocumentNode, operationName: string | null | undefined): void {
  if (!span) return;
  const operation = getOperationAST(document, operationName);
  if (!operation) return;
  const name = operation.name?.value;
  span.updateName(`graphql.operation ${name ?? operation.operation}`);
  span.setAttribute("graphql.operation.type", operation.operation);
  if (name) span.setAttribute("graphql.operation.name", name);
}

/**
 * Creates the tracer provider and the hooks of one stack.
 * @param options endpoint (required here), service name, batch delay, sampling ratio
 * @returns the tracing hooks ({@link Tracing})
 */
export function createOtelTracing(options: TracingOptions & { endpoint: string }): Tracing {
  installContextManager();
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ "service.name": options.serviceName })),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(options.sampleRatio) }),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: tracesUrl(options.endpoint) }), scheduledDelayMillis: options.scheduleDelayMs }),
    ],
  });
  const tracer = provider.getTracer("switchyard");
  const propagator = new W3CTraceContextPropagator();

  // The operation span of each GraphQL context, named once the operation is known (onExecute).
  const operationSpans = new WeakMap<object, Span>();
  const gatewayPlugin: GatewayPlugin = {
    instrumentation: {
      operation: ({ context: graphqlContext }, wrapped) => {
        const span = tracer.startSpan("graphql.operation");
        operationSpans.set(graphqlContext, span);
        return within(span, wrapped);
      },
      execute: (_payload, wrapped) => within(tracer.startSpan("graphql.execute"), wrapped),
      // graphql-ws runs subscriptions without Yoga's operation phase: there the subscribe span is
      // the operation's. It ends once the stream is set up, not when the stream ends.
      subscribe: ({ context: graphqlContext }, wrapped) => {
        if (operationSpans.has(graphqlContext)) return within(tracer.startSpan("graphql.subscribe"), wrapped);
        const span = tracer.startSpan("graphql.operation");
        operationSpans.set(graphqlContext, span);
        return within(span, wrapped);
      },
      subgraphExecute: ({ subgraphName }, wrapped) =>
        within(tracer.startSpan(`subgraph.execute ${subgraphName}`, { attributes: { "graphql.subgraph.name": subgraphName } }), wrapped),
      fetch: (_payload, wrapped) => within(tracer.startSpan("http.fetch", { kind: SpanKind.CLIENT }), wrapped),
    },
    onExecute: ({ args }) => describeOperation(operationSpans.get(args.contextValue), args.document, args.operationName),
    onSubscribe: ({ args }) => describeOperation(operationSpans.get(args.contextValue), args.document, args.operationName),
    // Inside the fetch span: the subgraph continues the trace from the injected `traceparent`.
    onFetch({ url, options: init, setOptions }) {
      const span = trace.getActiveSpan();
      const headers: Record<string, string> = {};
      const given = init.headers as Record<string, string> | Headers | undefined;
      if (given instanceof Headers) for (const [name, value] of given) headers[name] = value;
      else Object.assign(headers, given);
      propagator.inject(context.active(), headers, defaultTextMapSetter);
      setOptions({ ...init, headers });
      span?.setAttribute("url.full", url);
      span?.setAttribute("http.request.method", init.method ?? "GET");
      return ({ response }) => {
        span?.setAttribute("http.response.status_code", response.status);
        if (response.status >= 400) span?.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${response.status}` });
      };
    },
  };

  const apolloPlugin: ApolloServerPlugin<BaseContext> = {
    async requestDidStart() {
      const span = tracer.startSpan("graphql.operation");
      const parent = trace.setSpan(context.active(), span);
      return {
        async didResolveOperation({ operationName, operation }) {
          span.updateName(`graphql.operation ${operationName ?? operation?.operation ?? "unknown"}`);
          if (operation) span.setAttribute("graphql.operation.type", operation.operation);
          if (operationName) span.setAttribute("graphql.operation.name", operationName);
        },
        async executionDidStart() {
          return {
            // Root fields only (Query.*, Mutation.*, _entities): one span each, not one per leaf.
            willResolveField({ info }) {
              if (info.path.prev !== undefined) return;
              const field = tracer.startSpan(
                `graphql.resolve ${info.parentType.name}.${info.fieldName}`,
                { attributes: { "graphql.field.path": info.fieldName } },
                parent,
              );
              return (error) => {
                if (error) recordError(field, error);
                field.end();
              };
            },
          };
        },
        async didEncounterErrors({ errors }) {
          span.setAttribute("graphql.error.count", errors.length);
        },
        async willSendResponse() {
          span.end();
        },
      };
    },
  };

  return {
    traceHttp(req: IncomingMessage, res: ServerResponse, route: () => string, handle: () => Promise<void>): Promise<void> {
      const parent = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
      const method = req.method ?? "GET";
      const span = tracer.startSpan(
        method,
        {
          kind: SpanKind.SERVER,
          attributes: {
            "http.request.method": method,
            "url.path": (req.url ?? "/").split("?")[0],
            "client.address": req.socket.remoteAddress ?? "",
            "user_agent.original": req.headers["user-agent"] ?? "",
          },
        },
        parent,
      );
      res.once("close", () => {
        const pattern = route();
        span.updateName(`${method} ${pattern}`);
        span.setAttribute("http.route", pattern);
        span.setAttribute("http.response.status_code", res.statusCode);
        const requestId = res.getHeader("x-request-id") ?? req.headers["x-request-id"];
        if (typeof requestId === "string") span.setAttribute("switchyard.request_id", requestId);
        if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      });
      return context.with(trace.setSpan(parent, span), handle);
    },
    gatewayPlugin,
    apolloPlugin,
    shutdown: () => provider.shutdown(),
  };
}
