/**
 * Oversized bodies on every entry point that reads one: the REST creates, the router's
 * `/graphql` and each subgraph's `/graphql`. A declared Content-Length over BODY_LIMIT_BYTES gets
 * 413 before any body byte is sent; a chunked body that keeps streaming gets 413 once the limit
 * is passed, while the request is still open (the client never ends it); 413 comes exactly when
 * a body passes the limit; nothing is written.
 */
import net from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import {
  checkProperty,
  closeClients,
  describeRequest,
  expectDocumented,
  expectNoLeak,
  expectNoWrites,
  HANG_MS,
  PROPERTY_TIMEOUT_MS,
  send,
  snapshot,
  type Answer,
  type Surface,
} from "./support.ts";

vi.setConfig({ testTimeout: PROPERTY_TIMEOUT_MS });

const LIMIT = 16_384;
let t: TestStack;
let key: string;

beforeAll(async () => {
  t = await startTestStack({ BODY_LIMIT_BYTES: String(LIMIT) });
  key = (await t.createKey("0")).key;
});
afterAll(async () => {
  closeClients();
  await t?.close();
});

/** The routes that read a body: surface (null: GraphQL), documented template and a concrete path. */
const BODY_ROUTES: [Surface | null, string, string][] = [
  ["generation", "/api/v1/video/generations", "/api/v1/video/generations"],
  ["generation", "/api/v1/images/generations", "/api/v1/images/generations"],
  ["cloud", "/openapi/v1/orders", "/openapi/v1/orders"],
  ["cloud", "/openapi/v1/orders/{order_id}/renew", "/openapi/v1/orders/ord_x/renew"],
  ["cloud", "/openapi/v1/domains", "/openapi/v1/domains"],
  ["cloud", "/openapi/v1/domains/{domain}/purge", "/openapi/v1/domains/a.example.com/purge"],
  [null, "/graphql", "/graphql"],
];

/**
 * A request written on a raw socket that the test controls: its head now, body bytes later,
 * never ended unless asked. `answer` resolves with the first complete response.
 */
