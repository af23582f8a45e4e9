/**
 * Reads CSV back as a spreadsheet does, with a CSV parser that is not ours: Python's standard `csv`
 * module in its `excel` dialect (RFC 4180 quoting, as Excel and LibreOffice read and write it). No
 * CSV parser is installed for Node; `python3` is (README: the build of better-sqlite3 needs it).
 */
import { execFileSync } from "node:child_process";

const READER = `
import csv, io, json, sys
docs = json.load(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8"))
print(json.dumps([list(csv.reader(io.StringIO(doc, newline=""), dialect="excel")) for doc in docs]))
`;

/**
 * Parses CSV documents in one `python3` run.
 * @param docs CSV texts
 * @returns for each document, its records as lists of cell texts (the header first)
 */
export function parseCsvLikeASpreadsheet(docs: readonly string[]): string[][][] {
  const out = execFileSync("python3", ["-c", READER], { input: JSON.stringify(docs), encoding: "utf8" });
  return JSON.parse(out) as string[][][];
}
