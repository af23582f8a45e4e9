/**
 * Parsing of order requests (docs/api/cloud.md §2 order body, §4 `POST /orders`,
 * `POST /orders/{id}/renew`): the input's shape first, then the product's own rules (its billing
 * cycles, the metadata keys it requires, the CDN domain). Inputs are camelCase; errors name
 * fields as the spec does (validation.ts `SPEC_FIELDS`). Nothing here reads or writes the
 * database; orders/create.ts and orders/renew.ts run these checks before anything is stored.
 */
import { checkCustomerId } from "./customers.ts";
import type { BillingCycle, ProductRecord } from "./catalog.ts";
import { invalid, invalidInput, isPlainObject, normalizeHostname, requireJsonObject, SPEC_FIELDS } from "./validation.ts";
import { hasInvisible, isBlank } from "../text.ts";

/** Quantity bounds of one order. */
export const MAX_QUANTITY = 1000;
/** Renewal periods bounds. */
export const MAX_RENEW_PERIODS = 36;
/** Largest metadata object accepted, as serialized JSON characters. */
export const MAX_METADATA_CHARS = 8192;

/**
 * An order to create as the client sends it (docs/api/cloud.md §2 order body in camelCase;
 * GraphQL `CreateOrderInput`). Omitted and null are the same. The types are the contract, not a
 * promise: every value is checked again at run time.
 */
export interface CreateOrderInput {
  /** 1-64 characters, no spaces: the caller's own order number. */
  clientOrderNo?: string | null;
  productId?: string | null;
  /** 1-{@link MAX_QUANTITY}. */
  quantity?: number | null;
  /** One of the product's cycles. */
  billingCycle?: string | null;
  customer?: { customerId?: string | null; contact?: string | null } | null;
  /** The caller's own JSON object, kept as sent (keys the product requires included). */
  metadata?: Record<string, unknown> | null;
}

/** A renewal as the client sends it (GraphQL `RenewOrderInput` without `orderId`); omitted: the defaults. */
export interface RenewOrderInput {
  /** 1-{@link MAX_RENEW_PERIODS}; default 1. */
  periods?: number | null;
  /** A cycle of the product; default the order's. */
  billingCycle?: string | null;
}

/** A validated create-order request (docs/api/cloud.md §2). */
export interface OrderRequest {
  clientOrderNo: string;
  productId: string;
  quantity: number;
  billingCycle: string;
  customerId: string;
  contact: string | null;
  metadata: Record<string, unknown>;
}

/** A validated renew body: `billingCycle` null means the order's own cycle. */
export interface RenewRequest {
  periods: number;
  billingCycle: string | null;
}

/**
 * Length of a value's JSON text; Infinity when it is nested too deeply to serialize (a RangeError
 * of JSON.stringify): thousands of levels, far over any size limit anyway.
 */
function jsonLength(value: unknown): number {
  try {
    return JSON.stringify(value).length;
  } catch {
    return Infinity;
  }
}

/**
 * Validates the shape of a create-order input (everything that does not need the catalog).
 * Unknown top-level fields are ignored.
 * @param input the order in camelCase ({@link CreateOrderInput}); checked at run time, whatever its type says
 * @returns the validated request
 * @throws AppError `invalid_request` (400) when the input is not a JSON object;
 *   `validation_failed` (422) naming the first bad field as the spec does (`client_order_no`,
 *   `product_id`, `quantity`, `billing_cycle`, `customer`, `customer.customer_id`,
 *   `customer.contact`, `metadata`)
 */
export function parseOrderInput(input: CreateOrderInput): OrderRequest {
  const b = requireJsonObject(input);

  const clientOrderNo = b.clientOrderNo;
  if (clientOrderNo === undefined || clientOrderNo === null || clientOrderNo === "") throw invalidInput("clientOrderNo", "is required");
  if (typeof clientOrderNo !== "string" || clientOrderNo.length > 64 || hasInvisible(clientOrderNo)) {
    throw invalidInput("clientOrderNo", "must be a string of 1-64 characters without spaces");
  }

  const productId = b.productId;
  if (productId === undefined || productId === null || productId === "") throw invalidInput("productId", "is required");
  if (typeof productId !== "string" || productId.length > 40) throw invalidInput("productId", "must be a string of at most 40 characters");

  const quantity = b.quantity;
  if (quantity === undefined || quantity === null) throw invalidInput("quantity", "is required");
  if (typeof quantity !== "number" || !Number.isInteger(quantity) || quantity < 1 || quantity > MAX_QUANTITY) {
    throw invalidInput("quantity", `must be an integer from 1 to ${MAX_QUANTITY}`);
  }

  const billingCycle = b.billingCycle;
  if (billingCycle === undefined || billingCycle === null || billingCycle === "") throw invalidInput("billingCycle", "is required");
  if (typeof billingCycle !== "string" || billingCycle.length > 20)
    throw invalidInput("billingCycle", "must be a string naming one of the product's billing cycles");

  const customer = b.customer;
  if (customer === undefined || customer === null) throw invalidInput("customer", "is required");
  if (!isPlainObject(customer)) throw invalidInput("customer", "must be an object with customer_id and contact");
  if (customer.customerId === undefined || customer.customerId === null || customer.customerId === "") {
    throw invalidInput("customer.customerId", "is required");
  }
  const customerId = checkCustomerId(customer.customerId, SPEC_FIELDS["customer.customerId"]);
  let contact: string | null = null;
  if (customer.contact !== undefined && customer.contact !== null) {
    if (typeof customer.contact !== "string" || isBlank(customer.contact) || customer.contact.length > 200 || customer.contact.includes("\u0000")) {
      throw invalidInput("customer.contact", "must be a non-empty string of at most 200 characters");
    }
    contact = customer.contact;
  }

  let metadata: Record<string, unknown> = {};
  if (b.metadata !== undefined && b.metadata !== null) {
    if (!isPlainObject(b.metadata)) throw invalidInput("metadata", "must be a JSON object");
    if (jsonLength(b.metadata) > MAX_METADATA_CHARS) throw invalidInput("metadata", `must be at most ${MAX_METADATA_CHARS} characters of JSON`);
    metadata = { ...b.metadata };
  }

  return { clientOrderNo, productId, quantity, billingCycle, customerId, contact, metadata };
}

