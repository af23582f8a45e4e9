/** `switchyard customers topup|credit`: cloud customers' wallets (docs/architecture.md §2). */
import type { Knex } from "knex";
import type { Command } from "commander";
import { formatYuan } from "../../src/money.ts";
import { group, UsageError, withDb, yuanOption, type Act } from "./shared.ts";

/** Registers `customers` and its subcommands on the program. */
export function registerCustomerCommands(program: Command, act: Act): void {
  const customers = group(program, "customers", "cloud customers' wallets: top-ups and credit lines");
  for (const action of ["topup", "credit"] as const) {
    const command = customers
      .command(action)
      .description(action === "topup" ? "a top-up transaction on a cloud customer's wallet" : "set a cloud customer's credit line")
      .argument("<CUSTOMER_ID>", "the customer, inside the account")
      .option("--account <ACCOUNT_ID>", "the account the customer belongs to (required)");
    if (action === "topup") command.option("--amount <YUAN>", "amount in yuan (required)");
    else command.option("--limit <YUAN>", "credit line in yuan, zero or more (required)");
    command.option("--json", "print {customer_id, available, frozen, credit_line, currency} as JSON");
    act(command, async function (customerId) {
      const values = this.opts<{ account?: string; amount?: string; limit?: string; json?: boolean }>();
      if (!values.account) throw new UsageError(`customers ${action} needs CUSTOMER_ID and --account`);
      const amount = action === "topup" ? yuanOption(values.amount, "amount") : undefined;
      if (action === "topup" && (amount === undefined || amount <= 0)) throw new UsageError("customers topup needs a positive --amount");
      const limit = action === "credit" ? yuanOption(values.limit, "limit") : undefined;
      if (action === "credit" && (limit === undefined || limit < 0)) throw new UsageError("customers credit needs --limit of zero or more");
      const accountId = values.account;
      await withDb(async (db) => {
        const { topUpCustomer, setCreditLine, getCustomerBalance } = await import("../../src/cloud/customers.ts");
        const { audited, CLI_ACTOR } = await import("../../src/audit/log.ts");
        // With its audit row in one transaction (src/audit/log.ts).
        const spec = { action: `customers.${action}`, objectType: "customer", objectId: `${accountId}/${customerId}` };
        if (action === "topup") {
          await audited(db, CLI_ACTOR, { ...spec, ledgerEntryOf: (e: { id: number | string }) => Number(e.id) }, (trx: Knex.Transaction) =>
            topUpCustomer(trx, { accountId, customerId: customerId!, amount: amount!, reason: "top-up (CLI)" }),
          );
        } else await audited(db, CLI_ACTOR, spec, (trx: Knex.Transaction) => setCreditLine(trx, accountId, customerId!, limit!));
        const balance = await getCustomerBalance(db, accountId, customerId!);
        const shown = {
          customer_id: customerId,
          available: formatYuan(balance.available),
          frozen: formatYuan(balance.frozen),
          credit_line: formatYuan(balance.creditLine),
          currency: "CNY",
        };
        console.log(
          values.json ? JSON.stringify(shown) : `${customerId}: available ${shown.available}, frozen ${shown.frozen}, credit line ${shown.credit_line} CNY`,
        );
      });
    });
  }
}
