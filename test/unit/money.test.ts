/**
 * Money's text forms (src/shared/money.js, docs/architecture.md §3): the one module that the
 * server (src/money.ts, the REST shims) and the pages (/client, /admin) share (ADR 0026).
 */
import { describe, expect, it } from "vitest";
import * as server from "../../src/money.ts";
import { amountMilli, formatYuan, parseYuan, readYuan, signedYuanLabel, yuanLabel, yuanNumber } from "../../src/shared/money.js";

describe("formatYuan", () => {
  it("writes two decimals, three when the third is not 0, the sign first", () => {
    expect([5000, 1125, -300, 0, 10, 5600, 123_456_789].map(formatYuan)).toEqual(["5.00", "1.125", "-0.30", "0.00", "0.01", "5.60", "123456.789"]);
  });

  it("refuses an amount that is not an integer of milli-yuan", () => {
    expect(() => formatYuan(1.5)).toThrow(RangeError);
    expect(() => formatYuan(Number.NaN)).toThrow(RangeError);
  });

  it("is the function src/money.ts exports to the server", () => {
    expect(server.formatYuan).toBe(formatYuan);
    expect(server.parseYuan).toBe(parseYuan);
    expect(server.toMoney(1125)).toEqual({ amount: "1.125", currency: "CNY" });
    expect(server.toYuanNumber(1125)).toBe(1.125);
  });
});

describe("parseYuan and readYuan", () => {
  it("read a decimal yuan text exactly into milli-yuan", () => {
    expect(["12.5", "0.125", "30", "-0.3", "999999999999.999"].map((text) => parseYuan(text))).toEqual([12_500, 125, 30_000, -300, 999_999_999_999_999]);
    expect(parseYuan(12.5)).toBe(12_500);
  });

  it("refuse anything else: parseYuan throws, readYuan answers null", () => {
    for (const text of [" 5", "5\n", "+5", "1e2", ".5", "5.", "1,000", "0.1234", ""]) {
      expect(() => parseYuan(text)).toThrow(RangeError);
      expect(readYuan(text)).toBeNull();
    }
  });
});

describe("a graph Money", () => {
  it("becomes exact milli-yuan, 0 when there is none", () => {
    expect(amountMilli({ amount: "1.125" })).toBe(1125);
    expect(amountMilli({ amount: "-0.30" })).toBe(-300);
    expect(amountMilli({ amount: "0.10" }) + amountMilli({ amount: "0.20" })).toBe(300);
    expect(amountMilli(null)).toBe(0);
  });

  it("becomes the REST body's JSON number of yuan", () => {
    expect(yuanNumber({ amount: "1.125" })).toBe(1.125);
    expect(yuanNumber({ amount: "-0.30" })).toBe(-0.3);
  });

  it("is shown with ¥ before the service's text, and a dash for none", () => {
    expect(yuanLabel({ amount: "5.60" })).toBe("¥5.60");
    expect(yuanLabel({ amount: "-0.30" })).toBe("¥-0.30");
    expect(yuanLabel(null)).toBe("—");
  });
});

describe("signedYuanLabel", () => {
  it("puts the sign before ¥ (the console's summaries)", () => {
    expect([1125, 5000, -300, 0].map(signedYuanLabel)).toEqual(["¥1.125", "¥5.00", "-¥0.30", "¥0.00"]);
  });
});
