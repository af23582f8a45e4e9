/**
 * Shared pieces of the property-based "bad input everywhere" suites (test/fuzz): the fixed seed
 * and run count, arbitraries of hostile values, a raw HTTP client with a hang deadline, the
 * checker that an answer is documented for its route (the generated documents of router/openapi/), and the
 * no-partial-write snapshot of the database.
 *
 * Reproduce a failure with the seed printed in its message: `FUZZ_SEED=<seed> npx vitest run test/fuzz`.
 * More runs: `FUZZ_RUNS=500`.
 */
import http from "node:http";
import net from "node:net";
import fc from "fast-check";
import { expect } from "vitest";
import { generationOpenApi } from "../../router/openapi/generation.ts";
import { cloudOpenApi } from "../../router/openapi/cloud.ts";
import type { OpenApiDocument, Operation, Reference, Response } from "../../router/openapi/types.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { schemaCompiler } from "../support/openapi.ts";
import type { Db } from "../../src/db/index.ts";

// ---------------------------------------------------------------------------------------------
// Seed and runs

/** The seed of every property: `FUZZ_SEED`, or a fixed default so CI runs are repeatable. */
export const FUZZ_SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20_260_101;
/** Runs of a property by default. */
const DEFAULT_RUNS = 25;
/** Runs per property: `FUZZ_RUNS`, or a modest default that keeps the fuzz set well under a minute. */
export const FUZZ_RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : DEFAULT_RUNS;
/** The longest any one request may take before it counts as a hang (ms). */
export const HANG_MS = 8_000;
/** Time limit of one property test (ms): room for its runs plus shrinking a failure. */
export const PROPERTY_TIMEOUT_MS = 90_000 + FUZZ_RUNS * 1_000;

/**
 * Checks an async property with the suite's seed and run count.
 * @param runs runs of this property (default {@link FUZZ_RUNS}); scaled by `FUZZ_RUNS` when set
 * @throws the fast-check failure, its message starting with the seed and how to replay it
 */
export async function checkProperty<T>(property: fc.IAsyncProperty<T>, runs?: number): Promise<void> {
  const numRuns = runs === undefined ? FUZZ_RUNS : Math.max(1, Math.round((runs * FUZZ_RUNS) / DEFAULT_RUNS));
  try {
    // Shrinking replays real requests: bounded so a failure still reports quickly.
    await fc.assert(property, { seed: FUZZ_SEED, numRuns, verbose: 0, interruptAfterTimeLimit: 60_000, markInterruptAsFailure: false });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`fuzz failure with FUZZ_SEED=${FUZZ_SEED} (replay: FUZZ_SEED=${FUZZ_SEED} npx vitest run test/fuzz)\n${message}`, { cause: error });
  }
}

// ---------------------------------------------------------------------------------------------
// Hostile values

/** A piece of JSON text written as is into a body (deep nesting, numbers JSON.stringify cannot write). */
export class RawJson {
  constructor(readonly text: string) {}
  toString() {
    return this.text.length > 120 ? `RawJson(${this.text.slice(0, 60)}…${this.text.length} chars)` : `RawJson(${this.text})`;
  }
}

/**
 * Serializes a value to JSON text, writing {@link RawJson} pieces verbatim.
 * @returns the body text
 */
export function toJsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Strings that have broken parsers, loggers and databases before. */
const SPECIAL_STRINGS = [
  "",
  " ",
  "\t\n",
  "\u0000",
  "a\u0000b",
  "\u202Eevil\u202C.png",
  "مرحبا بالعالم",
  "עברית",
  "𝕏😀👨‍👩‍👧‍👦",
  "\uD800",
  "\uDFFF",
  "x\uDBFFy",
  "\uFEFF",
  "\u200B\u200D",
  "e\u0301\u0301\u0301",
  "'; DROP TABLE tasks; --",
  "../../etc/passwd",
  "%00%ff",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log-injection probe, meant literally
  "${jndi:ldap://x/a}",
  "<script>alert(1)</script>",
  "\\",
  '"',
  "null",
  "NaN",
  "-0",
  "1e309",
  "__proto__",
  "constructor",
  "stm_2020-01",
  "ord_nope",
] as const;

