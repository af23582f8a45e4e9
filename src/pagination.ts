/**
 * Keyset pagination shared by every list (docs/architecture.md §7-8): opaque cursors over a stable ordering,
 * so pages never skip or repeat rows while new rows arrive.
 */
import type { Knex } from "knex";
import { AppError } from "./errors.ts";
import { parseInteger } from "./integers.ts";

// The sizes live in one dependency-free module that the pages load too (ADR 0026).
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./shared/page-size.js";

export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./shared/page-size.js";

/**
 * The one page-size rule (docs/api/generation.md §4, docs/api/cloud.md §4): an integer from 1 to
 * {@link MAX_PAGE_SIZE}, else 400 with one message. Above the maximum is refused, never capped: a
 * client asking for 500 learns it got at most 100 instead of reading a short page as the end.
 * @param field the argument or query parameter as the client spelled it (`first`, `last`, `limit`)
 * @returns the error for `value`, or null when it is a valid page size
 */
export function pageSizeError(value: unknown, field: string): AppError | null {
  if (typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_PAGE_SIZE) return null;
  const tooLarge = typeof value === "number" && value > MAX_PAGE_SIZE;
  return new AppError(tooLarge ? "page_size_too_large" : "invalid_request", `${field} must be an integer from 1 to ${MAX_PAGE_SIZE}`, {
    field,
    limit: MAX_PAGE_SIZE,
  });
}

/**
 * Reads a page size: absent (null, undefined or "") is {@link DEFAULT_PAGE_SIZE}; a string (a REST
 * query parameter) must be decimal digits (src/integers.ts `parseInteger`: `1e2`, `0x10`, ` 5`
 * and `5.0` are refused); digits beyond any safe integer are "too large".
 * @throws AppError from {@link pageSizeError}
 */
export function pageSize(value: number | string | null | undefined, field = "first"): number {
  if (value == null || value === "") return DEFAULT_PAGE_SIZE;
  const size = typeof value === "string" ? (parseInteger(value) ?? (/^\d+$/.test(value) ? Number.POSITIVE_INFINITY : Number.NaN)) : value;
  const error = pageSizeError(size, field);
  if (error) throw error;
  return size;
}

/**
 * A page request: `first` 1-100 items after the opaque cursor `after`, or, `backward`, the
 * `first` items nearest the end of the list or before the cursor `before` (Relay `last`).
 */
export interface PageRequest {
  first: number;
  after?: string | null;
  /** Page backward: the items just before this cursor (implies `backward`). */
  before?: string | null;
  /** Page backward from the end of the list (Relay `last`, {@link keysetPage}). */
  backward?: boolean;
}

/** A page of items with each item's cursor, in list order. */
export interface Page<T> {
  items: T[];
  cursors: string[];
  hasNextPage: boolean;
  /** Items precede the page (set by {@link keysetPage}; absent: false). */
  hasPreviousPage?: boolean;
  /** Exact when stored; else counted up to {@link COUNT_BOUND} (docs/architecture.md §7.2). */
  totalCount: number;
}

/**
 * The most rows a list's `totalCount` counts when the list has no stored count (a filtered list):
 * a longer list reports this many, so a page never costs a scan of a whole history
 * (docs/architecture.md §7.2). The unfiltered lists that grow with history (a key's tasks, an
 * account's orders) pass their stored running total instead (src/ledger/totals.ts).
 */
export const COUNT_BOUND = 10_000;

/** Where a page's `totalCount` comes from: a stored running total, or (absent) a bounded count. */
export interface PageCount {
  /** Reads the stored count of the unfiltered list: one row, instead of counting the list. */
  stored?: () => Promise<number>;
  /**
   * The column under which the `firstPage` statement reads the stored count along with its rows
   * (the same value on every row): the first page and its count are then one statement and one
   * snapshot. An empty first page carries no row to read it from: `stored` reads it then.
   */
  firstPageColumn?: string;
}

/**
 * What one value of a cursor must be, as the column it is compared with stores it (src/db/migrations):
 * - `time`: an ISO 8601 date-time text of at most 30 characters (`created_at`, as `nowIso` writes it);
 * - `serial`: an integer from 0 to 2^31 - 1 (an `increments` id: PostgreSQL `integer`);
 * - `id`: a text of 1-64 characters without U+0000 (which PostgreSQL text cannot hold) or a lone
 *   surrogate half (ids, customer ids: any id a row may hold, those stored under older rules too).
 */
export type CursorValueType = "time" | "serial" | "id";

