import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { composeSupergraph, SUPERGRAPH_FILE } from "../../router/compose.ts";

describe("schema/supergraph.graphql", () => {
  it("is what `npm run compose` produces from the subgraph schemas (run it after changing schema/)", () => {
    expect(fs.readFileSync(SUPERGRAPH_FILE, "utf8")).toBe(composeSupergraph());
  });
});
