/**
 * The one reader of each kind of input (issue 20 findings 7 and 9): integers (src/integers.ts),
 * money (src/money.ts `parseYuan`), page sizes and cursors (src/pagination.ts), blank text
 * (src/text.ts) and the numeric settings (src/config.ts). The doors that use them are tested in
 * test/integration/strict-input.test.ts and test/e2e/cli-strict-input.test.ts.
 */
import { describe, expect, it } from "vitest";
import { parseInteger } from "../../src/integers.ts";
import { parseYuan } from "../../src/money.ts";
import { byCreation, bySerial, decodeCursor, encodeCursor, pageSize, type Keyset } from "../../src/pagination.ts";
import { hasInvisible, isBlank } from "../../src/text.ts";
import { loadConfig } from "../../src/config.ts";
import { INVISIBLE_TEXTS } from "../support/invisible.ts";
import { appErrorThrownBy as appErrorOf } from "../support/errors.ts";

describe("parseInteger", () => {
  it.each(["1e2", "0x10", " 5", "5 ", "5\n", "+5", "5.0", "1_000", "1,000", "", "-", "Infinity", "NaN", "５", "٥", "99999999999999999"])(
    "refuses %j",
    (text) => {
      expect(parseInteger(text)).toBeNull();
    },
  );

  it("reads decimal digits, leading zeros included, and a minus only when the range has negatives", () => {
    expect(parseInteger("42")).toBe(42);
    expect(parseInteger("007")).toBe(7);
    expect(parseInteger("-9")).toBe(-9);
    expect(parseInteger("-0")).toBe(0);
    expect(Object.is(parseInteger("-0"), 0)).toBe(true);
    expect(parseInteger("-9", { min: 0, max: 10 })).toBeNull();
    expect(parseInteger(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("keeps to the range, both ends inclusive", () => {
    expect(parseInteger("1", { min: 1, max: 100 })).toBe(1);
    expect(parseInteger("100", { min: 1, max: 100 })).toBe(100);
    expect(parseInteger("0", { min: 1, max: 100 })).toBeNull();
    expect(parseInteger("101", { min: 1, max: 100 })).toBeNull();
  });
});

describe("parseYuan", () => {
  it.each([" 5", "5\n", "5 ", "\t5", "+5", "5e1", "0x10", ".5", "5.", "5.0000", "1,000", "1_000", "５", "", "-", "1234567890123"])("refuses %j", (text) => {
    expect(() => parseYuan(text)).toThrow(RangeError);
  });

  it("reads plain decimals with at most three decimals into milli-yuan", () => {
    expect(parseYuan("5")).toBe(5_000);
    expect(parseYuan("30.00")).toBe(30_000);
    expect(parseYuan("0.125")).toBe(125);
    expect(parseYuan("-1.5")).toBe(-1_500);
    expect(parseYuan(12.5)).toBe(12_500);
  });
});

describe("pageSize", () => {
  it.each(["1e2", "0x10", " 5", "5.0", "+5", "-1", "0"])("refuses %j with 400 invalid_request", (text) => {
    expect(appErrorOf(() => pageSize(text, "limit"))).toMatchObject({ code: "invalid_request", message: "limit must be an integer from 1 to 100" });
  });

  it("calls digits beyond 100, however many, too large", () => {
    for (const text of ["101", "99999999999999999999"]) expect(appErrorOf(() => pageSize(text, "limit"))).toMatchObject({ code: "page_size_too_large" });
  });

  it("reads absent as 20 and digits as their value", () => {
    expect(pageSize(null, "limit")).toBe(20);
    expect(pageSize("", "limit")).toBe(20);
    expect(pageSize("007", "limit")).toBe(7);
  });
});

describe("decodeCursor", () => {
  const b64 = (json: string) => Buffer.from(json).toString("base64url");
  const refused = (cursor: string, keyset: Keyset) => appErrorOf(() => decodeCursor(cursor, keyset));

  it("reads back what encodeCursor wrote for each keyset", () => {
    const time = "2026-11-26T17:00:00.123Z";
    expect(decodeCursor(encodeCursor([time, "task_lq2x9k3a_8f3c0d2b1e7a"]), byCreation())).toEqual([time, "task_lq2x9k3a_8f3c0d2b1e7a"]);
    expect(decodeCursor(encodeCursor([2 ** 31 - 1]), bySerial())).toEqual([2 ** 31 - 1]);
    const wallets: Keyset = [
      { column: "account_id", type: "id" },
      { column: "customer_id", type: "id" },
    ];
    expect(decodeCursor(encodeCursor(["acc_1", "客户-42😀"]), wallets)).toEqual(["acc_1", "客户-42😀"]);
  });

  it.each([
    ["text", '["abc"]'],
    ["a fraction", "[1.5]"],
    ["1e400", "[1e400]"],
    ["2^31", "[2147483648]"],
    ["a negative", "[-1]"],
    ["two values", "[1,2]"],
    ["null", "[null]"],
  ])("refuses %s where a serial id goes", (_, json) => {
    expect(refused(b64(json), bySerial())).toMatchObject({ code: "invalid_request", message: "cursor is not valid", details: { field: "cursor" } });
  });

  it.each([
    ["text where the time goes", '["abc","task_1"]'],
    ["a date without a time", '["2026-01-01","task_1"]'],
    ["an impossible time", '["2026-13-45T99:99:99.999Z","task_1"]'],
    ["a number where the id goes", '["2026-01-01T00:00:00.000Z",5]'],
    ["an empty id", '["2026-01-01T00:00:00.000Z",""]'],
    ["an id of 65 characters", `["2026-01-01T00:00:00.000Z","${"x".repeat(65)}"]`],
    ["an id with NUL", '["2026-01-01T00:00:00.000Z","a\\u0000"]'],
    ["an id with a lone surrogate", '["2026-01-01T00:00:00.000Z","a\\ud800"]'],
  ])("refuses %s in a creation-time cursor", (_, json) => {
    expect(refused(b64(json), byCreation())).toMatchObject({ code: "invalid_request", message: "cursor is not valid" });
  });

  it("refuses text that is not base64url, and cursors over 512 characters, without decoding them", () => {
    expect(refused("!!!", bySerial())).toMatchObject({ code: "invalid_request" });
    expect(refused(`${b64("[1]")}${"A".repeat(600)}`, bySerial())).toMatchObject({ code: "invalid_request" });
  });
});

describe("isBlank", () => {
  it.each(["", " ", "\t\n\r", "\u0007", ...INVISIBLE_TEXTS])("calls %j blank", (text) => {
    expect(isBlank(text)).toBe(true);
  });

  it.each(["a", " a ", "\u200Bx", "😀", "👨\u200D👩", "\u0301", "\uD800", "。"])("calls %j not blank", (text) => {
    expect(isBlank(text)).toBe(false);
  });
});

describe("hasInvisible", () => {
  it("finds any white space, control, format or default-ignorable character inside an id", () => {
    for (const text of INVISIBLE_TEXTS) expect(hasInvisible(`cust${text}42`), JSON.stringify(text)).toBe(true);
    for (const text of ["cust-42", "客户42", "😀", "a.b_c:d"]) expect(hasInvisible(text), text).toBe(false);
  });
});

describe("numeric settings", () => {
  it.each(["0x10", "1e3", " 80", "80 ", "+80", "8.0"])("refuses PORT=%j", (value) => {
    expect(() => loadConfig({ PORT: value })).toThrow(/PORT: must be a TCP port/);
  });

  it("reads digits, and an empty value as the default", () => {
    expect(loadConfig({ PORT: "8080", TASK_POLL_BATCH: "007" })).toMatchObject({ port: 8080, taskPollBatch: 7 });
    expect(loadConfig({ PORT: "", TASK_POLL_INTERVAL_MS: "", TASK_DEADLINE_SECONDS: "" })).toMatchObject({
      port: 4000,
      taskPollIntervalMs: 3000,
      taskDeadlineSeconds: undefined,
    });
  });

  it("reads OTEL_TRACES_SAMPLER_ARG as a plain fraction from 0 to 1", () => {
    expect(loadConfig({ OTEL_TRACES_SAMPLER_ARG: "0.25" }).otelSampleRatio).toBe(0.25);
    expect(loadConfig({}).otelSampleRatio).toBe(1);
    for (const value of ["1e-1", " 0.5", ".5", "2", "0x1"])
      expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: value }), value).toThrow(/must be a number from 0 to 1/);
  });
});
