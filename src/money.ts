/**
 * Money (docs/architecture.md §3): integer milli-yuan (0.001 CNY) everywhere inside; never a float.
 */

/** An amount in milli-yuan: an integer. */
export type MilliYuan = number;

/** Milli-yuan in one yuan. */
export const MILLI_PER_YUAN = 1000;

/**
 * Checks that a value is a safe integer amount of milli-yuan.
 * @throws RangeError when it is not (a programming error, never user input)
 */
export function assertMilli(value: number): MilliYuan {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not an integer milli-yuan amount: ${value}`);
  return value;
}

/**
 * Formats milli-yuan as a decimal yuan string with at least two and at most three decimals:
 * 5000 → "5.00", 1125 → "1.125", -300 → "-0.30". Exact: integer arithmetic only.
 */
export function formatYuan(milli: MilliYuan): string {
  assertMilli(milli);
  const sign = milli < 0 ? "-" : "";
  const abs = Math.abs(milli);
  const whole = Math.floor(abs / MILLI_PER_YUAN);
  const frac = String(abs % MILLI_PER_YUAN).padStart(3, "0");
  const decimals = frac.endsWith("0") ? frac.slice(0, 2) : frac;
  return `${sign}${whole}.${decimals}`;
}

/**
 * Milli-yuan as a JSON number of yuan for REST bodies (at most three decimals, exact because it
 * is parsed from the decimal string): 1125 → 1.125.
 */
export function toYuanNumber(milli: MilliYuan): number {
  return Number(formatYuan(milli));
}

/**
 * The one strict reader of money written as text (docs/api/cloud.md "Admin", README "CLI"): a
 * decimal yuan amount ("12.5", "0.125", "30") into milli-yuan. ASCII digits, at most 12 before
 * the point and 1-3 after it, an optional leading `-` (the caller's domain rule judges the sign);
 * nothing else: no whitespace (`" 5"`, `"5\n"`), no `+`, no exponent, no `.5` or `5.`, no
 * digit separators. A JSON number is read through its shortest decimal text (12.5 → "12.5").
 * @returns the integer amount
 * @throws RangeError when the value is not such a decimal
 */
export function parseYuan(value: string | number): MilliYuan {
  const text = typeof value === "number" ? String(value) : value;
  const match = /^(-)?(\d{1,12})(?:\.(\d{1,3}))?$/.exec(text);
  if (!match) throw new RangeError(`not a yuan amount with at most three decimals: ${value}`);
  const [, minus, whole, frac = ""] = match;
  const milli = Number(whole) * MILLI_PER_YUAN + Number(frac.padEnd(3, "0"));
  return minus ? -milli : milli;
}

/** The GraphQL `Money` shape (docs/architecture.md §3). */
export interface Money {
  amount: string;
  currency: "CNY";
}

/** Milli-yuan as GraphQL `Money`. */
export function toMoney(milli: MilliYuan): Money {
  return { amount: formatYuan(milli), currency: "CNY" };
}
