// @ts-check
/**
 * Page sizes, written once for the server and the pages (docs/api/generation.md §4,
 * docs/api/cloud.md §4): src/pagination.ts (the page-size rule) imports this file, and
 * router/pages.ts serves it to the pages as `/assets/<version>/page-size.js`. The subgraphs' SDL
 * repeats the default as a literal (`first: Int = 20`); test/unit/page-size.test.ts holds each
 * of those to {@link DEFAULT_PAGE_SIZE}.
 */

/** Items in a page when the client names no size. */
export const DEFAULT_PAGE_SIZE = 20;

/** The most items one page may hold. */
export const MAX_PAGE_SIZE = 100;
