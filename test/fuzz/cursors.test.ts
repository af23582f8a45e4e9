/**
 * Random cursors at every paginated entry point (issue 20 finding 7; docs/architecture.md §7): the
 * cloud REST lists (`cursor`) and every connection of both subgraphs, admin ones included
 * (`after`). A cursor is base64url text of a JSON array read as the types its keyset needs, so
 * every answer is a page (200, for a cursor that happens to be well formed) or 400
 * `invalid_request` `cursor is not valid` — never a 500 (on PostgreSQL an integer id compared with
 * text, a fraction or 1e400 was a database error), never another error, never a write. Run it on
 * PostgreSQL too: `TEST_DATABASE=postgres npx vitest run test/fuzz/cursors.test.ts`.
 */
import fs from "node:fs";
import fc from "fast-check";
import { buildSchema, isObjectType } from "graphql";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { CONNECTIONS, REST_LISTS } from "../support/connections.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { parseYuan } from "../../src/money.ts";
import {
  checkProperty,
  closeClients,
  encodeAny,
  expectNoLeak,
  expectNoWrites,
  nastyString,
  PROPERTY_TIMEOUT_MS,
  RawJson,
  send,
  snapshot,
  toJsonText,
} from "./support.ts";

vi.setConfig({ testTimeout: PROPERTY_TIMEOUT_MS });

const ADMIN_TOKEN = "fuzz-cursors-admin-token";
let t: TestStack;
let key: string;

beforeAll(async () => {
  t = await startTestStack({ ADMIN_TOKEN });
  const created = await t.createKey("0");
  key = created.key;
  // A customer with transactions, so the transaction list has rows for a cursor to compare with.
  await topUpCustomer(t.stack.db!, { accountId: created.account_id, customerId: "cust-a", amount: parseYuan("10") });
  await topUpCustomer(t.stack.db!, { accountId: created.account_id, customerId: "cust-a", amount: parseYuan("10") });
});
afterAll(async () => {
  closeClients();
  await t?.close();
});

const b64 = (text: string) => Buffer.from(text).toString("base64url");

/** A value a cursor might hold: numbers JSON.stringify cannot write, times, ids, text, nesting. */
const cursorValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 + 10 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom("1e400", "-1e400", "99999999999999999999", "1.5", "-0", "2147483648", "9007199254740993", "1E2").map((text) => new RawJson(text)),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom("2026-13-45T99:99:99.999Z", "2026-01-01", "2026-01-01T00:00:00+99:99", "abc", "", "task_1", "acc_1", "\u0000", "\uD800"),
  nastyString,
  fc.constantFrom(null, true, false, {}, []),
  fc.jsonValue({ maxDepth: 2 }),
);

/** Any cursor text: random strings and bytes, and base64url of JSON arrays (mostly wrongly typed). */
const cursor: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.array(cursorValue, { maxLength: 3 }).map((values) => b64(toJsonText(values))) },
  { weight: 1, arbitrary: cursorValue.map((value) => b64(toJsonText(value))) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString("base64url")) },
  { weight: 1, arbitrary: nastyString.filter((s) => s.length > 0) },
  { weight: 1, arbitrary: fc.integer({ min: 400, max: 20_000 }).map((n) => "W".repeat(n)) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_+/=-]{1,40}$/) },
);

describe("every paginated entry point takes any cursor without a 500", () => {
  it("covers every field of the supergraph that takes `after`", () => {
    const schema = buildSchema(fs.readFileSync(new URL("../../schema/supergraph.graphql", import.meta.url), "utf8"), { assumeValidSDL: true });
    const paged: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isObjectType(type) || type.name.startsWith("__")) continue;
      for (const field of Object.values(type.getFields())) if (field.args.some((a) => a.name === "after")) paged.push(`${type.name}.${field.name}`);
    }
    expect(CONNECTIONS.map((c) => c.field).sort()).toEqual([...new Set(paged)].sort());
  });

  it.each(REST_LISTS)("GET /openapi/v1%s?cursor=<any> is a page or 400 cursor is not valid", async (path) => {
    const separator = path.includes("?") ? "&" : "?";
    await checkProperty(
      fc.asyncProperty(cursor, async (value) => {
        const before = await snapshot(t.stack.db!);
        const url = `/openapi/v1${path}${separator}cursor=${encodeAny(value)}`;
        const answer = await send(t.url, "GET", url, { headers: { authorization: `Bearer ${key}` } });
        const where = `GET ${url.slice(0, 200)} → ${answer.status} ${answer.text.slice(0, 300)}`;
        if (answer.status !== 200) {
          expect(answer.status, where).toBe(400);
          expect(answer.body?.error, where).toEqual({ code: "invalid_request", message: "cursor is not valid", details: { field: "cursor" } });
        }
        expectNoLeak(answer.text, where);
        await expectNoWrites(t.stack.db!, before, where);
      }),
      20,
    );
  });

  it.each(CONNECTIONS.map((c) => [c.name, c] as const))("GraphQL %s(after: <any>) is a page or 400 cursor is not valid", async (_, connection) => {
    await checkProperty(
      fc.asyncProperty(cursor, async (value) => {
        const answer = await t.graphql(connection.query, { after: value }, connection.admin ? ADMIN_TOKEN : key);
        const where = `${connection.name}(after: ${JSON.stringify(value).slice(0, 200)}) → ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`;
        expect(answer.status, where).toBeLessThan(500);
        for (const error of answer.body.errors ?? []) {
          expect({ message: error.message, code: error.extensions?.code, status: error.extensions?.http?.status }, where).toEqual({
            message: "cursor is not valid",
            code: "invalid_request",
            status: 400,
          });
        }
        if (!answer.body.errors) expect(connection.pick(answer.body.data), where).toMatchObject({ edges: expect.any(Array) });
        expectNoLeak(JSON.stringify(answer.body), where);
      }),
      20,
    );
  });
});
