/**
 * The enumerations of the cloud domain (docs/api/cloud.md §2-3; docs/architecture.md §8): every
 * state and type a record can take, as lists the domain checks against and the router's shim and
 * OpenAPI document read (so a filter or an `enum` is never restated). No imports: the router can
 * read these without loading the domain's database code.
 */

/** Vendor sale states. */
export const VENDOR_STATUSES = ["active", "inactive"] as const;
/** A vendor's state: only an `active` vendor's products can be ordered. */
export type VendorStatus = (typeof VENDOR_STATUSES)[number];

/** Product sale states (docs/architecture.md §8). */
export const PRODUCT_STATUSES = ["available", "sold_out", "offline"] as const;
/** A product's sale state: only `available` products can be ordered or shown to end customers. */
export type ProductStatus = (typeof PRODUCT_STATUSES)[number];

/** Overall order states (docs/architecture.md §8 `status`). */
export const ORDER_STATUSES = ["unpaid", "provisioning", "active", "failed"] as const;
/** An order's overall state. */
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** Payment states (docs/architecture.md §8 `payment_status`). */
export const PAYMENT_STATUSES = ["unpaid", "paid", "refunded"] as const;
/** An order's payment state. */
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** Provisioning states (docs/architecture.md §8 `provisioning_status`). */
export const PROVISIONING_STATUSES = ["pending", "provisioning", "active", "failed"] as const;
/** An order's provisioning state. */
export type ProvisioningStatus = (typeof PROVISIONING_STATUSES)[number];

/** Resource states (docs/api/cloud.md §2 "Resource"). */
export const RESOURCE_STATUSES = ["active", "expired"] as const;
/** A resource's state. */
export type ResourceStatus = (typeof RESOURCE_STATUSES)[number];

/** Review of a domain by the vendor. */
export const REVIEW_STATUSES = ["pending", "approved", "rejected"] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];
/** Whether the customer's CNAME record has been seen. */
export const RESOLUTION_STATUSES = ["pending", "resolved"] as const;
export type ResolutionStatus = (typeof RESOLUTION_STATUSES)[number];
/** TLS certificate of an `https` domain (`none` for `http`). */
export const CERTIFICATE_STATUSES = ["none", "issuing", "issued"] as const;
export type CertificateStatus = (typeof CERTIFICATE_STATUSES)[number];
/** Deployment of the domain on the CDN edge. */
export const ACCELERATION_STATUSES = ["pending", "deploying", "online", "offline"] as const;
export type AccelerationStatus = (typeof ACCELERATION_STATUSES)[number];
/** `none`, or the code of the error that stopped the domain. */
export const DOMAIN_ERROR_STATUSES = ["none", "review_rejected"] as const;
export type DomainErrorStatus = (typeof DOMAIN_ERROR_STATUSES)[number];

/** Purge task states. */
export const PURGE_STATUSES = ["pending", "running", "done"] as const;
/** A purge task's state. */
export type PurgeStatus = (typeof PURGE_STATUSES)[number];

/** Transaction types of the cloud API (docs/architecture.md §8); the ledger kind `debit` shows as `deduction`. */
export const TRANSACTION_TYPES = ["topup", "deduction", "refund", "adjustment"] as const;
/** A transaction type. */
export type TransactionType = (typeof TRANSACTION_TYPES)[number];

/**
 * True when `value` is one of `list` (a type guard for a filter or an input).
 * @param list one of the lists above
 */
export function isOneOf<T extends string>(list: readonly T[], value: unknown): value is T {
  return (list as readonly unknown[]).includes(value);
}
