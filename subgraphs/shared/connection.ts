/** Relay connection helpers shared by the subgraphs (DESIGN §7). */
import { AppError } from "../../src/errors.ts";

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

/**
 * Builds a connection from a page of nodes.
 * @param cursorOf the opaque cursor of a node
 */
export function toConnection<T>(nodes: T[], hasNextPage: boolean, totalCount: number, cursorOf: (node: T) => string, hasPreviousPage = false) {
  const edges = nodes.map((node) => ({ cursor: cursorOf(node), node }));
  return {
    edges,
    nodes,
    totalCount,
    pageInfo: {
      hasNextPage,
      hasPreviousPage,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}
