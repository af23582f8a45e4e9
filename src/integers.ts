/**
 * The one strict reader of integers written as text (docs/api/generation.md §8, docs/api/cloud.md
 * §8, README "Input limits"): REST query parameters (`limit`), CLI options (`--limit`,
 * `--rate-limit`, `--priority`, `--weight`, `--stock`, model ids) and the numeric settings of
 * src/config.ts. `Number(text)` is too lenient for any of them: it reads `"1e2"` as 100, `"0x10"`
 * as 16, `" 5"` as 5 and `""` as 0. (JSON and GraphQL numbers are typed by their own grammar and
 * never pass through here.)
 */

/** The range an integer must fall in, both ends inclusive; each end a safe integer. */
export interface IntegerRange {
  min: number;
  max: number;
}

/**
 * Reads a decimal integer: ASCII digits only, a leading `-` only when `range.min` is negative;
 * no sign `+`, no whitespace, no exponent, no hex, no fraction, no digit separators. Leading zeros
 * are allowed (`"007"` is 7).
 * @param text the text as given
 * @param range the accepted range (default: every safe integer)
 * @returns the integer, or null when the text is not one within the range
 */
export function parseInteger(text: string, range: IntegerRange = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }): number | null {
  const pattern = range.min < 0 ? /^-?\d{1,16}$/ : /^\d{1,16}$/;
  if (!pattern.test(text)) return null;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < range.min || value > range.max) return null;
  // "-0" is 0: one spelling of zero out of the parser.
  return value === 0 ? 0 : value;
}
