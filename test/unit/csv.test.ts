/**
 * The one CSV writer (src/csv.ts): RFC 4180 quoting, and cells a spreadsheet would run as a formula
 * neutralised as the OWASP "CSV Injection" guidance says (issue 20 finding 6). Every document is read
 * back by a CSV parser that is not ours (test/support/spreadsheet-csv.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { csvCell, csvRecordCount, toCsv } from "../../src/csv.ts";
import { parseCsvLikeASpreadsheet } from "../support/spreadsheet-csv.ts";

const HEADER = ["id", "customer_id", "amount"];
/** What a spreadsheet must show for a cell we wrote: the text itself, or the text after a `'` when it would run as a formula. */
const shown = (value: string) => (/^[=+\-@\t\r]/.test(value) && !/^[+-]?\d+(\.\d+)?$/.test(value) ? `'${value}` : value);

describe("csvCell", () => {
  it.each([
    ["=1+2", `"'=1+2"`],
    ["+1+2", `"'+1+2"`],
    ["-1+2", `"'-1+2"`],
    ["@SUM(A1:A9)", `"'@SUM(A1:A9)"`],
    ["\t=1+2", `"'\t=1+2"`],
    ["\r=1+2", `"'\r=1+2"`],
    ['=HYPERLINK("http://x.example","a,b")', `"'=HYPERLINK(""http://x.example"",""a,b"")"`],
  ])("writes %j, which a spreadsheet would run, as quoted text after a single quote: %s", (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });

  it.each([
    ["-30.00", "-30.00"],
    ["+5", "+5"],
    ["12.5", "12.5"],
    ["cust-42", "cust-42"],
    ["a=b", "a=b"],
    ['acme,"west"', `"acme,""west"""`],
    ["two\nlines", `"two\nlines"`],
    ["", ""],
    [null, ""],
  ])("writes %j as %s (plain numbers and ordinary text as they are, RFC 4180 quoting where needed)", (value, cell) => {
    expect(csvCell(value)).toBe(cell);
  });
});

describe("toCsv read back by a spreadsheet-style parser", () => {
  it("shows every dangerous cell as text beginning with ' and every other cell exactly as written", () => {
    const rows = [
      ["txn_1", "=1+2", "-30.00"],
      ["txn_2", "@cmd|' /C calc'!A0", "2.00"],
      ["txn_3", 'acme,"west"', "+5"],
      ["txn_4", "line\r\nbreak", "0.00"],
      ["txn_5", "\t-2+3", "1.25"],
      ["txn_6", null, "-0.50"],
    ];
    const [records] = parseCsvLikeASpreadsheet([toCsv(HEADER, rows)]);
    expect(records).toEqual([
      HEADER,
      ["txn_1", "'=1+2", "-30.00"],
      ["txn_2", "'@cmd|' /C calc'!A0", "2.00"],
      ["txn_3", 'acme,"west"', "+5"],
      ["txn_4", "line\r\nbreak", "0.00"],
      ["txn_5", "'\t-2+3", "1.25"],
      ["txn_6", "", "-0.50"],
    ]);
  });

  it("round-trips any text: the parser reads back each cell, neutralised when it would run as a formula", () => {
    const cell = fc.oneof(fc.string(), fc.string({ unit: fc.constantFrom("=", "+", "-", "@", "\t", "\r", "\n", ",", '"', "'", "1", ".", "a") }));
    const docs = fc.sample(fc.array(fc.tuple(cell, cell, cell), { maxLength: 5 }), 200);
    const parsed = parseCsvLikeASpreadsheet(docs.map((rows) => toCsv(HEADER, rows)));
    docs.forEach((rows, i) => {
      expect(parsed[i]).toEqual([HEADER, ...rows.map((row) => row.map(shown))]);
    });
  });

  it("counts records by their line breaks outside quoted cells", () => {
    expect(csvRecordCount(toCsv(HEADER, []))).toBe(1);
    expect(
      csvRecordCount(
        toCsv(HEADER, [
          ["a", "b\nc", '"\n"'],
          ["d", "e", "f"],
        ]),
      ),
    ).toBe(3);
    expect(csvRecordCount("")).toBe(0);
  });

  it("refuses a record whose cells do not match the header", () => {
    expect(() => toCsv(HEADER, [["only", "two"]])).toThrow(RangeError);
  });
});