/** Lone surrogate halves: JSON.stringify writes them as `\ud800` escapes. */
const surrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));

/** A repeated character (ASCII, CJK, astral) `min`..`max` times. */
export function hugeString(min = 2_000, max = 12_000): fc.Arbitrary<string> {
  return fc.tuple(fc.constantFrom("x", "界", "😀", "\u0000", "\u202E"), fc.integer({ min, max })).map(([c, n]) => c.repeat(Math.ceil(n / c.length)));
}

/** Unicode-heavy text: any code point, graphemes, lone surrogates, special strings. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: surrogate, minLength: 1, maxLength: 4 }) },
  { weight: 1, arbitrary: hugeString(1_000, 6_000) },
);

/** JSON nested `depth` deep as text (arrays, objects or both), too deep for a recursive serializer. */
export const deepJson: fc.Arbitrary<RawJson> = fc
  // Mostly past the depth where a recursive JSON.stringify overflows (a few thousand levels).
  .tuple(fc.constantFrom("array", "object", "mixed"), fc.oneof(fc.constantFrom(65, 300, 6_000, 12_000), fc.integer({ min: 3_000, max: 12_000 })))
  .map(([kind, depth]) => {
    if (kind === "array") return new RawJson(`${"[".repeat(depth)}${"]".repeat(depth)}`);
    if (kind === "object") return new RawJson(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`);
    return new RawJson(`${'{"a":['.repeat(depth / 2)}null${"]}".repeat(depth / 2)}`);
  });

/** Numbers JSON can carry that programs mishandle (written raw: JSON.stringify cannot write some). */
export const nastyNumber: fc.Arbitrary<number | RawJson> = fc.oneof(
  fc.constantFrom(0, -1, 1.5, -0.0001, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, 5e-324),
  fc.constantFrom("1e400", "-1e400", "-0", "123456789012345678901234567890", "1E2", "0.1e-999").map((t) => new RawJson(t)),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/** Any JSON value, hostile ones weighted up. */
export const wildValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: nastyString },
  { weight: 2, arbitrary: nastyNumber },
  { weight: 1, arbitrary: fc.constantFrom(true, false, null) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.array(nastyString, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(nastyString, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) },
  { weight: 1, arbitrary: deepJson },
);

/** JSON kinds a field can expect. */
export type FieldKind = "string" | "integer" | "number" | "boolean" | "object" | "array";

/** A JSON value that is certainly not of `kind` (an integer is a number; 1.5 is not an integer). */
export function notOfKind(kind: FieldKind): fc.Arbitrary<unknown> {
  const choices: fc.Arbitrary<unknown>[] = [fc.constant(true), fc.constant(false)];
  if (kind !== "string") choices.push(nastyString);
  if (kind !== "integer" && kind !== "number")
    choices.push(
      fc.integer(),
      nastyNumber.filter((n) => typeof n === "number"),
    );
  if (kind === "integer")
    choices.push(
      fc.constantFrom(1.5, -0.25, 1e-7, 2 ** 31 + 0.5),
      fc.constantFrom("1e400", "0.5").map((t) => new RawJson(t)),
    );
  if (kind !== "object")
    choices.push(
      fc.dictionary(nastyString, wildValue, { maxKeys: 3 }),
      deepJson.filter((d) => d.text.startsWith("{")),
    );
  if (kind !== "array")
    choices.push(
      fc.array(wildValue, { maxLength: 4 }),
      deepJson.filter((d) => d.text.startsWith("[")),
    );
  return fc.oneof(...choices);
}

/** Extra fields no API knows, with hostile names and values. */
export const unknownFields: fc.Arbitrary<Record<string, unknown>> = fc.dictionary(
  fc.oneof(nastyString, fc.constantFrom("__proto__", "constructor", "prototype", "toString", "idempotency_key", "input")),
  wildValue,
  { maxKeys: 4 },
);

/** Body texts that are not a JSON object: broken JSON, other JSON values, binary, huge. */
export const notAJsonObject: fc.Arbitrary<string | Buffer> = fc.oneof(
  fc.constantFrom("", " ", "{", "}", '{"a":', "{'a':1}", "{a:1}", "[1,2", "nul", "tru", '"x', '{"a":1,}', '{"a":1}}', '{"a" 1}', "\uFEFF{}x", '{"a":1}\u0000'),
  fc
    .jsonValue({ maxDepth: 3 })
    .filter((v) => !v || typeof v !== "object" || Array.isArray(v))
    .map((v) => JSON.stringify(v)),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }).map((v) => JSON.stringify(v)),
  nastyString.map((s) => (s.startsWith("{") ? `x${s}` : s)),
  fc.uint8Array({ minLength: 1, maxLength: 200 }).map((bytes) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(bytes)])),
  deepJson.filter((d) => d.text.startsWith("[")).map((d) => d.text),
  fc.integer({ min: 1, max: 40 }).map((n) => "{".repeat(n)),
);

/** A Content-Type header value, mostly wrong ones (`undefined`: none sent). */
export const contentType: fc.Arbitrary<string | undefined> = fc.constantFrom(
  undefined,
  "application/json",
  "application/json; charset=utf-8",
  "application/json; charset=latin1",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/graphql",
  "application/xml",
  "*/*",
  "garbage",
  "",
);

/** An `Authorization` value that names no key (`undefined`: header left out). */
export const badAuthorization: fc.Arbitrary<string | undefined> = fc.oneof(
  fc.constantFrom(
    undefined,
    "",
    "Bearer",
    "Bearer ",
    "Basic dXNlcjpwYXNz",
    "Bearer sk-not-a-key",
    "Bearer null",
    "bearer",
    "Token abc",
    "Bearer \t",
    "Bearer a b c",
  ),
  fc.string({ unit: "grapheme-ascii", maxLength: 80 }).map((s) => `Bearer ${s}`),
  fc.string({ unit: "grapheme-ascii", maxLength: 80 }),
  fc.integer({ min: 200, max: 4_000 }).map((n) => `Bearer ${"k".repeat(n)}`),
  fc.string({ unit: fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 20 }).map((s) => `Bearer ${s}`),
);

/** Whether a path segment is a dot segment, which URL rules resolve away (the path then names another route). */
export function isDotSegment(segment: string): boolean {
  return /^(?:\.|%2e){1,2}$/i.test(segment);
}

/** A surrogate half without its partner (encodeURIComponent throws on one). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Percent-encodes any string; a lone surrogate (which encodeURIComponent throws on) becomes U+FFFD, as a UTF-8 encoder would send it. */
export function encodeAny(text: string): string {
  return encodeURIComponent(text.replace(new RegExp(LONE_SURROGATE.source, "g"), "\uFFFD"));
}

/**
 * A path segment, percent-encoded unless raw (raw ones are bad percent escapes and such).
 * Kept under a few KiB: Node refuses a request line near its 16 KiB header limit with 431 itself.
 */
export const pathSegment: fc.Arbitrary<string> = fc.oneof(
  nastyString
    .filter((s) => s.length > 0 && !LONE_SURROGATE.test(s))
    .map((s) => encodeURIComponent(s))
    .filter((s) => s.length <= 2_400),
  fc.constantFrom("%", "%E0%A4%A", "%FF", "%00", "%2F", "%2e%2e", "..", "%uD800", "a%20b", "%C0%AF", "%ED%A0%80", "%F4%90%80%80", "~", "%25", "'", "(", "*"),
  fc.stringMatching(/^[A-Za-z0-9._~-]{1,64}$/),
);

/** A query string of hostile parameters (raw, including bad escapes, repeated names, no values). */
export function queryString(names: readonly string[]): fc.Arbitrary<string> {
  const value = fc.oneof(
    pathSegment,
    fc.constantFrom("", "0", "-1", "1.5", "1e3", "101", "99999999999999999999", "NaN", "Infinity", "0x10", "%205", "5%20", "+5", "true", "[]", "{}", "null"),
  );
  const name = fc.oneof(fc.constantFrom(...names), pathSegment);
  return fc
    .array(fc.tuple(name, fc.option(value, { nil: undefined })), { maxLength: 4 })
    .map((pairs) => pairs.map(([n, v]) => (v === undefined ? n : `${n}=${v}`)).join("&"));
}

// ---------------------------------------------------------------------------------------------
// HTTP

/** One raw HTTP answer. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed JSON body, or undefined when it is not JSON. */
  body: any;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/**
 * Sends one request with node:http (raw path, any header, any body bytes).
 * @param base the server's `http://host:port`
 * @param path the request target, sent as is
 * @throws Error "hang" when no complete answer arrives within {@link HANG_MS}
 */
export function send(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string | undefined>; body?: string | Buffer } = {},
): Promise<Answer> {
  const url = new URL(base);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) if (value !== undefined) headers[name] = value;
  if (options.body !== undefined) headers["content-length"] = String(Buffer.byteLength(options.body));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers, agent });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`hang: ${method} ${path.slice(0, 200)} got no answer within ${HANG_MS} ms`));
    }, HANG_MS);
    req.on("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`${method} ${path.slice(0, 200)}: connection failed before an answer: ${error.message}`));
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString("utf8");
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, body });
      });
      res.on("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    req.end(options.body);
  });
}

