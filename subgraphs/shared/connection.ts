/** Relay connection helpers shared by the subgraphs (docs/architecture.md §7). */
import { AppError } from "../../src/errors.ts";
import { pageSize, type Page, type PageRequest } from "../../src/pagination.ts";

/**
 * The arguments of a connection field: `first`/`after` forward, or `last`/`before` backward
 * (the connections that page one way only declare `first` and `after`).
 */
export type PageArgs = { first?: number | null; after?: string | null; last?: number | null; before?: string | null };

/**
 * A connection field's arguments as a page request: forward (`first`, default 20, after `after`)
 * or backward (`last`, default 20, before `before`), never both.
 * @throws AppError 400 for a bad `first` or `last` (src/pagination.ts `pageSize`, the one
 *   page-size rule); 400 `invalid_request` (field `last` or `before`) when `first` or `after` is
 *   combined with `last` or `before`
 */
export function pageOf(args: PageArgs): PageRequest {
  const backward = args.last != null || args.before != null;
  if (!backward) return { first: pageSize(args.first), after: args.after ?? null };
  if (args.first != null || args.after != null) {
    throw new AppError("invalid_request", "first and after cannot be combined with last and before", { field: args.last != null ? "last" : "before" });
  }
  return { first: pageSize(args.last, "last"), before: args.before ?? null, backward: true };
}

/**
 * A page of nodes (src/pagination.ts) as a Relay connection. Edges and cursors are made when a
 * field reads them (getters): a connection asked for `nodes` and `totalCount` encodes no cursor.
 */
export function toConnection<T>(page: Page<T>) {
  return {
    get edges() {
      return page.items.map((node, i) => ({ node, cursor: page.cursors[i]! }));
    },
    nodes: page.items,
    totalCount: page.totalCount,
    pageInfo: {
      hasNextPage: page.hasNextPage,
      hasPreviousPage: page.hasPreviousPage ?? false,
      get startCursor() {
        return page.cursors[0] ?? null;
      },
      get endCursor() {
        return page.cursors.at(-1) ?? null;
      },
    },
  };
}
