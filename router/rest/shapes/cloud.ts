/**
 * Every request and answer body of the cloud open API (`/openapi/v1/*`; docs/api/cloud.md §2-7,
 * docs/architecture.md §4 and §8), described once: the shim checks bodies with these shapes
 * (router/rest/cloud.ts), and the OpenAPI document is generated from them
 * (router/openapi/cloud.ts). Field rules beyond JSON types (lengths, host names, a product's
 * cycles) are the services' (src/cloud/*.ts), which answer them in the spec's order; the bounds
 * below document them.
 */
import { CLOUD_CODES } from "../../../src/errors.ts";
import {
  ACCELERATION_STATUSES,
  CERTIFICATE_STATUSES,
  DOMAIN_ERROR_STATUSES,
  ORDER_STATUSES,
  PAYMENT_STATUSES,
  PRODUCT_STATUSES,
  PROVISIONING_STATUSES,
  PURGE_STATUSES,
  RESOLUTION_STATUSES,
  RESOURCE_STATUSES,
  REVIEW_STATUSES,
  TRANSACTION_TYPES,
  VENDOR_STATUSES,
} from "../../../src/cloud/states.ts";
import { dateTime, moneySchema } from "./common.ts";
import { int, int32, z } from "./zod.ts";

/** docs/api/cloud.md §7 for a body's JSON type errors: 422 `validation_failed` "{field} has the wrong type". */
export const cloudErrorMap: z.ZodErrorMap = (issue) => ({ message: `${issue.path.filter((part) => typeof part === "string").join(".")} has the wrong type` });

/** A zod enum of a list of states. */
const oneOf = (values: readonly string[]) => z.enum([...values] as [string, ...string[]]);
/** No whitespace or control characters (client_order_no, customer_id). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern names the control characters it refuses.
const TOKEN = /^[^\s\x00-\x1f\x7f]+$/;
const money = (description?: string) => (description ? moneySchema.openapi({ description }) : moneySchema);
/** A JSON object whose keys are the caller's (`metadata`) or free-form facts (`details`). */
const jsonObject = () => z.object({}).passthrough();
const STATEMENT_ID = /^stm_\d{4}-\d{2}$/;

/** The error body (docs/api/cloud.md §7). */
export const ErrorEnvelope = z
  .object({
    success: z.literal(false),
    request_id: z.string().min(1).openapi({ description: "Equals the `X-Request-Id` response header." }),
    error: z
      .object({
        code: oneOf(CLOUD_CODES),
        message: z.string().min(1),
        details: jsonObject().openapi({ description: "Machine-readable facts, for example `field`." }),
      })
      .strict(),
  })
  .strict()
  .openapi("ErrorEnvelope", { description: "Error body (docs/api/cloud.md §7)." });

/** The success envelope around `data`. */
export const envelope = <T extends z.ZodTypeAny>(data: T) =>
  z
    .object({
      success: z.literal(true),
      request_id: z.string().min(1).openapi({ description: "Equals the `X-Request-Id` response header." }),
      data,
    })
    .strict();

export const Vendor = z
  .object({ vendor_id: z.string(), name: z.string(), status: oneOf(VENDOR_STATUSES) })
  .strict()
  .openapi("Vendor", { description: "An upstream vendor." });

export const BillingCycle = z
  .object({
    cycle: z.string().openapi({ description: "Cycle name, for example `monthly`, `quarterly`, `yearly`." }),
    months: int().min(1).openapi({ description: "Calendar months one period lasts." }),
    price: money("Price of one period for one unit."),
  })
  .strict()
  .openapi("BillingCycle");

export const Product = z
  .object({
    product_id: z.string(),
    vendor_id: z.string(),
    category: z.string().openapi({ description: "For example `cdn`, `compute`, `storage`." }),
    name: z.string(),
    description: z.string().nullable(),
    status: oneOf(PRODUCT_STATUSES).openapi({ description: "Only `available` products can be ordered." }),
    billing_cycles: z.array(BillingCycle).min(1),
    stock: int().min(0).nullable().openapi({ description: "Units left; null when unlimited." }),
    required_fields: z.array(z.string()).openapi({ description: "`metadata` keys an order must carry, for example `domain` for CDN." }),
  })
  .strict()
  .openapi("Product", { description: "A sellable product or plan." });

export const OrderCustomer = z.object({ customer_id: z.string(), contact: z.string().nullable() }).strict().openapi("OrderCustomer");