/** One ordering column of a keyset and the type of its cursor value. */
export interface KeysetColumn {
  column: string;
  type: CursorValueType;
}

/**
 * The ordering of a list: columns most significant first, all descending, the last unique. A
 * cursor is read against it, so a value of the wrong type never reaches SQL (on PostgreSQL an
 * integer column compared with `"abc"`, `1.5` or `1e400` is a database error, a 500).
 */
export type Keyset = readonly KeysetColumn[];

/** Newest first by `created_at`, the id breaking ties (most lists); `table` qualifies the columns. */
export function byCreation(table?: string): Keyset {
  const name = (column: string) => (table ? `${table}.${column}` : column);
  return [
    { column: name("created_at"), type: "time" },
    { column: name("id"), type: "id" },
  ];
}

/** Highest first by an integer serial column (ledger entries, webhook deliveries). */
export function bySerial(column = "id"): Keyset {
  return [{ column, type: "serial" }];
}

/** The longest cursor read, with room to spare: the longest keyset (an account id and a customer id of 64 characters) encodes to about 330. */
export const MAX_CURSOR_LENGTH = 512;

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;
/** U+0000 or a lone surrogate half (in `u` mode only an unpaired half is `Cs`). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is what this refuses
const NOT_ID_TEXT = /[\u0000\p{Cs}]/u;

/** Whether a decoded cursor value is of the type its column needs. */
function isCursorValue(value: unknown, type: CursorValueType): value is string | number {
  switch (type) {
    case "serial":
      return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 2 ** 31 - 1;
    case "time":
      return typeof value === "string" && value.length <= 30 && ISO_TIME.test(value) && Number.isFinite(Date.parse(value));
    case "id":
      return typeof value === "string" && value.length >= 1 && value.length <= 64 && !NOT_ID_TEXT.test(value);
  }
}

/** Encodes the ordering values of a row as an opaque cursor (base64url of a JSON array). */
export function encodeCursor(values: (string | number)[]): string {
  return Buffer.from(JSON.stringify(values)).toString("base64url");
}

/**
 * Decodes a cursor made by {@link encodeCursor} for a keyset: base64url text of at most
 * {@link MAX_CURSOR_LENGTH} characters holding a JSON array with one value per column, each of
 * its column's type ({@link CursorValueType}). Anything else is refused, never read as an empty
 * page (docs/api/cloud.md §4, docs/architecture.md §7).
 * @returns the values, in the keyset's order
 * @throws AppError `invalid_request` `cursor is not valid` (field `cursor`) for anything else
 */
export function decodeCursor(cursor: string, keyset: Keyset): (string | number)[] {
  if (cursor.length <= MAX_CURSOR_LENGTH && /^[A-Za-z0-9_-]+={0,2}$/.test(cursor)) {
    try {
      const values: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
      if (Array.isArray(values) && values.length === keyset.length && keyset.every((key, i) => isCursorValue(values[i], key.type))) return values;
    } catch {
      /* fall through */
    }
  }
  throw new AppError("invalid_request", "cursor is not valid", { field: "cursor" });
}

/**
 * Runs a keyset-paginated query, newest (or highest) first, in either direction (Relay cursor
 * connections): forward, `first` items after `after`; backward, the `first` items before
 * `before` (or the last ones of the list), read in ascending order and handed back in list order.
 * The cursor's own row is read too (one row more, no extra statement): when it is still in the
 * list, items lie on the cursor's side (`hasPreviousPage` forward, `hasNextPage` backward); when
 * it has left the list (a filter no longer matches it) that flag is false, as Relay allows.
 * @param query the filtered query (not ordered, not limited); it is cloned
 * @param keyset the ordering ({@link Keyset}: columns most significant first, all descending,
 *   the last unique) and the type of each cursor value
 * @param page `first` and `after`, or `first`, `backward` and `before`
 * @param toItem converts a row
 * @param count where `totalCount` comes from: `stored` (a running total of the unfiltered list),
 *   else the filtered query counted up to {@link COUNT_BOUND}
 * @param firstPage reads the first `limit` rows of the list forward (the rows `query` ordered
 *   by `keyset` would give): used for the first page forward with no cursor, the common one,
 *   with fixed SQL text instead of the query builder (src/db/rows.ts)
 * @returns the page, its cursors, both page flags and the total count
 * @throws AppError `invalid_request` for a bad cursor
 */
