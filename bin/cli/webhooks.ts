/** `switchyard webhooks resend`: callback deliveries (docs/architecture.md §2). */
import type { Command } from "commander";
import type { Knex } from "knex";
import { group, integerOption, withDb, type Act } from "./shared.ts";

/** Registers `webhooks` and its subcommands on the program. */
export function registerWebhookCommands(program: Command, act: Act): void {
  const webhooks = group(program, "webhooks", "callback deliveries");
  act(webhooks.command("resend").description("send a callback delivery again").argument("<DELIVERY_ID>", "numeric delivery id"), async (id) => {
    const deliveryId = integerOption(id, "DELIVERY_ID", { min: 1, max: Number.MAX_SAFE_INTEGER }, "webhooks resend needs a numeric DELIVERY_ID")!;
    await withDb(async (db) => {
      const { resendDelivery } = await import("../../src/events/deliveries.ts");
      const { audited, CLI_ACTOR } = await import("../../src/audit/log.ts");
      await audited(db, CLI_ACTOR, { action: "webhooks.resend", objectType: "delivery", objectId: String(deliveryId) }, (trx: Knex.Transaction) =>
        resendDelivery(trx, deliveryId),
      );
      console.log(`delivery ${id} queued to be sent again`);
    });
  });
}
