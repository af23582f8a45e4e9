/** Relay connection helpers shared by the subgraphs (docs/architecture.md §7). */
import { pageSize, type Page } from "../../src/pagination.ts";

/** The arguments of a connection field. */
export type PageArgs = { first?: number | null; after?: string | null };

/**
 * A connection field's arguments as a page request.
 * @throws AppError 400 for a bad `first` (src/pagination.ts `pageSize`, the one page-size rule)
 */
export const pageOf = (args: PageArgs) => ({ first: pageSize(args.first), after: args.after ?? null });

/** A page of nodes (src/pagination.ts) as a Relay connection. */
export function toConnection<T>(page: Page<T>) {
  const edges = page.items.map((node, i) => ({ node, cursor: page.cursors[i]! }));
  return {
    edges,
    nodes: page.items,
    totalCount: page.totalCount,
    pageInfo: { hasNextPage: page.hasNextPage, hasPreviousPage: false, startCursor: page.cursors[0] ?? null, endCursor: page.cursors.at(-1) ?? null },
  };
}
