// @ts-check
/**
 * Money's text forms, written once for the server and the pages (docs/architecture.md §3):
 * src/money.ts and the REST shims import this file, and router/pages.ts serves it to the pages as
 * `/assets/<version>/money.js`. Dependency-free and integer arithmetic only: an amount is integer
 * milli-yuan (0.001 CNY); the graph's `Money.amount` is its exact decimal text ("1.125").
 */

/** Milli-yuan in one yuan. */
export const MILLI_PER_YUAN = 1000;

/**
 * Checks that a value is a safe integer amount of milli-yuan.
 * @param {number} value
 * @returns {number} the value
 * @throws {RangeError} when it is not (a programming error, never user input)
 */
export function assertMilli(value) {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not an integer milli-yuan amount: ${value}`);
  return value;
}

/**
 * Formats milli-yuan as a decimal yuan string with at least two and at most three decimals:
 * 5000 → "5.00", 1125 → "1.125", -300 → "-0.30". The graph's `Money.amount`.
 * @param {number} milli
 * @returns {string}
 * @throws {RangeError} when `milli` is not a safe integer
 */
export function formatYuan(milli) {
  assertMilli(milli);
  const sign = milli < 0 ? "-" : "";
  const abs = Math.abs(milli);
  const whole = Math.floor(abs / MILLI_PER_YUAN);
  const frac = String(abs % MILLI_PER_YUAN).padStart(3, "0");
  const decimals = frac.endsWith("0") ? frac.slice(0, 2) : frac;
  return `${sign}${whole}.${decimals}`;
}

/**
 * The one strict reader of money written as text (docs/api/cloud.md "Admin", README "CLI"): a
 * decimal yuan amount ("12.5", "0.125", "30") into milli-yuan. ASCII digits, at most 12 before
 * the point and 1-3 after it, an optional leading `-` (the caller's domain rule judges the sign);
 * nothing else: no whitespace (`" 5"`, `"5\n"`), no `+`, no exponent, no `.5` or `5.`, no
 * digit separators. A JSON number is read through its shortest decimal text (12.5 → "12.5").
 * @param {string | number} value
 * @returns {number} the integer amount
 * @throws {RangeError} when the value is not such a decimal
 */
export function parseYuan(value) {
  const text = typeof value === "number" ? String(value) : value;
  const match = /^(-)?(\d{1,12})(?:\.(\d{1,3}))?$/.exec(text);
  if (!match) throw new RangeError(`not a yuan amount with at most three decimals: ${value}`);
  const [, minus, whole, frac = ""] = match;
  const milli = Number(whole) * MILLI_PER_YUAN + Number(frac.padEnd(3, "0"));
  return minus ? -milli : milli;
}

/**
 * {@link parseYuan} without the throw: the milli-yuan of a decimal yuan text, or null when it is
 * not one (a form field's check).
 * @param {string | number} value
 * @returns {number | null}
 */
export function readYuan(value) {
  try {
    return parseYuan(value);
  } catch {
    return null;
  }
}

/**
 * The milli-yuan of a graph `Money` (`{ amount: "-0.30" }` → -300), exactly; 0 when there is none.
 * @param {{ amount: string } | null | undefined} money
 * @returns {number}
 */
export function amountMilli(money) {
  return money ? parseYuan(money.amount) : 0;
}

/**
 * A graph `Money` as the JSON number of yuan that REST bodies carry (exact: parsed from the
 * decimal text, at most three decimals): `{ amount: "1.125" }` → 1.125.
 * @param {{ amount: string }} money
 * @returns {number}
 */
export function yuanNumber(money) {
  return Number(money.amount);
}

/**
 * A graph `Money` as the pages show it: "¥1.125" (the service's text after the sign ¥, so
 * "¥-0.30" for a deduction), "—" when there is none.
 * @param {{ amount: string } | null | undefined} money
 * @returns {string}
 */
export function yuanLabel(money) {
  return money ? `¥${money.amount}` : "—";
}

/**
 * Milli-yuan as the console's summaries show a sum: the sign before ¥ (-300 → "-¥0.30",
 * 1125 → "¥1.125").
 * @param {number} milli
 * @returns {string}
 * @throws {RangeError} when `milli` is not a safe integer
 */
export function signedYuanLabel(milli) {
  return `${milli < 0 ? "-" : ""}¥${formatYuan(Math.abs(milli))}`;
}