export async function keysetPage<T, Row>(
  query: Knex.QueryBuilder,
  keyset: Keyset,
  page: PageRequest,
  toItem: (row: Row) => T,
  count: PageCount = {},
  firstPage?: (limit: number) => Promise<Row[]>,
): Promise<Page<T>> {
  const columns = keyset.map((key) => key.column);
  const backward = page.backward === true || page.before != null;
  const cursor = backward ? page.before : page.after;
  const at = cursor ? decodeCursor(cursor, keyset) : null;
  const readCount = () => (count.stored ? count.stored() : boundedCount(query));
  const first = firstPage !== undefined && !at && !backward;
  const rowsRead = (first ? firstPage(page.first + 1) : rowsOf(query, columns, page, at, backward)) as Promise<Record<string, string | number>[]>;
  let rows: Record<string, string | number>[];
  let totalCount: number;
  if (first && count.firstPageColumn) {
    // The count came with the page; an empty page carries no row to read it from.
    rows = await rowsRead;
    totalCount = rows.length > 0 ? Number(rows[0]![count.firstPageColumn]) : await readCount();
  } else [rows, totalCount] = await Promise.all([rowsRead, readCount()]);
  const unqualified = columns.map((c) => c.split(".").pop()!);
  const cursorRowKept = at !== null && rows.length > 0 && unqualified.every((c, i) => String(rows[0]![c]) === String(at[i]));
  if (cursorRowKept) rows = rows.slice(1);
  const pageRows = rows.slice(0, page.first);
  if (backward) pageRows.reverse();
  const more = rows.length > page.first;
  // Cursors are encoded when first read: a connection asked for `nodes` only never needs them.
  let cursors: string[] | undefined;
  return {
    items: pageRows.map((row) => toItem(row as Row)),
    get cursors() {
      if (!cursors) cursors = pageRows.map((row) => encodeCursor(unqualified.map((c) => row[c]!)));
      return cursors;
    },
    hasNextPage: backward ? cursorRowKept : more,
    hasPreviousPage: backward ? more : cursorRowKept,
    totalCount,
  };
}

/** One page's rows through the query builder: ordered by the keyset, from the cursor `at` on. */
function rowsOf(query: Knex.QueryBuilder, columns: string[], page: PageRequest, at: (string | number)[] | null, backward: boolean): Knex.QueryBuilder {
  const rowsQuery = query
    .clone()
    .orderBy(columns.map((column) => ({ column, order: backward ? ("asc" as const) : ("desc" as const) })))
    .limit(page.first + (at ? 2 : 1));
  if (at) {
    const condition = cursorSql(columns, at, backward ? ">" : "<", true);
    rowsQuery.andWhereRaw(condition.sql, condition.bindings);
  }
  return rowsQuery;
}

/** The rows of a filtered query, counted up to {@link COUNT_BOUND}: at most that many index entries read. */
async function boundedCount(query: Knex.QueryBuilder): Promise<number> {
  const capped = query.clone().clearSelect().clearOrder().select(query.client.raw("1 as one")).limit(COUNT_BOUND);
  const [{ n }] = await query.client.queryBuilder().count({ n: "*" }).from(capped.as("bounded"));
  return Number(n);
}

/**
 * The cursor condition `(c1, c2, ...) < (v1, v2, ...)` (or `>`, `<=`, `>=`) written portably
 * (nested OR/AND, no row-value comparison) as SQL with bindings: the one builder of every keyset page.
 * @param op `<` for the rows after the cursor in a descending list, `>` for those before it
 * @param inclusive the cursor's own row matches too
 */
function cursorSql(columns: string[], values: (string | number)[], op: "<" | ">", inclusive = false): { sql: string; bindings: (string | number)[] } {
  const terms: string[] = [];
  const bindings: (string | number)[] = [];
  columns.forEach((column, i) => {
    const parts: string[] = [];
    for (let j = 0; j < i; j++) {
      parts.push("?? = ?");
      bindings.push(columns[j]!, values[j]!);
    }
    parts.push(`?? ${op}${inclusive && i === columns.length - 1 ? "=" : ""} ?`);
    bindings.push(column, values[i]!);
    terms.push(`(${parts.join(" and ")})`);
  });
  return { sql: `(${terms.join(" or ")})`, bindings };
}

