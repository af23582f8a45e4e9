/**
 * One `DateTime` scalar on every timestamp of both subgraphs (issue 21 §1): RFC 3339 in UTC with
 * milliseconds, byte for byte what the `String` timestamps answered (every column holds
 * `Date#toISOString` text: src/db/index.ts `nowIso`), refusing any other input with 400
 * `invalid_request`.
 */
import fs from "node:fs";
import fc from "fast-check";
import { buildASTSchema, buildSchema, getNamedType, GraphQLError, isObjectType, Kind, parse, type StringValueNode } from "graphql";
import { describe, expect, it } from "vitest";
import { composeSchemas } from "../../router/compose.ts";
import { DATE_TIME_DESCRIPTION, DATE_TIME_SPECIFIED_BY, DateTime, NOT_DATE_TIME, parseRfc3339 } from "../../subgraphs/shared/scalars.ts";

const literal = (value: string): StringValueNode => ({ kind: Kind.STRING, value });

describe("DateTime", () => {
  it("serializes every stored timestamp exactly as it is stored", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date("0001-01-01T00:00:00.000Z"), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true }), (date) => {
        const stored = date.toISOString();
        expect(DateTime.serialize(stored)).toBe(stored);
        expect(DateTime.serialize(date)).toBe(stored);
      }),
    );
  });

  it("serializes a stored-looking text as parsing it would: itself when it is an instant, a field error when its day does not exist", () => {
    const two = (n: number) => String(n).padStart(2, "0");
    fc.assert(
      fc.property(
        fc.record({
          year: fc.integer({ min: 1, max: 9999 }),
          month: fc.integer({ min: 1, max: 12 }),
          day: fc.integer({ min: 1, max: 31 }),
          ms: fc.integer({ min: 0, max: 86_399_999 }),
        }),
        ({ year, month, day, ms }) => {
          const time = new Date(ms).toISOString().slice(10);
          const text = `${String(year).padStart(4, "0")}-${two(month)}-${two(day)}${time}`;
          const parsed = parseRfc3339(text);
          if (parsed === null) expect(() => DateTime.serialize(text)).toThrow(GraphQLError);
          else expect(DateTime.serialize(text)).toBe(new Date(parsed).toISOString());
        },
      ),
    );
    expect(() => DateTime.serialize("2026-02-30T00:00:00.000Z")).toThrow(GraphQLError);
  });

  it("normalizes an RFC 3339 value with an offset or without milliseconds to UTC with milliseconds", () => {
    expect(DateTime.serialize("2026-11-26T19:00:00+02:00")).toBe("2026-11-26T17:00:00.000Z");
    expect(DateTime.serialize("2026-11-26t17:00:00.123456z")).toBe("2026-11-26T17:00:00.123Z");
    expect(DateTime.parseValue("2026-11-26T17:00:00-00:30")).toEqual(new Date("2026-11-26T17:30:00.000Z"));
    expect(DateTime.parseLiteral(literal("2026-11-26T17:00:00Z"))).toEqual(new Date("2026-11-26T17:00:00.000Z"));
  });

  it.each([
    ["a date without a time", "2026-11-26"],
    ["a time without seconds", "2026-11-26T17:00Z"],
    ["a date-time without a time zone", "2026-11-26T17:00:00"],
    ["a day that does not exist", "2026-02-30T00:00:00Z"],
    ["an hour of 24", "2026-11-26T24:00:00Z"],
    ["a leap second", "2026-12-31T23:59:60Z"],
    ["an offset beyond 23:59", "2026-11-26T17:00:00+24:00"],
    ["a number", 1_795_712_400_000],
    ["free text", "tomorrow"],
  ])("refuses %s as input with 400 invalid_request", (_, value) => {
    for (const parse of [
      () => DateTime.parseValue(value),
      () => DateTime.parseLiteral(typeof value === "string" ? literal(value) : { kind: Kind.INT, value: String(value) }),
    ]) {
      let error: unknown;
      try {
        parse();
      } catch (thrown) {
        error = thrown;
      }
      expect(error).toBeInstanceOf(GraphQLError);
      expect((error as GraphQLError).message).toBe(NOT_DATE_TIME);
      expect((error as GraphQLError).extensions).toMatchObject({ code: "invalid_request", http: { status: 400 } });
    }
  });

  it("is declared alike by both subgraphs, with its description and @specifiedBy RFC 3339", () => {
    for (const file of ["generation/schema.graphql", "cloud/schema.graphql"]) {
      const sdl = buildASTSchema(parse(fs.readFileSync(new URL(`../../subgraphs/${file}`, import.meta.url), "utf8")), { assumeValidSDL: true });
      const scalar = sdl.getType("DateTime");
      expect(scalar?.description, file).toBe(DATE_TIME_DESCRIPTION);
      expect((scalar as { specifiedByURL?: string }).specifiedByURL, file).toBe(DATE_TIME_SPECIFIED_BY);
    }
  });

  it("types every timestamp field of the composed API schema (`…At`, `at`, `time`) as DateTime", () => {
    const schema = buildSchema(composeSchemas().api);
    const timestamps: string[] = [];
    const notDateTime: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (!isObjectType(type) || type.name.startsWith("__")) continue;
      for (const field of Object.values(type.getFields())) {
        if (!/At$|^at$|^time$/.test(field.name)) continue;
        timestamps.push(`${type.name}.${field.name}`);
        if (getNamedType(field.type).name !== "DateTime") notDateTime.push(`${type.name}.${field.name}`);
      }
    }
    expect(notDateTime).toEqual([]);
    // The 23 timestamps that were String, the 3 that were DateTime already, and the operators'
    // (Operator.createdAt, AuditEntry.at, AdminSignInPayload.expiresAt).
    expect(timestamps).toHaveLength(29);
  });
});
