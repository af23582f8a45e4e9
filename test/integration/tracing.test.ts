/**
 * OpenTelemetry tracing across processes (README "Observability"): the subgraphs run in this
 * process, the router in a child process (`switchyard start router`), both exporting OTLP/HTTP
 * JSON to a real receiver on loopback. One trace must span both: the router's HTTP span, its
 * GraphQL operation and subgraph fetch spans, and under the fetch the subgraph's HTTP, operation
 * and resolver spans, linked only by the W3C `traceparent` header the router sends.
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { createKey } from "../../src/auth/keys.ts";
import { parseYuan } from "../../src/money.ts";
import { startStack, type Stack } from "../../bin/stack.ts";
import { createTestDatabase, type TestDatabase } from "../support/db.ts";
import { startCli, type RunningProcess } from "../support/process.ts";
import { waitForState } from "../support/events.ts";
import { collect, wsClient } from "../support/graphql-ws.ts";

const SERVER = 2;
const CLIENT = 3;

/** One received span, flattened with its process's `service.name`. */
interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

/** A real OTLP/HTTP receiver: accepts JSON `POST /v1/traces` and keeps every span. */
async function startReceiver() {
  const spans: ReceivedSpan[] = [];
  const events = new EventEmitter();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== "POST" || req.url !== "/v1/traces" || !String(req.headers["content-type"]).startsWith("application/json")) {
      res.writeHead(415).end();
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    for (const resourceSpans of body.resourceSpans ?? []) {
      const service = resourceSpans.resource?.attributes?.find((a: any) => a.key === "service.name")?.value?.stringValue ?? "";
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          const attributes: Record<string, unknown> = {};
          for (const a of span.attributes ?? []) attributes[a.key] = a.value?.stringValue ?? a.value?.intValue ?? a.value?.boolValue;
          spans.push({
            service,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? "",
            name: span.name,
            kind: span.kind,
            attributes,
          });
        }
      }
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
    events.emit("exported");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    events,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("tracing across the router and subgraph processes", () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let database: TestDatabase;
  let subgraphs: Stack;
  let router: RunningProcess;
  let routerUrl: string;
  let key: string;

  beforeAll(async () => {
    receiver = await startReceiver();
    database = await createTestDatabase();
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "50", SUBGRAPH_SECRET: randomBytes(32).toString("hex") };
    subgraphs = await startStack(
      loadConfig({
        ...database.env,
        ...otel,
        GENERATION_PORT: "0",
        CLOUD_PORT: "0",
        LOG_LEVEL: "silent",
        SIMULATOR_STEP_MS: "50",
        TASK_POLL_INTERVAL_MS: "50",
      }),
      ["generation", "cloud"],
    );
    key = (await createKey(subgraphs.db!, { name: "tracing", balance: parseYuan("100") })).key;
    router = startCli(["start", "router"], {
      ...otel,
      OTEL_SERVICE_NAME: "switchyard-router",
      PORT: "0",
      GENERATION_URL: subgraphs.generationUrl!,
      CLOUD_URL: subgraphs.cloudUrl!,
    });
    [, routerUrl] = (await router.waitFor(/Switchyard router:\s+(http:\/\/\S+)/, 60_000)) as unknown as [string, string];
  }, 90_000);
  afterAll(async () => {
    await router?.stop();
    await subgraphs?.close();
    await database?.drop();
    await receiver?.close();
  });

  /** Spans of one trace, once both processes have exported what `done` needs. */
  const traceOf = (traceId: string, done: (spans: ReceivedSpan[]) => boolean) =>
    waitForState(receiver.events, "exported", async () => receiver.spans.filter((s) => s.traceId === traceId), done, 15_000);

  it("puts the router's spans and the subgraphs' spans of one GraphQL request in one trace, continuing the caller's", async () => {
    const traceId = randomBytes(16).toString("hex");
    const callerSpanId = randomBytes(8).toString("hex");
    const response = await fetch(`${routerUrl}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}`, traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: JSON.stringify({ query: "query TraceProbe { viewer { id balance { amount } orders(first: 1) { nodes { id } } } }" }),
    });
    expect(response.status).toBe(200);
    expect((await response.json()).errors).toBeUndefined();

    const subgraphService = "switchyard-generation+cloud";
    const spans = await traceOf(
      traceId,
      (all) =>
        all.some((s) => s.service === "switchyard-router" && s.kind === SERVER) &&
        all.filter((s) => s.service === subgraphService && s.kind === SERVER).length >= 2,
    );
    const routerSpans = spans.filter((s) => s.service === "switchyard-router");
    const subgraphSpans = spans.filter((s) => s.service === subgraphService);

    const routerHttp = routerSpans.find((s) => s.kind === SERVER)!;
    expect(routerHttp.name).toBe("POST /graphql");
    expect(routerHttp.parentSpanId).toBe(callerSpanId);
    expect(routerSpans.map((s) => s.name)).toEqual(
      expect.arrayContaining(["graphql.operation TraceProbe", "graphql.execute", "subgraph.execute generation", "subgraph.execute cloud"]),
    );
    const operation = routerSpans.find((s) => s.name === "graphql.operation TraceProbe")!;
    expect(operation.parentSpanId).toBe(routerHttp.spanId);
    expect(operation.attributes["graphql.operation.type"]).toBe("query");

    // Each subgraph HTTP span is the child of one of the router's fetch spans: the traceparent crossed the wire.
    const fetchIds = new Set(routerSpans.filter((s) => s.kind === CLIENT).map((s) => s.spanId));
    const subgraphHttp = subgraphSpans.filter((s) => s.kind === SERVER);
    for (const span of subgraphHttp) {
      expect(span.name).toBe("POST /graphql");
      expect(fetchIds.has(span.parentSpanId)).toBe(true);
    }
    // Under them, the subgraphs' operations and root-field resolvers.
    const subgraphNames = subgraphSpans.map((s) => s.name);
    expect(subgraphNames.some((n) => n.startsWith("graphql.operation"))).toBe(true);
    expect(subgraphNames).toEqual(expect.arrayContaining(["graphql.resolve Query.viewer"]));
    expect(subgraphNames.some((n) => n === "graphql.resolve Query._entities")).toBe(true);
  });

  it("traces a REST call through the in-process shim down to the generation subgraph", async () => {
    const response = await fetch(`${routerUrl}/api/v1/video/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ prompt: "a traced fox", model_id: 69, seconds: 5 }),
    });
    expect(response.status).toBe(200);
    const routerHttp = await waitForState(
      receiver.events,
      "exported",
      async () => receiver.spans.find((s) => s.service === "switchyard-router" && s.name === "POST /api/v1/video/generations"),
      (span) => span !== undefined,
      15_000,
    );
    const spans = await traceOf(routerHttp!.traceId, (all) => all.some((s) => s.name === "graphql.resolve Mutation.submitVideoGeneration"));
    expect(routerHttp!.parentSpanId).toBe("");
    expect(routerHttp!.attributes["http.route"]).toBe("/api/v1/video/generations");
    expect(spans.some((s) => s.service === "switchyard-router" && s.name.startsWith("graphql.operation"))).toBe(true);
    expect(spans.some((s) => s.service === "switchyard-generation+cloud" && s.kind === SERVER)).toBe(true);
  });

  it("still delivers a subscription over graphql-ws end to end with tracing on", async () => {
    const submitted = await fetch(`${routerUrl}/api/v1/images/generations`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ prompt: "a traced lighthouse", model_id: 45, count: 1 }),
    });
    expect(submitted.status).toBe(200);
    const taskId = (await submitted.json()).data.task_id;
    const client = wsClient(routerUrl, { Authorization: `Bearer ${key}` });
    try {
      const { events, error } = await collect(client, "subscription TraceWatch($id: ID!) { taskStatusChanged(taskId: $id) { status } }", { id: taskId }).done;
      expect(error).toBeUndefined();
      expect(events.at(-1)?.data?.taskStatusChanged?.status).toBe("SUCCEEDED");
    } finally {
      await client.dispose();
    }
    await waitForState(
      receiver.events,
      "exported",
      async () => receiver.spans.filter((s) => s.service === "switchyard-router" && s.name === "graphql.operation TraceWatch"),
      (found) => found.length === 1,
      15_000,
    );
  });
});
