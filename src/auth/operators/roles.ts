/**
 * The operator roles and what each may do (issue 23 §1; README "Scopes", the roles table;
 * docs/adr/0022-operators-and-audit.md). The one place that says which role may use which admin
 * field: both subgraphs check every admin field against {@link ADMIN_FIELD_ROLES} before its
 * resolver runs (subgraphs/shared/admin-access.ts), and the console hides what a role may not use
 * (it reads the same table through `adminMe { allowedFields }`).
 */

/** The roles, most powerful first. */
export const OPERATOR_ROLES = ["owner", "finance", "support", "viewer"] as const;

/** An operator's role. */
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

/** Whether `value` names a role. */
export function isOperatorRole(value: unknown): value is OperatorRole {
  return typeof value === "string" && (OPERATOR_ROLES as readonly string[]).includes(value);
}

const ALL: readonly OperatorRole[] = OPERATOR_ROLES;
const OWNER: readonly OperatorRole[] = ["owner"];
const MONEY: readonly OperatorRole[] = ["owner", "finance"];
const SUPPORT: readonly OperatorRole[] = ["owner", "support"];
/** What finance reads besides the money views: keys (to top one up), wallets, orders, the overview, the audit log. */
const FINANCE_READS: readonly OperatorRole[] = ["owner", "finance", "support", "viewer"];
/** Operational views finance has no use for. */
const OPERATIONS_READS: readonly OperatorRole[] = ["owner", "support", "viewer"];

/**
 * Every admin field (`Type.field`, both subgraphs) and the roles that may use it. A field missing
 * here is refused to every operator (a test checks that every `admin*` field of the schema is
 * listed). `Mutation.adminSetApiKeyStatus` for `support` is limited to `DISABLED`
 * ({@link mayUseAdminField}).
 */
export const ADMIN_FIELD_ROLES: Readonly<Record<string, readonly OperatorRole[]>> = {
  "Query.adminMe": ALL,
  "Query.adminOverview": FINANCE_READS,
  "Query.adminApiKeys": FINANCE_READS,
  "Query.adminApiKey": FINANCE_READS,
  "Query.adminCustomerWallets": FINANCE_READS,
  "Query.adminOrders": FINANCE_READS,
  "Query.adminAuditLog": FINANCE_READS,
  "Query.adminWebhookDeliveries": OPERATIONS_READS,
  "Query.adminChannels": OPERATIONS_READS,
  "Query.adminOperators": OWNER,
  "Mutation.adminTopUpAccount": MONEY,
  "Mutation.adminTopUpCustomer": MONEY,
  "Mutation.adminSetCustomerCreditLine": MONEY,
  "Mutation.adminSetApiKeyStatus": SUPPORT,
  "Mutation.adminResendDelivery": SUPPORT,
  "Mutation.adminCreateApiKey": OWNER,
  "Mutation.adminUpdateApiKey": OWNER,
  "Mutation.adminUpsertVendor": OWNER,
  "Mutation.adminUpsertProduct": OWNER,
  "Mutation.adminAddChannel": OWNER,
  "Mutation.adminUpdateChannel": OWNER,
  "Mutation.adminSetChannelStatus": OWNER,
  "Mutation.adminTestChannel": OWNER,
  "Mutation.adminCreateOperator": OWNER,
  "Mutation.adminSetOperatorStatus": OWNER,
  "Mutation.adminSignOut": ALL,
};

/**
 * Whether a role may use an admin field with these arguments.
 * @param field `Type.field`, for example `Mutation.adminTopUpAccount`
 * @param args the field's arguments (only `adminSetApiKeyStatus` looks at them: support may disable a key, not enable one)
 */
export function mayUseAdminField(role: OperatorRole, field: string, args?: Record<string, unknown>): boolean {
  const roles = ADMIN_FIELD_ROLES[field];
  if (!roles?.includes(role)) return false;
  if (field === "Mutation.adminSetApiKeyStatus" && role === "support") {
    const input = args?.input as { status?: unknown } | undefined;
    return input?.status === "DISABLED";
  }
  return true;
}

/** The admin fields a role may use (the console shows only their views and buttons). */
export function adminFieldsOf(role: OperatorRole): string[] {
  return Object.keys(ADMIN_FIELD_ROLES).filter((field) => ADMIN_FIELD_ROLES[field]!.includes(role));
}