export const Order = z
  .object({
    order_id: z.string(),
    client_order_no: z.string(),
    product_id: z.string(),
    quantity: int().min(1).max(1000),
    billing_cycle: z.string(),
    customer: OrderCustomer,
    metadata: jsonObject().openapi({ description: "As given at creation (`domain` lower-cased)." }),
    amount: money("Cycle price × quantity."),
    payment_status: oneOf(PAYMENT_STATUSES),
    provisioning_status: oneOf(PROVISIONING_STATUSES),
    status: oneOf(ORDER_STATUSES),
    resource_id: z.string().nullable().openapi({ description: "Set once `active`." }),
    failure_reason: z.string().nullable().openapi({ description: "Set when `failed`." }),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .strict()
  .openapi("Order", {
    description:
      "A cloud-resource order. `status`: `unpaid` (nothing taken) → `provisioning` (paid) → `active` (resource provisioned) or `failed` (refunded in full); renewals keep it `active`.",
  });

export const Resource = z
  .object({
    resource_id: z.string(),
    order_id: z.string(),
    product_id: z.string(),
    customer_id: z.string(),
    status: oneOf(RESOURCE_STATUSES),
    expires_at: dateTime,
  })
  .strict()
  .openapi("Resource", { description: "A resource held by a customer, created by a provisioned order." });

const ORIGIN_TYPES = ["ip", "domain"] as const;
const PROTOCOLS = ["http", "https"] as const;
const PURGE_TYPES = ["url", "directory"] as const;

export const DomainOrigin = z
  .object({
    type: z.enum(ORIGIN_TYPES),
    address: z.string().openapi({ description: "Canonical IP address, or lower-case host name." }),
    port: int().min(1).max(65535).nullable().openapi({ description: "null: the protocol's default port." }),
  })
  .strict()
  .openapi("DomainOrigin");

export const Domain = z
  .object({
    domain: z.string(),
    cname: z.string().openapi({ description: "CNAME target: `<domain>.cdn.switchyard.example`." }),
    review_status: oneOf(REVIEW_STATUSES),
    resolution_status: oneOf(RESOLUTION_STATUSES),
    certificate_status: oneOf(CERTIFICATE_STATUSES).openapi({ description: "Always `none` for `http`." }),
    acceleration_status: oneOf(ACCELERATION_STATUSES),
    error_status: oneOf(DOMAIN_ERROR_STATUSES),
    origin: DomainOrigin,
    protocol: z.enum(PROTOCOLS),
    order_id: z.string(),
    customer_id: z.string(),
  })
  .strict()
  .openapi("Domain", { description: "A CDN accelerated domain and its states." });

export const PurgeTask = z
  .object({
    task_id: z.string(),
    domain: z.string(),
    type: z.enum(PURGE_TYPES),
    targets: z.array(z.string().url()).openapi({ description: "Normalized absolute URLs, duplicates dropped." }),
    status: oneOf(PURGE_STATUSES),
    created_at: dateTime,
    completed_at: dateTime.nullable().openapi({ description: "Set once `done`." }),
  })
  .strict()
  .openapi("PurgeTask", { description: "A cache purge task." });

export const Bandwidth = z
  .object({
    resource_id: z.string(),
    interval_seconds: int().openapi({ enum: [300, 3600, 14400] }),
    peak_bps: z.number().min(0).openapi({ description: "The largest point's bps; 0 without points." }),
    points: z.array(
      z
        .object({
          time: dateTime.openapi({ description: "Start of the interval." }),
          bps: z.number().min(0).openapi({ description: "Mean bits per second." }),
        })
        .strict(),
    ),
  })
  .strict()
  .openapi("Bandwidth", { description: "Bandwidth curve of a resource." });

export const Traffic = z
  .object({
    resource_id: z.string(),
    total_bytes: z.number().min(0).openapi({ description: "Sum of the items." }),
    items: z.array(z.object({ date: z.string().date(), bytes: z.number().min(0) }).strict()),
  })
  .strict()
  .openapi("Traffic", { description: "Traffic of a resource per UTC day." });

export const Balance = z
  .object({
    customer_id: z.string(),
    available: money("Balance; below zero only within the credit line."),
    frozen: money("Paid for orders still provisioning."),
    credit_line: money(),
    currency: z.literal("CNY"),
  })
  .strict()
  .openapi("Balance", { description: "A customer's wallet." });

export const Transaction = z
  .object({
    transaction_id: z.string(),
    customer_id: z.string(),
    order_id: z.string().nullable(),
    type: oneOf(TRANSACTION_TYPES),
    amount: money("Signed: deductions are negative."),
    balance_after: money(),
    created_at: dateTime,
  })
  .strict()
  .openapi("Transaction", { description: "One money movement of a customer." });

export const StatementItem = z
  .object({
    transaction_id: z.string(),
    customer_id: z.string(),
    order_id: z.string().nullable(),
    type: oneOf(TRANSACTION_TYPES),
    amount: money("Signed."),
    created_at: dateTime,
  })
  .strict()
  .openapi("StatementItem");

export const Statement = z
  .object({
    statement_id: z.string().regex(STATEMENT_ID),
    period: z
      .string()
      .regex(/^\d{4}-\d{2}$/)
      .openapi({ description: "UTC month." }),
    total_amount: money("Sum of the items (signed)."),
    items: z.array(StatementItem).openapi({ description: "Oldest first." }),
    export_status: z.enum(["pending", "ready"]),
    export_url: z.string().nullable().openapi({ description: "Path of the CSV export once `ready`." }),
  })
  .strict()
  .openapi("Statement", { description: "A monthly statement of the account." });

/** A page of a list: `items` and `next_cursor`. */
const page = (name: string, item: z.ZodTypeAny, description: string) =>
  z
    .object({
      items: z.array(item),
      next_cursor: z.string().nullable().openapi({ description: "Pass as `cursor` for the next page; null on the last page." }),
    })
    .strict()
    .openapi(name, { description });

export const VendorPage = page("VendorPage", Vendor, "A page of vendors.");
export const ProductPage = page("ProductPage", Product, "A page of products, newest first.");
export const OrderPage = page("OrderPage", Order, "A page of orders, newest first.");
export const ResourcePage = page("ResourcePage", Resource, "A page of resources.");
export const TransactionPage = page("TransactionPage", Transaction, "A page of transactions, newest first.");

/** Create-order body, in the GraphQL input's field order (the order type errors are found in). */
export const CreateOrderRequest = z
  .object({
    client_order_no: z.string().min(1).max(64).regex(TOKEN).openapi({ description: "The caller's own order number, unique per account; no spaces." }),
    product_id: z.string().min(1).max(40).openapi({ description: "An `available` product." }),
    quantity: int32(int().min(1).max(1000)),
    billing_cycle: z.string().min(1).max(20).openapi({ description: "One of the product's `billing_cycles[].cycle`." }),
    customer: z.object({
      customer_id: z.string().min(1).max(64).regex(TOKEN).openapi({ description: "The caller's customer; no spaces." }),
      contact: z.string().min(1).max(200).regex(/\S/).optional().openapi({ description: "Contact address of the customer." }),
    }),
    metadata: jsonObject()
      .optional()
      .openapi({
        description:
          "Free-form, at most 8192 characters of JSON. Keys in the product's `required_fields` must be non-empty strings; `domain` must be a host name such as www.example.com. " +
          'Sandbox: `"simulate": "fail"` makes the vendor fail the order.',
      }),
  })
  .openapi("CreateOrderRequest", { description: "Create-order body (docs/api/cloud.md §2). Unknown fields are ignored." });

/** Renew body; may be omitted. */
export const RenewOrderRequest = z
  .object({
    periods: int32(int().min(1).max(36)).optional().openapi({ default: 1 }),
    billing_cycle: z.string().min(1).max(20).optional().openapi({ description: "A cycle of the product; default the order's." }),
  })
  .openapi("RenewOrderRequest", { description: "Renew body; may be omitted." });

/** Create-domain body. */
export const CreateDomainRequest = z
  .object({
    domain: z.string().max(230).openapi({ format: "hostname", description: "Fully qualified, at least two labels, no wildcard; folded to lower case." }),
    origin: z.object({
      type: z.enum(ORIGIN_TYPES),
      address: z.string().min(1).max(253).openapi({
        description:
          "A public IPv4 or IPv6 address (`ip`), or a host name other than the domain (`domain`) whose DNS answers (A, AAAA) are all public: a name that resolves to a private or local address, or does not resolve, is 422 on `origin.address`, as a private IP is.",
      }),
      port: int32(int().min(1).max(65535)).optional().openapi({ description: "Omitted: the protocol's default." }),
    }),
    protocol: z.enum(PROTOCOLS),
    order_id: z.string().min(1).max(40).openapi({ description: "An active CDN order of the account." }),
    customer_id: z.string().min(1).max(64).openapi({ description: "The order's customer." }),
  })
  .openapi("CreateDomainRequest", { description: "Create-domain body (docs/architecture.md §8). Unknown fields are ignored." });

/** Purge body. */
export const PurgeRequest = z
  .object({
    type: z.enum(PURGE_TYPES),
    targets: z.array(z.string().min(1).max(2048)).min(1).max(100).openapi({
      description: "`url`: absolute http(s) URLs on the domain. `directory`: such URLs ending in `/` without a query, or paths starting and ending with `/`.",
    }),
  })
  .openapi("PurgeRequest", { description: "Purge body (docs/architecture.md §8). Unknown fields are ignored." });

/**
 * What the shim type-checks for each input: the documented body, plus the fields the GraphQL
 * input also has (the path's id, `idempotency_key`), which a body may carry and the shim then
 * overrides; in the GraphQL input's order.
 */
const idempotencyKey = z.string().optional();
export const CLOUD_INPUTS = {
  CreateOrderInput: CreateOrderRequest.extend({ idempotency_key: idempotencyKey }),
  RenewOrderInput: z.object({ order_id: z.string(), ...RenewOrderRequest.shape, idempotency_key: idempotencyKey }),
  CreateDomainInput: CreateDomainRequest.extend({ idempotency_key: idempotencyKey }),
  PurgeDomainInput: z.object({ domain: z.string(), ...PurgeRequest.shape, idempotency_key: idempotencyKey }),
} as const;
