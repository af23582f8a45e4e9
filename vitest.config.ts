import { createRequire } from "node:module";
import { defineConfig } from "vitest/config";

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    alias: [
      // Load `graphql` the way Node does (its CommonJS main), not through its "module" field:
      // the gateway runtime, an external dependency, gets the CommonJS copy, and a second (ESM)
      // copy in our own modules makes graphql's instanceof checks throw "from another module or
      // realm" when the REST shim inspects the gateway's schema.
      { find: /^graphql$/, replacement: require.resolve("graphql") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    // Two cores: two test files at a time keeps servers and SQLite from starving each other.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
