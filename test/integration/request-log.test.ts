/**
 * The request log (docs/api/generation.md §4 `GET /api/v1/usage`, "recent requests"): rows are
 * batched (src/generation/usage.ts), one INSERT per 10 ms instead of one transaction per request,
 * and a key still sees its own requests at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(async () => {
  await t.close();
});

describe("the request log", () => {
  it("writes a burst of 40 requests in fewer INSERTs than requests, and usage lists all of them at once", async () => {
    const { key } = await t.createKey("10");
    let inserts = 0;
    const count = (query: { sql: string }) => {
      if (/^insert into [`"]request_log[`"]/.test(query.sql)) inserts++;
    };
    t.stack.db!.on("query", count);
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => t.rest("GET", `/api/v1/tasks/task_missing${i}`, { key })));
      expect(answers.map((a) => a.status)).toEqual(Array(40).fill(404));
      const usage = await t.rest("GET", "/api/v1/usage?limit=100", { key });
      expect(usage.status).toBe(200);
      const paths = (usage.body.data.recent_requests as { path: string; status: number }[]).filter((r) => r.path.startsWith("/api/v1/tasks/"));
      expect(paths).toHaveLength(40);
      expect(new Set(paths.map((r) => r.status))).toEqual(new Set([404]));
      expect(inserts).toBeGreaterThan(0);
      expect(inserts).toBeLessThan(40);
    } finally {
      t.stack.db!.off("query", count);
    }
  });
});