/**
 * The product's cycle named `name`.
 * @throws AppError `validation_failed` (422, field `billing_cycle`) listing the product's cycles
 */
export function cycleOf(cycles: readonly BillingCycle[], name: string): BillingCycle {
  const cycle = cycles.find((c) => c.cycle === name);
  if (!cycle) throw invalidInput("billingCycle", `must be one of: ${cycles.map((c) => c.cycle).join(", ")}`);
  return cycle;
}

/**
 * Checks a parsed order against its product (docs/api/cloud.md §2): an available product of an
 * active vendor, one of its billing cycles, every metadata key it requires as a non-empty
 * string, and for a product requiring `domain` a host name ({@link normalizeHostname}, the
 * rule of CDN domains; docs/api/cloud.md §2.5), stored trimmed and normalized.
 * @param product the product the request names, null when unknown; `vendorActive` its vendor's state
 * @returns the product (known now), the chosen cycle and the metadata to store
 * @throws AppError `validation_failed` (422) on `product_id` ("product_id does not name a
 *   product", "product is not available"), `billing_cycle`, `metadata.<required field>` or
 *   `metadata.domain`
 */
export function checkAgainstProduct<P extends ProductRecord & { vendorActive: boolean }>(
  request: OrderRequest,
  found: P | null,
): { product: P; cycle: BillingCycle; metadata: Record<string, unknown> } {
  const product = found;
  if (!product) throw invalidInput("productId", "does not name a product");
  if (product.status !== "available" || !product.vendorActive) throw invalid(SPEC_FIELDS.productId, "product is not available");
  const cycle = cycleOf(product.billingCycles, request.billingCycle);
  const metadata = { ...request.metadata };
  for (const field of product.requiredFields) {
    const value = metadata[field];
    if (typeof value !== "string" || isBlank(value))
      throw invalid(`metadata.${field}`, `metadata.${field} is required by this product and must be a non-empty string`);
  }
  if (product.requiredFields.includes("domain")) {
    const domain = normalizeHostname(String(metadata.domain).trim());
    if (!domain) throw invalid("metadata.domain", "metadata.domain must be a valid host name such as www.example.com");
    metadata.domain = domain;
  }
  return { product, cycle, metadata };
}

/**
 * Validates a renewal (docs/architecture.md §8: `{"periods": 1, "billing_cycle"?: "..."}`, here
 * {@link RenewOrderInput}); an absent input means the defaults.
 * @throws AppError `invalid_request` (400) for an input that is not an object;
 *   `validation_failed` (422, field `periods` or `billing_cycle`)
 */
export function parseRenewInput(input: RenewOrderInput | null | undefined): RenewRequest {
  if (input === undefined || input === null) return { periods: 1, billingCycle: null };
  const body = requireJsonObject(input);
  let periods = 1;
  if (body.periods !== undefined && body.periods !== null) {
    if (typeof body.periods !== "number" || !Number.isInteger(body.periods) || body.periods < 1 || body.periods > MAX_RENEW_PERIODS) {
      throw invalidInput("periods", `must be an integer from 1 to ${MAX_RENEW_PERIODS}`);
    }
    periods = body.periods;
  }
  let billingCycle: string | null = null;
  if (body.billingCycle !== undefined && body.billingCycle !== null) {
    if (typeof body.billingCycle !== "string" || body.billingCycle === "" || body.billingCycle.length > 20) {
      throw invalidInput("billingCycle", "must be a string naming one of the product's billing cycles");
    }
    billingCycle = body.billingCycle;
  }
  return { periods, billingCycle };
}
