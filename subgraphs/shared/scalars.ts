/**
 * The custom scalars both subgraphs share (issue 21 §1 "Types a client can rely on"). Federation 2
 * merges a scalar declared by several subgraphs, so each SDL file declares `scalar DateTime` with
 * {@link DATE_TIME_DESCRIPTION} and `@specifiedBy`; this module is its one implementation.
 */
import { GraphQLError, GraphQLScalarType, Kind } from "graphql";
import { graphqlExtensions } from "../../src/errors.ts";

/** The description every SDL file gives `scalar DateTime` (a unit test keeps them equal). */
export const DATE_TIME_DESCRIPTION =
  'An instant as an RFC 3339 date-time string in UTC with millisecond precision, for example "2026-11-26T17:00:00.000Z". As input: any RFC 3339 date-time with a time zone (`Z` or `±hh:mm`; fractions optional, leap seconds not accepted), else 400 `invalid_request`.';

/** Where the format is specified (`@specifiedBy`). */
export const DATE_TIME_SPECIFIED_BY = "https://www.rfc-editor.org/rfc/rfc3339";

/** RFC 3339 §5.6 `date-time`: full-date "T" full-time, the offset required. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;

/**
 * Parses an RFC 3339 date-time with a time zone.
 * @returns Unix milliseconds (fractions below a millisecond dropped), or null when `text` is not
 *   such a date-time (a calendar date that does not exist, an hour over 23, an offset over 23:59,
 *   a leap second: JavaScript's clock has none)
 */
export function parseRfc3339(text: string): number | null {
  const match = RFC3339.exec(text);
  if (!match) return null;
  const [, year, month, day, hour, minute, second, , offsetHours, offsetMinutes] = match;
  const daysInMonth = new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate();
  const ranges: [string | undefined, number, number][] = [
    [month, 1, 12],
    [day, 1, daysInMonth],
    [hour, 0, 23],
    [minute, 0, 59],
    [second, 0, 59],
    [offsetHours, 0, 23],
    [offsetMinutes, 0, 59],
  ];
  if (ranges.some(([value, min, max]) => value !== undefined && (Number(value) < min || Number(value) > max))) return null;
  // Date.parse reads every RFC 3339 date-time (ISO 8601 with an offset) once its fields are in range.
  const ms = Date.parse(text.toUpperCase());
  return Number.isFinite(ms) ? ms : null;
}

/** The message of an input that is not an RFC 3339 date-time (GraphQL prefixes the argument or variable). */
export const NOT_DATE_TIME = "DateTime must be an RFC 3339 date-time with a time zone, for example 2026-11-26T17:00:00.000Z";

/** The `invalid_request` (400) of an input that is not an RFC 3339 date-time. */
const notDateTime = () => new GraphQLError(NOT_DATE_TIME, { extensions: graphqlExtensions("invalid_request") });

/** An input value as Unix milliseconds. @throws GraphQLError `invalid_request` (400) */
function parseInput(value: unknown): Date {
  const ms = typeof value === "string" ? parseRfc3339(value) : null;
  if (ms === null) throw notDateTime();
  return new Date(ms);
}

/**
 * A date-time already in the form `DateTime` writes (UTC, milliseconds, upper-case `T` and `Z`)
 * whose fields are in range on any month (days up to 28): what the timestamp columns hold. Such a
 * text serializes as itself, unparsed; any other goes through {@link parseRfc3339}.
 */
const CANONICAL = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

/**
 * `DateTime`: an instant on the wire as `YYYY-MM-DDTHH:MM:SS.sssZ` (what `Date#toISOString`
 * writes, and what every timestamp column holds: src/db/index.ts `nowIso`, so answers are byte for
 * byte what they were as `String`). Serializes a `Date` or an RFC 3339 string, normalized to UTC
 * with milliseconds; parses input (variables and literals) into a `Date`.
 */
export const DateTime = new GraphQLScalarType<Date, string>({
  name: "DateTime",
  description: DATE_TIME_DESCRIPTION,
  specifiedByURL: DATE_TIME_SPECIFIED_BY,
  serialize(value) {
    if (value instanceof Date && Number.isFinite(value.getTime())) return value.toISOString();
    if (typeof value === "string" && CANONICAL.test(value)) return value;
    const ms = typeof value === "string" ? parseRfc3339(value) : null;
    // A stored timestamp that is not one is a bug: a field error, never a made-up instant.
    if (ms === null) throw new GraphQLError(`DateTime cannot represent ${typeof value === "string" ? JSON.stringify(value) : typeof value}`);
    return new Date(ms).toISOString();
  },
  parseValue: parseInput,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw notDateTime();
    return parseInput(ast.value);
  },
});