/**
 * Writes raw bytes on a fresh TCP connection and collects what comes back until the server closes
 * it or `waitMs` passes (for request lines node:http refuses to send).
 * @returns the raw response text
 */
export function sendRaw(base: string, bytes: string, waitMs = 3_000): Promise<string> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let text = "";
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(text);
    };
    const timer = setTimeout(done, waitMs);
    socket.on("data", (chunk) => {
      text += chunk.toString("utf8");
      // One complete answer with a Content-Length is all we wait for.
      const head = text.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(text)?.[1];
      if (head >= 0 && length && Buffer.byteLength(text.slice(head + 4)) >= Number(length)) done();
    });
    socket.on("close", done);
    socket.on("error", done);
    socket.write(bytes);
  });
}

/** Closes the keep-alive connections of {@link send}. */
export function closeClients(): void {
  agent.destroy();
}

// ---------------------------------------------------------------------------------------------
// What an answer may be

/** Evidence of an internal error in a message: a stack frame, a source path, an exception name. */
const LEAK =
  /\bat [\w.<>$]+ \(|\bat (?:file:\/\/|\/)|\/work\/|node_modules|\.ts:\d+|\.js:\d+|\b(?:TypeError|RangeError|SyntaxError|ReferenceError): |SQLITE_|knex|undefined is not|Cannot read propert/;

/**
 * Asserts a text shows no stack trace, source path or internal exception.
 * @param where names the request in the failure message
 */
export function expectNoLeak(text: string, where: string): void {
  expect(LEAK.test(text), `${where} leaks internals: ${text.slice(0, 600)}`).toBe(false);
}

/** The two REST surfaces and their documents. */
export type Surface = "generation" | "cloud";
const documents: Record<Surface, OpenApiDocument> = { generation: generationOpenApi, cloud: cloudOpenApi };
const compilers = {
  generation: schemaCompiler(generationOpenApi, "urn:switchyard:fuzz:generation"),
  cloud: schemaCompiler(cloudOpenApi, "urn:switchyard:fuzz:cloud"),
};

function resolve<T>(doc: OpenApiDocument, value: T | Reference): T {
  if (value && typeof value === "object" && "$ref" in value && typeof (value as Reference).$ref === "string") {
    const [, , kind, name] = (value as Reference).$ref.split("/");
    return (doc.components as any)[kind!][name!] as T;
  }
  return value as T;
}

/**
 * The statuses a route's document lists, or null when the path or method is not one it has.
 * @param template the documented path (`/api/v1/tasks/{task_id}`)
 */
export function documentedStatuses(surface: Surface, method: string, template: string): string[] {
  const operation = (documents[surface].paths[template] as any)?.[method.toLowerCase()] as Operation | undefined;
  if (!operation) throw new Error(`${method} ${template} is not documented in the ${surface} document`);
  return Object.keys(operation.responses);
}

/**
 * Asserts an answer is one its route documents: a status below 500 that the route lists, the
 * documented media type and body schema (the error shape for errors), and no leaked internals.
 * @param allowed narrows the documented statuses further (for example no 2xx for a bad body)
 */
export function expectDocumented(
  surface: Surface,
  method: string,
  template: string,
  answer: Answer,
  where: string,
  allowed?: (status: number) => boolean,
): void {
  const doc = documents[surface];
  const statuses = documentedStatuses(surface, method, template);
  const context = `${where} → ${answer.status} ${answer.text.slice(0, 400)}`;
  expect(answer.status, `5xx: ${context}`).toBeLessThan(500);
  expect(statuses, `undocumented status: ${context}`).toContain(String(answer.status));
  expect(answer.headers["x-request-id"], `X-Request-Id: ${context}`).toMatch(/^[A-Za-z0-9._:-]{1,80}$/);
  if (allowed) expect(allowed(answer.status), `status not expected here: ${context}`).toBe(true);
  const operation = (doc.paths[template] as any)[method.toLowerCase()] as Operation;
  const response = resolve<Response>(doc, operation.responses[String(answer.status)]!);
  const mediaType = String(answer.headers["content-type"] ?? "")
    .split(";")[0]!
    .trim();
  const content = response.content?.[mediaType];
  expect(content, `media type ${mediaType} not documented: ${context}`).toBeDefined();
  if (mediaType === "application/json") {
    const validate = compilers[surface](`${method} ${template} ${answer.status}`, content!.schema);
    expect(validate(answer.body), `body not as documented (${JSON.stringify(validate.errors)}): ${context}`).toBe(true);
  }
  if (answer.status >= 400) expectNoLeak(answer.text, where);
}

/**
 * Asserts an answer to a path or method no route has: 404 or 405 with the surface's error body.
 */
export function expectUnrouted(surface: Surface, answer: Answer, where: string): void {
  const context = `${where} → ${answer.status} ${answer.text.slice(0, 300)}`;
  expect([400, 404, 405], context).toContain(answer.status);
  if (surface === "generation") expect(answer.body, context).toEqual({ code: answer.status, message: expect.any(String) });
  else
    expect(answer.body, context).toMatchObject({
      success: false,
      request_id: expect.any(String),
      error: { code: expect.any(String), message: expect.any(String), details: expect.any(Object) },
    });
  expectNoLeak(answer.text, where);
}

// ---------------------------------------------------------------------------------------------
// No partial writes

/** The tables a rejected request must leave alone. */
export const WRITE_TABLES = ["accounts", "api_keys", "tasks", "ledger_entries", "orders", "resources", "customers", "domains", "purge_tasks"] as const;

/** Row counts of {@link WRITE_TABLES} plus the sum of every balance (milli-yuan). */
export type Snapshot = Record<string, number>;

/**
 * Takes a snapshot of what a rejected request must not change.
 * @returns row count per table, and `balances`: accounts' plus customers' balances in milli-yuan
 */
export async function snapshot(db: Db): Promise<Snapshot> {
  const counts: Snapshot = {};
  for (const table of WRITE_TABLES) counts[table] = Number((await db(table).count({ n: "*" }).first())?.n ?? 0);
  const accounts = await db("accounts").sum({ s: "balance" }).first();
  const customers = await db("customers").sum({ s: "balance" }).first();
  counts.balances = Number(accounts?.s ?? 0) + Number(customers?.s ?? 0);
  return counts;
}

/**
 * Asserts nothing was written between two snapshots and the books still balance (every balance
 * equals the sum of its ledger entries; src/ledger `verifyLedger`).
 */
export async function expectNoWrites(db: Db, before: Snapshot, where: string): Promise<void> {
  const after = await snapshot(db);
  expect(after, `a rejected request wrote: ${where}`).toEqual(before);
  expect(await verifyLedger(db), `ledger after ${where}`).toEqual([]);
}

/** A short description of a request for failure messages. */
export function describeRequest(method: string, path: string, body?: string | Buffer, headers: Record<string, string | undefined> = {}): string {
  const text = body === undefined ? "" : typeof body === "string" ? body : `<${body.length} bytes>`;
  const shown = text.length > 300 ? `${text.slice(0, 300)}…(${text.length} chars)` : text;
  return `${method} ${path.slice(0, 300)} ${JSON.stringify(headers).slice(0, 300)} ${shown}`;
}
