/** `switchyard webhooks resend`: callback deliveries (docs/architecture.md §2). */
import type { Command } from "commander";
import { group, UsageError, withDb, type Act } from "./shared.ts";

/** Registers `webhooks` and its subcommands on the program. */
export function registerWebhookCommands(program: Command, act: Act): void {
  const webhooks = group(program, "webhooks", "callback deliveries");
  act(webhooks.command("resend").description("send a callback delivery again").argument("<DELIVERY_ID>", "numeric delivery id"), async (id) => {
    if (!/^\d+$/.test(id!)) throw new UsageError("webhooks resend needs a numeric DELIVERY_ID");
    await withDb(async (db) => {
      const { resendDelivery } = await import("../../src/events/deliveries.ts");
      await resendDelivery(db, Number(id));
      console.log(`delivery ${id} queued to be sent again`);
    });
  });
}
