/**
 * Parsing of order requests (docs/api/cloud.md §2 order body, §4 `POST /orders`,
 * `POST /orders/{id}/renew`): the body's shape first, then the product's own rules (its billing
 * cycles, the metadata keys it requires, the CDN domain). Nothing here reads or writes the
 * database; orders.ts runs these checks before anything is stored.
 */
import { checkCustomerId } from "./customers.ts";
import type { BillingCycle, ProductRecord } from "./catalog.ts";
import { invalid, isPlainObject, normalizeHostname, requireJsonObject } from "./validation.ts";

/** Quantity bounds of one order. */
export const MAX_QUANTITY = 1000;
/** Renewal periods bounds. */
export const MAX_RENEW_PERIODS = 36;
/** Largest metadata object accepted, as serialized JSON characters. */
export const MAX_METADATA_CHARS = 8192;

/** A validated create-order body (docs/api/cloud.md §2). */
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
 * Validates the shape of a create-order body (everything that does not need the catalog).
 * Unknown top-level fields are ignored.
 * @param body the parsed JSON body, snake_case as in docs/api/cloud.md §2
 * @returns the validated request
 * @throws AppError `invalid_request` (400) when the body is not a JSON object;
 *   `validation_failed` (422) naming the first bad field (`client_order_no`, `product_id`,
 *   `quantity`, `billing_cycle`, `customer`, `customer.customer_id`, `customer.contact`, `metadata`)
 */
export function parseOrderBody(body: unknown): OrderRequest {
  const b = requireJsonObject(body);

  const clientOrderNo = b.client_order_no;
  if (clientOrderNo === undefined || clientOrderNo === null || clientOrderNo === "") throw invalid("client_order_no", "client_order_no is required");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this check refuses
  if (typeof clientOrderNo !== "string" || clientOrderNo.length > 64 || /[\s\u0000-\u001f\u007f]/.test(clientOrderNo)) {
    throw invalid("client_order_no", "client_order_no must be a string of 1-64 characters without spaces");
  }

  const productId = b.product_id;
  if (productId === undefined || productId === null || productId === "") throw invalid("product_id", "product_id is required");
  if (typeof productId !== "string" || productId.length > 40) throw invalid("product_id", "product_id must be a string of at most 40 characters");

  const quantity = b.quantity;
  if (quantity === undefined || quantity === null) throw invalid("quantity", "quantity is required");
  if (typeof quantity !== "number" || !Number.isInteger(quantity) || quantity < 1 || quantity > MAX_QUANTITY) {
    throw invalid("quantity", `quantity must be an integer from 1 to ${MAX_QUANTITY}`);
  }

  const billingCycle = b.billing_cycle;
  if (billingCycle === undefined || billingCycle === null || billingCycle === "") throw invalid("billing_cycle", "billing_cycle is required");
  if (typeof billingCycle !== "string" || billingCycle.length > 20) throw invalid("billing_cycle", "billing_cycle must be a string naming one of the product's billing cycles");

  const customer = b.customer;
  if (customer === undefined || customer === null) throw invalid("customer", "customer is required");
  if (!isPlainObject(customer)) throw invalid("customer", "customer must be an object with customer_id and contact");
  if (customer.customer_id === undefined || customer.customer_id === null || customer.customer_id === "") {
    throw invalid("customer.customer_id", "customer.customer_id is required");
  }
  const customerId = checkCustomerId(customer.customer_id, "customer.customer_id");
  let contact: string | null = null;
  if (customer.contact !== undefined && customer.contact !== null) {
    if (typeof customer.contact !== "string" || customer.contact.trim() === "" || customer.contact.length > 200 || customer.contact.includes("\u0000")) {
      throw invalid("customer.contact", "customer.contact must be a non-empty string of at most 200 characters");
    }
    contact = customer.contact;
  }

  let metadata: Record<string, unknown> = {};
  if (b.metadata !== undefined && b.metadata !== null) {
    if (!isPlainObject(b.metadata)) throw invalid("metadata", "metadata must be a JSON object");
    if (jsonLength(b.metadata) > MAX_METADATA_CHARS) throw invalid("metadata", `metadata must be at most ${MAX_METADATA_CHARS} characters of JSON`);
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
  if (!cycle) throw invalid("billing_cycle", `billing_cycle must be one of: ${cycles.map((c) => c.cycle).join(", ")}`);
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
  if (!product) throw invalid("product_id", "product_id does not name a product");
  if (product.status !== "available" || !product.vendorActive) throw invalid("product_id", "product is not available");
  const cycle = cycleOf(product.billingCycles, request.billingCycle);
  const metadata = { ...request.metadata };
  for (const field of product.requiredFields) {
    const value = metadata[field];
    if (typeof value !== "string" || value.trim() === "") throw invalid(`metadata.${field}`, `metadata.${field} is required by this product and must be a non-empty string`);
  }
  if (product.requiredFields.includes("domain")) {
    const domain = normalizeHostname(String(metadata.domain).trim());
    if (!domain) throw invalid("metadata.domain", "metadata.domain must be a valid host name such as www.example.com");
    metadata.domain = domain;
  }
  return { product, cycle, metadata };
}

/**
 * Validates a renew body (docs/architecture.md §8: `{"periods": 1, "billing_cycle"?: "..."}`); an
 * absent body means the defaults.
 * @throws AppError `invalid_request` (400) for a body that is not an object;
 *   `validation_failed` (422, field `periods` or `billing_cycle`)
 */
export function parseRenewBody(input: unknown): RenewRequest {
  if (input === undefined || input === null) return { periods: 1, billingCycle: null };
  const body = requireJsonObject(input);
  let periods = 1;
  if (body.periods !== undefined && body.periods !== null) {
    if (typeof body.periods !== "number" || !Number.isInteger(body.periods) || body.periods < 1 || body.periods > MAX_RENEW_PERIODS) {
      throw invalid("periods", `periods must be an integer from 1 to ${MAX_RENEW_PERIODS}`);
    }
    periods = body.periods;
  }
  let billingCycle: string | null = null;
  if (body.billing_cycle !== undefined && body.billing_cycle !== null) {
    if (typeof body.billing_cycle !== "string" || body.billing_cycle === "" || body.billing_cycle.length > 20) {
      throw invalid("billing_cycle", "billing_cycle must be a string naming one of the product's billing cycles");
    }
    billingCycle = body.billing_cycle;
  }
  return { periods, billingCycle };
}
