/**
 * The billing check table of docs/api/generation.md §4 ("Billing", "Checks"), row by row through the
 * REST API: the submission's `amount` and the drop in the balance are both exact (docs/architecture.md §3:
 * integer milli-yuan inside, yuan with at most three decimals outside).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";

/** Yuan with at most three decimals → integer milli-yuan, exactly. */
const milli = (yuan: number) => Math.round(yuan * 1000);

interface Row {
  name: string;
  path: "/api/v1/video/generations" | "/api/v1/images/generations";
  body: Record<string, unknown>;
  amount: number;
}

const video = (name: string, body: Record<string, unknown>, amount: number): Row => ({
  name,
  path: "/api/v1/video/generations",
  body: { prompt: `billing check: ${name}`, ...body },
  amount,
});
const image = (count: number, amount: number): Row => ({
  name: `image ×${count}`,
  path: "/api/v1/images/generations",
  body: { prompt: `billing check: image ×${count}`, model_id: 45, count },
  amount,
});

const ROWS: Row[] = [
  video("model 52, 5 s, ×1", { model_id: 52, seconds: 5, count: 1 }, 5),
  video("model 52, 15 s, ×4", { model_id: 52, seconds: 15, count: 4 }, 60),
  video("model 67, 480P, 30 s, ×1", { model_id: 67, resolution: "480P", seconds: 30, count: 1 }, 30),
  video("model 67, 720P, 30 s, ×1", { model_id: 67, resolution: "720P", seconds: 30, count: 1 }, 60),
  video("model 69, 4 s, 480P", { model_id: 69, seconds: 4, resolution: "480P" }, 0.75),
  video("model 69, 4 s, 720P", { model_id: 69, seconds: 4, resolution: "720P" }, 1.5),
  video("model 69, 4 s, 1080P", { model_id: 69, seconds: 4, resolution: "1080P" }, 3),
  video("model 51, 8 s, ×2", { model_id: 51, seconds: 8, count: 2 }, 16),
  video("model 39, 5 s, ×2", { model_id: 39, seconds: 5, count: 2 }, 4),
  video("model 39, 15 s, ×4", { model_id: 39, seconds: 15, count: 4 }, 24),
  image(1, 0.3),
  image(2, 0.6),
  image(3, 0.9),
  image(4, 1.2),
  // docs/architecture.md §3: points are rounded up per item, so a 6 s 480P item is ceil(9) = 9 points.
  video("model 69, 6 s, 480P", { model_id: 69, seconds: 6, resolution: "480P" }, 1.125),
  video("model 69, 5 s, 480P (7.5 points round up to 8)", { model_id: 69, seconds: 5, resolution: "480P" }, 1),
  video("model 69, 5 s, 480P, ×3", { model_id: 69, seconds: 5, resolution: "480P", count: 3 }, 3),
  video("model 52 with every default (5 s, ×1)", {}, 5),
];

describe("the spec's billing check table through the REST API", () => {
  let t: TestStack;
  let key: string;

  beforeAll(async () => {
    t = await startTestStack();
    ({ key } = await t.createKey("1000"));
  });
  afterAll(() => t?.close());

  async function balanceMilli(): Promise<number> {
    const usage = await t.rest("GET", "/api/v1/usage", { key });
    expect(usage.status).toBe(200);
    return milli(usage.body.data.balance);
  }

  it.each(ROWS)("charges exactly $amount yuan for $name", async ({ path, body, amount }) => {
    const before = await balanceMilli();
    const response = await t.rest("POST", path, { key, body });
    expect(response.status).toBe(200);
    expect(response.body.code).toBe(200);
    expect(response.body.data.status).toBe(0);
    expect(response.body.data.amount).toBe(amount);
    expect(before - (await balanceMilli())).toBe(milli(amount));
  });

  it("ends with the balance down by exactly the sum of the table and every task charged its price", async () => {
    const total = ROWS.reduce((sum, row) => sum + milli(row.amount), 0);
    expect(await balanceMilli()).toBe(1_000_000 - total);
    const usage = await t.rest("GET", "/api/v1/usage?limit=100", { key });
    expect(usage.body.data.tasks).toHaveLength(ROWS.length);
    expect(milli(usage.body.data.spent)).toBe(total);
  });
});
