/**
 * CSV text for exports a person opens in a spreadsheet (the cloud statement export, docs/api/cloud.md
 * §4 `GET /billing/statements/{statement_id}/export`): RFC 4180 quoting, and cells a spreadsheet
 * would run as a formula neutralised as the OWASP "CSV Injection" guidance says. No CSV library is
 * installed (csv-stringify ≥ 6.3 with `escape_formulas` would be the candidate: it prefixes the `'`,
 * but does not quote the cell and would also prefix amounts such as "-30.00" given as text), so
 * this is the one place that writes CSV; test/unit/csv.test.ts checks it against a
 * spreadsheet-style parser.
 */

/** A cell a spreadsheet may read as a formula or DDE call: it begins with `=`, `+`, `-`, `@`, tab or CR. */
const FORMULA_START = /^[=+\-@\t\r]/;
/** A plain decimal number (`-30.00`, `+5`): a spreadsheet reads it as a number, never a formula, so it is kept as it is. */
const PLAIN_NUMBER = /^[+-]?\d+(\.\d+)?$/;
/** Characters that make RFC 4180 quote a cell. */
const NEEDS_QUOTES = /[",\r\n]/;

const quoted = (text: string) => `"${text.replace(/"/g, '""')}"`;

/**
 * One cell of a CSV record.
 * @param value the cell's text; null or undefined for an empty cell
 * @returns the text as it goes between the commas: a cell beginning with `=`, `+`, `-`, `@`, tab or
 *   CR (other than a plain decimal number) gets a leading `'` and quotes, so a spreadsheet shows it as
 *   text; a cell holding a comma, a double quote, CR or LF is quoted with its quotes doubled (RFC 4180
 *   §2.6, §2.7); any other cell is written as it is
 */
export function csvCell(value: string | null | undefined): string {
  if (value == null) return "";
  if (FORMULA_START.test(value) && !PLAIN_NUMBER.test(value)) return quoted(`'${value}`);
  return NEEDS_QUOTES.test(value) ? quoted(value) : value;
}

/**
 * A CSV document: the header record, then one record per row, each ended by LF.
 * @param header the column names (written through {@link csvCell} too)
 * @param rows the records, each with as many cells as the header
 * @returns the text
 * @throws RangeError when a row has another number of cells than the header
 */
export function toCsv(header: readonly string[], rows: readonly (readonly (string | null | undefined)[])[]): string {
  const lines = [header, ...rows].map((cells) => {
    if (cells.length !== header.length) throw new RangeError(`CSV record of ${cells.length} cells under a header of ${header.length}`);
    return cells.map(csvCell).join(",");
  });
  return `${lines.join("\n")}\n`;
}

/**
 * How many records a CSV text written by {@link toCsv} holds, header included: its line breaks
 * outside quoted cells (a quoted cell may hold a line break of its own).
 * @returns the count (0 for empty text)
 */
export function csvRecordCount(text: string): number {
  let records = 0;
  let inQuotes = false;
  // A doubled quote inside a quoted cell toggles twice: no change.
  for (const c of text) {
    if (c === '"') inQuotes = !inQuotes;
    else if (c === "\n" && !inQuotes) records++;
  }
  return text.length > 0 && !text.endsWith("\n") ? records + 1 : records;
}
