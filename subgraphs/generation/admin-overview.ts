/**
 * The admin overview field of the generation subgraph (issue 16 "a live overview";
 * docs/api/generation.md §12): admin token first (401/403), then one bounded read
 * (src/generation/overview.ts).
 */
import { readOverview } from "../../src/generation/overview.ts";
import { toMoney } from "../../src/money.ts";
import type { GenerationContext } from "./context.ts";

/** `Query` resolvers of the admin overview. */
export const adminOverviewQueries = {
  adminOverview: async (_: unknown, { minutes }: { minutes?: number | null }, ctx: GenerationContext) => {
    await ctx.requireAdmin();
    const overview = await readOverview(ctx.db, minutes ?? 60);
    return {
      at: overview.at,
      tasksPerMinute: overview.perMinute,
      window: overview.window,
      today: overview.today,
      revenueToday: toMoney(overview.revenueToday),
      refundsToday: toMoney(overview.refundsToday),
      topUpsToday: toMoney(overview.topUpsToday),
    };
  },
};
