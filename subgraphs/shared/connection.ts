/** Relay connection helpers shared by the subgraphs (docs/architecture.md §7). */
import { AppError } from "../../src/errors.ts";
import type { Page } from "../../src/pagination.ts";

/** The most items one page may hold. */
export const MAX_PAGE_SIZE = 100;

/**
 * Reads a `first` argument: default 20, capped at {@link MAX_PAGE_SIZE}.
 * @throws AppError `invalid_request` when it is below 1
 */
export function pageSize(first: number | null | undefined, field = "first"): number {
  if (first == null) return 20;
  if (!Number.isInteger(first) || first < 1) throw new AppError("invalid_request", `${field} must be a positive integer`, { field });
  return Math.min(first, MAX_PAGE_SIZE);
}

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