function openRequest(base: string, path: string, headers: Record<string, string>) {
  const url = new URL(base);
  const socket = net.connect(Number(url.port), url.hostname);
  let raw = Buffer.alloc(0);
  let closedByServer = false;
  let answeredWhileOpen = false;
  const answer = new Promise<Answer>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`hang: no answer to ${path} within ${HANG_MS} ms`)), HANG_MS);
    const tryParse = () => {
      const head = raw.indexOf("\r\n\r\n");
      if (head < 0) return;
      const lines = raw.subarray(0, head).toString("latin1").split("\r\n");
      const status = Number(lines[0]!.split(" ")[1]);
      const responseHeaders: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(":");
        responseHeaders[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      let body = raw.subarray(head + 4);
      if (responseHeaders["content-length"] !== undefined) {
        if (body.length < Number(responseHeaders["content-length"])) return;
        body = body.subarray(0, Number(responseHeaders["content-length"]));
      } else if (/chunked/i.test(responseHeaders["transfer-encoding"] ?? "")) {
        const chunks: Buffer[] = [];
        let rest = body;
        for (;;) {
          const eol = rest.indexOf("\r\n");
          if (eol < 0) return;
          const size = parseInt(rest.subarray(0, eol).toString(), 16);
          if (rest.length < eol + 2 + size + 2) return;
          if (size === 0) break;
          chunks.push(rest.subarray(eol + 2, eol + 2 + size));
          rest = rest.subarray(eol + 2 + size + 2);
        }
        body = Buffer.concat(chunks);
      } else if (!closedByServer) return;
      clearTimeout(timer);
      answeredWhileOpen = !closedByServer;
      const text = body.toString("utf8");
      let parsed: any;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      resolve({ status, headers: responseHeaders, text, body: parsed });
    };
    socket.on("data", (chunk: Buffer) => {
      raw = Buffer.concat([raw, chunk]);
      tryParse();
    });
    socket.on("close", () => {
      closedByServer = true;
      tryParse();
    });
    socket.on("error", () => {});
  });
  const closed = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), HANG_MS);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  const head = [`POST ${path} HTTP/1.1`, `Host: ${url.host}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), "", ""].join("\r\n");
  socket.write(head);
  return {
    answer,
    /** Writes one chunk of a chunked body (not the final, empty one). */
    writeChunk: (data: Buffer) => void socket.write(Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")])),
    /** Whether the answer arrived while the connection was up (the client never ends the request). */
    get answeredWhileOpen() {
      return answeredWhileOpen;
    },
    /**
     * Gives up on the request (the client half-closes) and resolves true once the server has
     * closed the connection, false when it still holds it after {@link HANG_MS}.
     */
    hangUp: () => {
      socket.end();
      return closed;
    },
    destroy: () => socket.destroy(),
  };
}

/** Asserts a 413 answer has the route's documented error body. */
function expect413(surface: Surface | null, template: string, answer: Answer, where: string): void {
  expect(answer.status, `${where} → ${answer.status} ${answer.text.slice(0, 300)}`).toBe(413);
  if (surface) expectDocumented(surface, "POST", template, answer, where, (s) => s === 413);
  else {
    expect(answer.body.errors[0]).toMatchObject({
      message: `Request body is too large: the limit is ${LIMIT} bytes`,
      extensions: { code: "payload_too_large", http: { status: 413 } },
    });
    expectNoLeak(answer.text, where);
  }
}

const headersFor = (extra: Record<string, string>) => ({ authorization: `Bearer ${key}`, "content-type": "application/json", ...extra });

describe("bodies over BODY_LIMIT_BYTES", () => {
  it.each(BODY_ROUTES)("%s %s: a declared Content-Length over the limit gets 413 before any body byte is sent", async (surface, template, path) => {
    const before = await snapshot(t.stack.db!);
    const request = openRequest(t.url, path, headersFor({ "content-length": String(LIMIT + 1) }));
    const answer = await request.answer;
    expect413(surface, template, answer, `declared ${LIMIT + 1} on ${path}`);
    request.destroy();
    await expectNoWrites(t.stack.db!, before, path);
  });

  it.each(BODY_ROUTES)(
    "%s %s: a chunked body that never ends gets 413 once past the limit, while the request is still open",
    async (surface, template, path) => {
      const before = await snapshot(t.stack.db!);
      const request = openRequest(t.url, path, headersFor({ "transfer-encoding": "chunked" }));
      request.writeChunk(Buffer.from('{"prompt":"'));
      const chunk = Buffer.alloc(4_096, "x");
      for (let sent = 0; sent <= LIMIT; sent += chunk.length) request.writeChunk(chunk);
      // No final chunk: the request stays open; the answer must not wait for its end.
      const answer = await request.answer;
      expect(request.answeredWhileOpen, "the answer came only after the connection was closed").toBe(true);
      expect413(surface, template, answer, `chunked past ${LIMIT} on ${path}`);
      // Regression: the REST shims stopped reading such a body, so they never saw the client leave
      // and held the connection forever (and graceful shutdown waited out its whole deadline).
      expect(await request.hangUp(), "the server held the connection after the client hung up").toBe(true);
      await expectNoWrites(t.stack.db!, before, path);
    },
  );

  it.each(["generation", "cloud"] as const)(
    "the %s subgraph answers 413 to a declared or streamed body over the limit (regression: it waited for a declared body)",
    async (name) => {
      const url = new URL(name === "generation" ? t.stack.generationUrl! : t.stack.cloudUrl!);
      const declared = openRequest(url.origin, url.pathname, headersFor({ "content-length": String(LIMIT + 1) }));
      const declaredAnswer = await declared.answer;
      expect(declared.answeredWhileOpen, `declared: ${JSON.stringify(declaredAnswer)}`).toBe(true);
      expect(declaredAnswer.status, declaredAnswer.text).toBe(413);
      expect(await declared.hangUp(), "the subgraph held the connection after the client hung up").toBe(true);
      const streamed = openRequest(url.origin, url.pathname, headersFor({ "transfer-encoding": "chunked" }));
      for (let sent = 0; sent <= LIMIT; sent += 4_096) streamed.writeChunk(Buffer.alloc(4_096, "x"));
      const streamedAnswer = await streamed.answer;
      expect(streamed.answeredWhileOpen, `streamed: ${JSON.stringify(streamedAnswer)}`).toBe(true);
      expect(streamedAnswer.status, streamedAnswer.text).toBe(413);
      expect(await streamed.hangUp(), "the subgraph held the connection after the client hung up").toBe(true);
    },
  );

  it("answers 413 exactly when a body passes the limit, on every route", async () => {
    await checkProperty(
      fc.asyncProperty(
        fc.constantFrom(...BODY_ROUTES),
        fc.integer({ min: LIMIT - 64, max: LIMIT + 64 }),
        fc.constantFrom("x", "界", "😀"),
        async ([surface, template, path], size, pad) => {
          const prefix = surface === null ? '{"query":"{ __typename }","extensions":{"pad":"' : '{"prompt":"x","pad":"';
          let body = prefix;
          while (Buffer.byteLength(body) + Buffer.byteLength(pad) + 3 <= size) body += pad;
          body += surface === null ? '"}}' : '"}';
          const bytes = Buffer.byteLength(body);
          const before = await snapshot(t.stack.db!);
          const where = describeRequest("POST", path, `<${bytes} bytes of ${pad}>`);
          const answer = await send(t.url, "POST", path, { headers: headersFor({}), body });
          if (bytes > LIMIT) expect413(surface, template, answer, where);
          else {
            expect(answer.status, `${where} → ${answer.status} ${answer.text.slice(0, 300)}`).not.toBe(413);
            expect(answer.status, where).toBeLessThan(500);
          }
          await expectNoWrites(t.stack.db!, before, where);
        },
      ),
      30,
    );
  });
});
