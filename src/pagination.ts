/**
 * Keyset pagination shared by every list (DESIGN §7-8): opaque cursors over a stable ordering,
 * so pages never skip or repeat rows while new rows arrive.
 */
import type { Knex } from "knex";
import { AppError } from "./errors.ts";

/** A page request: `first` 1-100 items after the opaque cursor `after`. */
export interface PageRequest {
  first: number;
  after?: string | null;
}

/** A page of items with each item's cursor. */
export interface Page<T> {
  items: T[];
  cursors: string[];
  hasNextPage: boolean;
  totalCount: number;
}

/** Encodes the ordering values of a row as an opaque cursor. */
export function encodeCursor(values: (string | number)[]): string {
  return Buffer.from(JSON.stringify(values)).toString("base64url");
}

/**
 * Decodes a cursor made by {@link encodeCursor}.
 * @param arity how many ordering values it must hold
 * @throws AppError `invalid_request` (field `cursor`) for anything else
 */
export function decodeCursor(cursor: string, arity: number): (string | number)[] {
  try {
    const values = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(values) && values.length === arity && values.every((v) => typeof v === "string" || typeof v === "number")) return values;
  } catch {
    /* fall through */
  }
  throw new AppError("invalid_request", "cursor is not valid", { field: "cursor" });
}

/**
 * Runs a keyset-paginated query, newest (or highest) first.
 * @param query the filtered query (not ordered, not limited); it is cloned
 * @param columns ordering columns, most significant first, all descending; the last must be unique
 * @param page `first` and `after`
 * @param toItem converts a row
 * @returns the page, its cursors and the total count of the filtered query
 * @throws AppError `invalid_request` for a bad cursor
 */
export async function keysetPage<T>(
  query: Knex.QueryBuilder,
  columns: string[],
  page: PageRequest,
  toItem: (row: any) => T,
): Promise<Page<T>> {
  const rowsQuery = query
    .clone()
    .orderBy(columns.map((column) => ({ column, order: "desc" as const })))
    .limit(page.first + 1);
  if (page.after) {
    const values = decodeCursor(page.after, columns.length);
    // (c1, c2, ...) < (v1, v2, ...) written portably as nested OR/AND.
    rowsQuery.andWhere(function (this: Knex.QueryBuilder) {
      columns.forEach((column, i) => {
        this.orWhere((q) => {
          for (let j = 0; j < i; j++) q.andWhere(columns[j]!, values[j]!);
          q.andWhere(column, "<", values[i]!);
        });
      });
    });
  }
  const countQuery = query.clone().clearSelect().clearOrder().count({ n: "*" });
  const [rows, [{ n }]] = await Promise.all([rowsQuery, countQuery]);
  const pageRows = rows.slice(0, page.first);
  const unqualified = columns.map((c) => c.split(".").pop()!);
  return {
    items: pageRows.map(toItem),
    cursors: pageRows.map((row: any) => encodeCursor(unqualified.map((c) => row[c]))),
    hasNextPage: rows.length > page.first,
    totalCount: Number(n),
  };
}
