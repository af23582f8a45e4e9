/**
 * Money (docs/architecture.md §3): integer milli-yuan (0.001 CNY) everywhere inside; never a float.
 */

// The text forms live in one dependency-free module that the pages load too (ADR 0026).
import { formatYuan } from "./shared/money.js";

/** An amount in milli-yuan: an integer. */
export type MilliYuan = number;

export { assertMilli, formatYuan, MILLI_PER_YUAN, parseYuan } from "./shared/money.js";

/**
 * Milli-yuan as a JSON number of yuan for REST bodies (at most three decimals, exact because it
 * is parsed from the decimal string): 1125 → 1.125.
 */
export function toYuanNumber(milli: MilliYuan): number {
  return Number(formatYuan(milli));
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
