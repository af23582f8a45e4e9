// The console's GraphQL selections shared by its views.

/** The fields of a ledger entry a money write answers (AdminLedgerEntry). */
export const ENTRY = "id accountId customerId keyId kind amount { amount } balanceAfter { amount } orderId reason createdAt";
