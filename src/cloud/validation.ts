/**
 * The input checks every cloud service shares (docs/api/cloud.md §7): the 422 of a
 * field, the 400 of an input that is not an object, and the one host-name rule (an order's
 * `metadata.domain`, a CDN domain, a `domain` origin, a domain in a path).
 *
 * Services take camelCase inputs (`CreateOrderInput`, `CreateDomainInput`, ...); their errors name
 * fields as the spec does, through {@link SPEC_FIELDS}, because REST clients read them.
 */
import { AppError } from "../errors.ts";

/**
 * The spec's name (docs/api/cloud.md §2, §4) of every field of the services' inputs, by its
 * camelCase path: what `details.field` and the messages say. Keys of `metadata` are the caller's
 * own and are named as sent (`metadata.domain`).
 */
export const SPEC_FIELDS = {
  clientOrderNo: "client_order_no",
  productId: "product_id",
  quantity: "quantity",
  billingCycle: "billing_cycle",
  customer: "customer",
  "customer.customerId": "customer.customer_id",
  "customer.contact": "customer.contact",
  metadata: "metadata",
  periods: "periods",
  domain: "domain",
  origin: "origin",
  "origin.type": "origin.type",
  "origin.address": "origin.address",
  "origin.port": "origin.port",
  protocol: "protocol",
  orderId: "order_id",
  customerId: "customer_id",
  type: "type",
  targets: "targets",
} as const;

/** A field of a cloud service's input, as a camelCase path (`customer.customerId`). */
export type InputField = keyof typeof SPEC_FIELDS;

/**
 * The 422 of one bad field.
 * @param field the field as the spec names it, dotted for nested fields (`customer.customer_id`,
 *   `origin.port`, `metadata.domain`); for an input field, {@link invalidInput} names it
 * @param message the message the client sees
 * @returns AppError `validation_failed` with `details.field`, for the caller to throw
 */
export function invalid(field: string, message: string): AppError {
  return new AppError("validation_failed", message, { field });
}

/**
 * The 422 of one bad input field, named as the spec names it, its message opening with that name.
 * @param field the camelCase input field (`clientOrderNo`)
 * @param rest the message after the name (`is required`)
 * @returns AppError `validation_failed` ("client_order_no is required", `details.field` `client_order_no`)
 */
export function invalidInput(field: InputField, rest: string): AppError {
  const name = SPEC_FIELDS[field];
  return invalid(name, `${name} ${rest}`);
}

/** True for a JSON object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A service input as a JSON object: typed for callers, checked for what arrives (a JSON body may
 * be anything).
 * @throws AppError `invalid_request` (400) "Request body must be a JSON object" otherwise
 */
export function requireJsonObject(input: unknown): Record<string, unknown> {
  if (!isPlainObject(input)) throw new AppError("invalid_request", "Request body must be a JSON object");
  return input;
}

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const TOP_LABEL = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/**
 * The one host-name rule of the cloud API (docs/api/cloud.md §2.5 "Host names"): lower case, one
 * trailing root dot removed, then at least two LDH labels (1-63 characters, no leading or
 * trailing hyphen) with an alphabetic (2-63 letters) or `xn--` top label, at most `maxLength`
 * characters. So IP literals, wildcards, ports, schemes and numeric or one-letter top labels never
 * pass; Unicode must come as its A-label.
 * @param value any value
 * @param maxLength longest accepted name (default 253, the DNS limit)
 * @returns the normalized name, or null when it is not a valid host name; never throws
 */
export function normalizeHostname(value: unknown, maxLength = 253): string | null {
  if (typeof value !== "string") return null;
  let name = value.toLowerCase();
  if (name.endsWith(".")) name = name.slice(0, -1);
  if (name.length === 0 || name.length > maxLength) return null;
  const labels = name.split(".");
  if (labels.length < 2) return null;
  if (!labels.every((label) => LABEL.test(label))) return null;
  if (!TOP_LABEL.test(labels[labels.length - 1]!)) return null;
  return name;
}
