// @ts-check
// The console's wallets, orders and webhook deliveries views (/admin; README "Console"): reads
// across accounts, the money writes on wallets and the resend of a delivery, each through the
// form dialog. `ctx` is the console's: run, can, write, showEntry.
import { $, h, t, when, yuan } from "./common.js";
import { button, cell, checkedMilli, code, fmt, moneyMilli, positiveYuan, table, word, yuanOrZero } from "./admin-forms.js";

/** The fields of a ledger entry a money write answers (a module-level constant: the trusted-documents manifest resolves it). */
const ENTRY = "id accountId customerId keyId kind amount { amount } balanceAfter { amount } orderId reason createdAt";

/** @typedef {import("./admin-forms.js").ConsoleContext} ConsoleContext */
/** @typedef {import("./admin-forms.js").GraphRow} GraphRow */

/**
 * @param {ConsoleContext} ctx
 * @param {GraphRow} w a customer wallet
 */
function walletActions(ctx, w) {
  const topUp = () =>
    ctx.write({
      title: t("admin.topupTitle", { id: w.customerId }),
      fields: [{ name: "amount", label: t("admin.topupAmount"), inputmode: "decimal", check: positiveYuan }],
      summary: ({ amount }) =>
        t("admin.topupSummary", {
          id: `${w.customerId} (${w.accountId})`,
          amount: fmt(checkedMilli(amount)),
          before: fmt(moneyMilli(w.available)),
          after: fmt(moneyMilli(w.available) + checkedMilli(amount)),
        }),
      submit: async ({ amount }) => {
        const data = await ctx.run(`mutation($input: AdminTopUpCustomerInput!) { adminTopUpCustomer(input: $input) { ledgerEntry { ${ENTRY} } } }`, {
          input: { accountId: w.accountId, customerId: w.customerId, amount },
        });
        ctx.showEntry(data.adminTopUpCustomer.ledgerEntry);
        return data;
      },
    });
  const credit = () =>
    ctx.write({
      title: t("admin.creditTitle", { id: w.customerId }),
      fields: [{ name: "limit", label: t("admin.creditPrompt"), value: w.creditLine.amount, inputmode: "decimal", check: yuanOrZero }],
      summary: ({ limit }) =>
        t("admin.creditSummary", {
          id: `${w.customerId} (${w.accountId})`,
          before: fmt(moneyMilli(w.creditLine)),
          after: fmt(checkedMilli(limit)),
          floor: fmt(-checkedMilli(limit)),
        }),
      submit: async ({ limit }) => {
        ctx.showEntry(null);
        return ctx.run(
          `mutation($input: AdminSetCustomerCreditLineInput!) { adminSetCustomerCreditLine(input: $input) { customerBalance { creditLine { amount } } } }`,
          { input: { accountId: w.accountId, customerId: w.customerId, limit } },
        );
      },
    });
  return [
    ctx.can("Mutation.adminTopUpCustomer") ? button("admin.topup", topUp) : null,
    ctx.can("Mutation.adminSetCustomerCreditLine") ? button("admin.credit", credit) : null,
  ];
}

/** @param {ConsoleContext} ctx */
export async function loadWallets(ctx) {
  const data = await ctx.run(
    `{ adminCustomerWallets(first: 50) { nodes { accountId customerId contact available { amount } frozen { amount } creditLine { amount } } } }`,
  );
  table(
    $("wallets-table", HTMLTableElement),
    ["admin.col.account", "admin.col.customer", "admin.col.available", "admin.col.frozen", "admin.col.credit", "admin.col.actions"],
    data.adminCustomerWallets.nodes.map((/** @type {GraphRow} */ w) =>
      h(
        "tr",
        { dataset: { customer: w.customerId } },
        cell(code(w.accountId)),
        cell(w.customerId),
        cell(h("span", { className: "wallet-available", textContent: yuan(w.available) })),
        cell(yuan(w.frozen)),
        cell(yuan(w.creditLine)),
        cell(...walletActions(ctx, w)),
      ),
    ),
  );
}

/** @param {ConsoleContext} ctx */
export async function loadOrders(ctx) {
  const data = await ctx.run(
    `{ adminOrders(first: 50) { nodes { id accountId customerId status paymentStatus failureReason amount { amount } createdAt ledgerEntries { kind amount { amount } } } } }`,
  );
  table(
    $("orders-table", HTMLTableElement),
    ["admin.col.order", "admin.col.account", "admin.col.status", "admin.col.amount", "admin.col.payments", "admin.col.created"],
    data.adminOrders.nodes.map((/** @type {GraphRow} */ o) =>
      h(
        "tr",
        {},
        cell(code(o.id), h("br"), o.customerId),
        cell(code(o.accountId)),
        cell(
          `${word("order", o.status)} / ${word("payment", o.paymentStatus)}`,
          o.failureReason ? h("div", { className: "hint", textContent: o.failureReason }) : null,
        ),
        cell(yuan(o.amount)),
        cell(o.ledgerEntries.map((/** @type {GraphRow} */ e) => `${word("kind", e.kind)} ${yuan(e.amount)}`).join("; ") || "—"),
        cell(when(o.createdAt)),
      ),
    ),
  );
}

/** @param {ConsoleContext} ctx */
export async function loadDeliveries(ctx) {
  const data = await ctx.run(
    `{ adminWebhookDeliveries(first: 50) { nodes { id accountId event status attemptCount url createdAt attempts { at status error } } } }`,
  );
  table(
    $("deliveries-table", HTMLTableElement),
    ["admin.col.delivery", "admin.col.event", "admin.col.status", "admin.col.attempts", "admin.col.actions"],
    data.adminWebhookDeliveries.nodes.map((/** @type {GraphRow} */ d) =>
      h(
        "tr",
        {},
        cell(`#${d.id}`, h("br"), code(d.accountId)),
        cell(d.event, h("div", { className: "hint", textContent: d.url })),
        cell(word("delivery", d.status)),
        cell(d.attempts.map((/** @type {GraphRow} */ a) => `${when(a.at)} ${a.status ?? a.error ?? ""}`).join("\n") || "—"),
        cell(
          ctx.can("Mutation.adminResendDelivery")
            ? button("admin.resend", () =>
                ctx.write({
                  title: t("admin.resendTitle", { id: d.id }),
                  summary: () => t("admin.resendSummary", { id: d.id, url: d.url }),
                  submit: () => {
                    ctx.showEntry(null);
                    return ctx.run(`mutation($input: AdminResendDeliveryInput!) { adminResendDelivery(input: $input) { delivery { id status } } }`, {
                      input: { deliveryId: d.id },
                    });
                  },
                }),
              )
            : null,
        ),
      ),
    ),
  );
}