/**
 * The same page of each of many parents' lists in one SQL statement (no N+1: a DataLoader hands
 * it every parent of a request): `first` items per parent after the cursor `after`, newest (or
 * highest) first, with each parent's total count (reported up to {@link COUNT_BOUND}, like
 * every unstored count; it is meant for short child lists such as a vendor's products, whose rows
 * it reads whole). Window functions (PostgreSQL; SQLite 3.25+):
 * every row of the parents is numbered within its parent by the ordering, counting only the rows
 * past the cursor, and the first `first + 1` of those are kept.
 * @param query the filtered query (not ordered, not limited; it is cloned), selecting `*`
 * @param parentColumn the column naming each row's parent (for example `vendor_id`)
 * @param parentIds the parents (duplicates allowed)
 * @param keyset the ordering as in {@link keysetPage}
 * @param page `first` and `after` (one cursor for every parent)
 * @param toItem converts a row (it also carries the helper columns `_rank`, `_total`, `_after`)
 * @returns each parent's page (an empty page for a parent without rows)
 * @throws AppError `invalid_request` (field `cursor`) for a bad cursor
 */
export async function keysetPagesByParent<T, Row>(
  db: Knex,
  query: Knex.QueryBuilder,
  parentColumn: string,
  parentIds: readonly string[],
  keyset: Keyset,
  page: PageRequest,
  toItem: (row: Row) => T,
): Promise<Map<string, Page<T>>> {
  const columns = keyset.map((key) => key.column);
  const pages = new Map<string, Page<T>>();
  const ids = [...new Set(parentIds)];
  for (const id of ids) pages.set(id, { items: [], cursors: [], hasNextPage: false, totalCount: 0 });
  if (ids.length === 0) return pages;
  const order = columns.map(() => "?? desc").join(", ");
  const window = `partition by ?? order by ${order}`;
  const windowBindings = [parentColumn, ...columns];
  const ranked = query
    .clone()
    .whereIn(parentColumn, ids)
    .select(db.raw(`count(*) over (partition by ??) as _total`, [parentColumn]));
  if (page.after) {
    const cursor = cursorSql(columns, decodeCursor(page.after, keyset), "<");
    // Rows at or before the cursor are counted (for the total) but not ranked.
    ranked.select(
      db.raw(`sum(case when ${cursor.sql} then 1 else 0 end) over (${window} rows between unbounded preceding and current row) as _rank`, [
        ...cursor.bindings,
        ...windowBindings,
      ]),
      db.raw(`case when ${cursor.sql} then 1 else 0 end as _after`, cursor.bindings),
    );
  } else {
    ranked.select(db.raw(`row_number() over (${window}) as _rank`, windowBindings), db.raw("1 as _after"));
  }
  const rows = await db
    .select("*")
    .from(ranked.as("ranked"))
    .where("_after", 1)
    .andWhere("_rank", "<=", page.first + 1)
    .orderBy([{ column: parentColumn }, ...columns.map((column) => ({ column, order: "desc" as const }))]);
  const unqualified = columns.map((c) => c.split(".").pop()!);
  const parentKey = parentColumn.split(".").pop()!;
  for (const row of rows) {
    const target = pages.get(String(row[parentKey]))!;
    target.totalCount = Math.min(Number(row._total), COUNT_BOUND);
    if (Number(row._rank) > page.first) {
      target.hasNextPage = true;
      continue;
    }
    target.items.push(toItem(row));
    target.cursors.push(encodeCursor(unqualified.map((c) => row[c])));
  }
  // A parent whose rows all lie at or before the cursor returned no row, yet has a total: one
  // more statement (for all such parents at once) when a cursor leaves any parent empty.
  const empty = page.after ? ids.filter((id) => pages.get(id)!.items.length === 0) : [];
  if (empty.length) {
    const counts = await query.clone().clearSelect().whereIn(parentColumn, empty).groupBy(parentColumn).select(parentColumn).count({ n: "*" });
    for (const count of counts as Record<string, string | number>[]) pages.get(String(count[parentKey]))!.totalCount = Math.min(Number(count.n), COUNT_BOUND);
  }
  return pages;
}

/**
 * The first `first` rows of each of many parents in one SQL statement, newest (or highest)
 * first: {@link keysetPagesByParent} without a cursor, as plain lists.
 * @returns each parent's rows (an empty list for a parent without rows)
 */
export async function firstRowsByParent<Row>(
  db: Knex,
  query: Knex.QueryBuilder,
  parentColumn: string,
  parentIds: readonly string[],
  keyset: Keyset,
  first: number,
): Promise<Map<string, Row[]>> {
  const pages = await keysetPagesByParent(db, query, parentColumn, parentIds, keyset, { first }, (row: Row) => row);
  return new Map([...pages].map(([id, page]) => [id, page.items]));
}
