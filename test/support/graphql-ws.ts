/**
 * graphql-ws and SSE subscribers for tests: collect every event of one subscription until it
 * completes or errors.
 */
import { createClient, type Client } from "graphql-ws";
import { expect } from "vitest";
import WebSocket from "ws";
import type { TestStack } from "./stack.ts";

/** The outcome of one subscription. */
export interface Collected {
  events: any[];
  error?: any;
}

/** A graphql-ws client on the router with the given connection params. */
export function wsClient(routerUrl: string, connectionParams: Record<string, string>): Client {
  return createClient({ url: `${routerUrl.replace(/^http/, "ws")}/graphql`, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: true });
}

/**
 * Subscribes and resolves when the subscription completes or errors.
 * @param onEvent called with each event (for example to cause the next change)
 */
export function collect(
  client: Client,
  query: string,
  variables: Record<string, unknown> = {},
  onEvent?: (event: any, all: any[]) => void,
): { done: Promise<Collected>; stop: () => void } {
  const events: any[] = [];
  let stop = () => {};
  const done = new Promise<Collected>((resolve) => {
    stop = client.subscribe(
      { query, variables },
      {
        next: (value) => {
          events.push(value);
          onEvent?.(value, events);
        },
        error: (error) => resolve({ events, error }),
        complete: () => resolve({ events }),
      },
    );
  });
  return { done, stop: () => stop() };
}

/**
 * Runs a subscription over SSE (`Accept: text/event-stream`) and collects its events until the
 * stream ends.
 */
export async function collectSse(
  routerUrl: string,
  query: string,
  variables: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<{ status: number; events: any[] }> {
  const response = await fetch(`${routerUrl}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const events: any[] = [];
  if (!response.body) return { status: response.status, events };
  for await (const event of sseEvents(response.body)) events.push(event);
  return { status: response.status, events };
}

/**
 * The `next` payloads of a graphql-sse stream (distinct connections mode), parsed, until its
 * `complete` event or its end.
 */
export async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<any> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body as any as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let index = buffer.indexOf("\n\n"); index >= 0; index = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, index);
      buffer = buffer.slice(index + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event === "next" && data) yield JSON.parse(data);
      if (event === "complete") return;
    }
  }
}

/**
 * Calls `submit` (attempt 0, 1, …) until `event` settles: a subscription that was still being set
 * up when one task changed sees the next. At most 10 attempts, each given a second.
 * @returns what `event` settled with
 * @throws Error after 10 attempts without the event
 */
export async function untilEvent<T>(submit: (attempt: number) => Promise<unknown>, event: Promise<T>): Promise<T> {
  const pending = Symbol("pending");
  for (let i = 0; i < 10; i++) {
    await submit(i);
    const settled = await Promise.race([event, new Promise<typeof pending>((resolve) => setTimeout(() => resolve(pending), 1_000))]);
    if (settled !== pending) return settled as T;
  }
  throw new Error("no event after 10 submissions");
}

/** Submits image tasks (each causes several task events) through `t` until `event` settles ({@link untilEvent}). */
export async function submitUntil<T>(t: TestStack, key: string, event: Promise<T>): Promise<T> {
  return untilEvent(async (i) => {
    const submitted = await t.rest("POST", "/api/v1/images/generations", { key, body: { prompt: `persisted ${i}`, model_id: 45, count: 1 } });
    expect(submitted.status).toBe(200);
  }, event);
}
