/**
 * The OpenAPI 3.1 document of the cloud open API (`/openapi/v1/*`), served at
 * `GET /openapi/v1/openapi.json`: the routes, their parameters and statuses (docs/api/cloud.md §2-7,
 * docs/architecture.md §4 and §8), with every body taken from its zod shape
 * (router/rest/shapes/cloud.ts). test/integration/openapi.test.ts validates real answers against it.
 *
 * Longer than 400 lines on purpose: it is one route table, one `operation(...)` per route of the
 * cloud API (docs/api/cloud.md §2-7) over shared parameters and error responses, and reads best whole.
 */
import type { RouteConfig } from "@asteasolutions/zod-to-openapi";
import { PRODUCT_STATUSES, TRANSACTION_TYPES } from "../../src/cloud/states.ts";
import { CLOUD_CODES, ERROR_CODES, type CloudCode } from "../../src/errors.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageSizeError } from "../../src/pagination.ts";
import {
  Balance,
  Bandwidth,
  CreateDomainRequest,
  CreateOrderRequest,
  Domain,
  envelope,
  ErrorEnvelope,
  Order,
  OrderPage,
  Product,
  ProductPage,
  PurgeRequest,
  PurgeTask,
  RenewOrderRequest,
  ResourcePage,
  Statement,
  Traffic,
  TransactionPage,
  VendorPage,
} from "../rest/shapes/cloud.ts";
import { moneySchema, OpenApiDocumentShape } from "../rest/shapes/common.ts";
import { z } from "../rest/shapes/zod.ts";
import { buildDocument, OpenAPIRegistry, registerRaw } from "./build.ts";
import {
  bearerAuth,
  rateLimitHeader,
  rateLimitHeaderRefs,
  rateLimitPolicyHeader,
  requestIdHeader,
  requestIdParameter,
  retryAfterHeader,
  signatureParameter,
} from "./common.ts";
import type { Reference } from "./types.ts";

const responseRef = (name: string): Reference => ({ $ref: `#/components/responses/${name}` });
const parameterRef = (name: string): Reference => ({ $ref: `#/components/parameters/${name}` });
const headerRef = (name: string): Reference => ({ $ref: `#/components/headers/${name}` });

const API = "/openapi/v1";

/**
 * Error codes of docs/api/cloud.md §7 and those the shim adds: the registry's `cloud` column
 * (src/errors.ts), whose own statuses the answers carry.
 */
export const CLOUD_ERROR_CODES = CLOUD_CODES;

/** The cloud code (hence the status) of each error response of this document, and its description. */
const ERROR_RESPONSES = {
  BadRequest: {
    code: "invalid_request",
    description:
      "Malformed request: invalid JSON body, a body nested deeper than 64 levels of objects and arrays, a bad query parameter (`details.field` names it), a bad cursor, or an over-long `Idempotency-Key`.",
  },
  Unauthorized: { code: "unauthorized", description: "API key missing or invalid, or a missing, invalid or stale `X-Service-Signature`." },
  Forbidden: {
    code: "forbidden",
    description: "The key is disabled, lacks the operation's scope (`details.scope`), or the source IP is outside its allow-list.",
  },
  NotFound: { code: "not_found", description: "Not found, or another account's." },
  Conflict: {
    code: "conflict",
    description: "Duplicate idempotency key use, order state conflict, duplicate `client_order_no`, short stock, or the resource already exists.",
  },
  ValidationFailed: {
    code: "validation_failed",
    description: "A field is invalid; `details.field` names the first one (`customer.customer_id`, `metadata.domain`, `targets[0]`, ...).",
    details: { type: "object", required: ["field"], properties: { field: { type: "string", minLength: 1 } } },
  },
  InsufficientBalance: { code: "insufficient_balance", description: "The customer's balance and credit line do not cover the charge; nothing was taken." },
  PayloadTooLarge: { code: "payload_too_large", description: "The body is larger than `BODY_LIMIT_BYTES` (1 MiB by default)." },
  UnsupportedMediaType: {
    code: "unsupported_media_type",
    description: "The body is declared as another type than `application/json` (a form, `text/plain`) or not at all.",
  },
  TooManyRequests: {
    code: "rate_limited",
    description: "The key's rate limit (requests per second) is exceeded.",
    details: { type: "object", required: ["retry_after_seconds"], properties: { retry_after_seconds: { type: "integer", minimum: 1 } } },
    headers: { "Retry-After": headerRef("Retry-After") },
  },
  ServiceUnavailable: { code: "service_unavailable", description: "The cloud subgraph cannot be reached." },
} as const satisfies Record<string, { code: CloudCode; description: string; details?: object; headers?: object }>;
type ErrorName = keyof typeof ERROR_RESPONSES;

/** Error responses by status, for an operation's `responses`. */
function errors(...names: ErrorName[]): Record<string, Reference> {
  return Object.fromEntries(names.map((name) => [String(ERROR_CODES[ERROR_RESPONSES[name].code].status), responseRef(name)]));
}

/** Query parameters of a list. */
const PAGE_PARAMETERS = [parameterRef("Limit"), parameterRef("Cursor")];
/** Headers every authenticated operation accepts. */
const COMMON_PARAMETERS = [parameterRef("XServiceSignature"), parameterRef("XRequestId")];
/** Headers of a create. */
const WRITE_PARAMETERS = [parameterRef("IdempotencyKey"), ...COMMON_PARAMETERS];
/** Statuses every authenticated operation can answer. */
const AUTH_ERRORS = errors("Unauthorized", "Forbidden", "TooManyRequests", "ServiceUnavailable");
/** Statuses of a write with a JSON body. */
const WRITE_ERRORS = errors("BadRequest", "PayloadTooLarge", "UnsupportedMediaType", "ValidationFailed", "Conflict");
const replayedHeader = { "Idempotent-Replayed": headerRef("Idempotent-Replayed") };

/** A success answer in the envelope. */
const ok = (description: string, data: z.ZodTypeAny, extraHeaders: Record<string, Reference> = {}) => ({
  description,
  headers: { "X-Request-Id": headerRef("X-Request-Id"), ...rateLimitHeaderRefs, ...extraHeaders },
  content: { "application/json": { schema: envelope(data) } },
});

/** A body of an operation. */
const body = (schema: z.ZodTypeAny, required = true) => ({ required, content: { "application/json": { schema } } });

/** A path parameter's shape. */
const pathParameter = (name: string, description: string, schema: z.ZodString = z.string().min(1)) =>
  z.object({ [name]: schema.openapi({ param: { description } }) });
/** A query parameter's shape. */
const query = (description: string, schema: z.ZodTypeAny = z.string()) => schema.openapi({ param: { description } });

const registry = new OpenAPIRegistry();

/**
 * Registers an operation needing `scope`, with the common parameters and errors; a write (a
 * create with a body) also takes `Idempotency-Key`.
 */
function operation(method: "get" | "post", path: string, scope: string, fields: Omit<RouteConfig, "method" | "path" | "security">): void {
  const write = fields.request?.body !== undefined;
  registry.registerPath({
    ...fields,
    method,
    path: `${API}${path}`,
    description: `${fields.description ? `${fields.description} ` : ""}Scope: \`${scope}\`.`,
    security: [{ bearerAuth: [scope] }],
    parameters: [...((fields.parameters as Reference[] | undefined) ?? []), ...(write ? WRITE_PARAMETERS : COMMON_PARAMETERS)],
    responses: { ...fields.responses, ...AUTH_ERRORS },
  });
}

registerRaw(registry, "securitySchemes", "bearerAuth", bearerAuth);
registerRaw(registry, "parameters", "XServiceSignature", signatureParameter);
registerRaw(registry, "parameters", "XRequestId", requestIdParameter);
registerRaw(registry, "parameters", "IdempotencyKey", {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Caller-unique key of this create. The same key and body within 24 hours replays the first answer (status and body) with `Idempotent-Replayed: true` and does nothing again; " +
    "another body, or a retry while the first is still running, is 409. Scoped per account and operation: the key of an order's creation may be sent again for its renewal. Longer than 255 characters: 400.",
  schema: { type: "string", minLength: 1, maxLength: 255 },
});
registerRaw(registry, "parameters", "Limit", {
  name: "limit",
  in: "query",
  required: false,
  description: `Page size: an integer from 1 to ${MAX_PAGE_SIZE} in decimal digits; anything else (\`1e2\`, \`0x10\`, \` 5\` included) is 400 \`invalid_request\` \`${pageSizeError(0, "limit")!.message}\`.`,
  schema: { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
});
registerRaw(registry, "parameters", "Cursor", {
  name: "cursor",
  in: "query",
  required: false,
  description:
    "`next_cursor` of the previous page. A cursor this API did not issue (not base64url, over 512 characters, or holding values of the wrong type) is 400 `invalid_request` `cursor is not valid`, never an empty page.",
  schema: { type: "string", maxLength: 512 },
});
registerRaw(registry, "headers", "X-Request-Id", requestIdHeader);
registerRaw(registry, "headers", "Retry-After", retryAfterHeader);
registerRaw(registry, "headers", "RateLimit-Policy", rateLimitPolicyHeader);
registerRaw(registry, "headers", "RateLimit", rateLimitHeader);
registerRaw(registry, "headers", "Idempotent-Replayed", {
  description: "Present (`true`) when the answer replays the first answer to the same `Idempotency-Key`.",
  required: false,
  schema: { type: "string", const: "true" },
});
// Registered first, so a field that describes one in its own words does not rename the component.
registry.register("Money", moneySchema);
registry.register("ErrorEnvelope", ErrorEnvelope);
for (const [name, response] of Object.entries(ERROR_RESPONSES) as [ErrorName, { code: CloudCode; description: string; details?: object; headers?: object }][]) {
  const error = { type: "object", properties: { code: { const: response.code }, ...(response.details ? { details: response.details } : {}) } };
  registerRaw(registry, "responses", name, {
    description: response.description,
    headers: { "X-Request-Id": headerRef("X-Request-Id"), ...rateLimitHeaderRefs, ...response.headers },
    content: { "application/json": { schema: { type: "object", allOf: [{ $ref: "#/components/schemas/ErrorEnvelope" }], properties: { error } } } },
  });
}

operation("get", "/vendors", "catalog:read", {
  operationId: "listVendors",
  summary: "List vendors",
  tags: ["catalog"],
  parameters: PAGE_PARAMETERS,
  responses: { "200": ok("A page of vendors.", VendorPage), ...errors("BadRequest") },
});
operation("get", "/products", "catalog:read", {
  operationId: "listProducts",
  summary: "List products, filtered by category, vendor and sale status",
  description: "Only products with status `available` should be shown to end customers.",
  tags: ["catalog"],
  request: {
    query: z.object({
      category: query("Category, for example `cdn`.").optional(),
      vendor_id: query("Vendor id.").optional(),
      status: query("Sale status; anything else is 400.", z.enum([...PRODUCT_STATUSES] as [string, ...string[]])).optional(),
    }),
  },
  parameters: PAGE_PARAMETERS,
  responses: { "200": ok("A page of products.", ProductPage), ...errors("BadRequest") },
});
operation("get", "/products/{product_id}", "catalog:read", {
  operationId: "getProduct",
  summary: "Product detail",
  tags: ["catalog"],
  request: { params: pathParameter("product_id", "Product id.") },
  responses: { "200": ok("The product.", Product), ...errors("NotFound") },
});
operation("post", "/orders", "orders:write", {
  operationId: "createOrder",
  summary: "Create an order and pay it",
  description:
    "Creates the order and pays it at once from the customer's balance and credit line: 201 with status `provisioning`, then `active` (or `failed`, refunded in full) once the vendor answers. " +
    "When the balance does not cover it the order stays `unpaid` and nothing is taken (still 201). " +
    "A duplicate `client_order_no`, short stock, or an `Idempotency-Key` reused with another body or still running is 409.",
  tags: ["orders"],
  request: { body: body(CreateOrderRequest) },
  responses: {
    "201": ok("The order as created (or, with `Idempotent-Replayed: true`, the first answer to this key).", Order, replayedHeader),
    ...WRITE_ERRORS,
  },
});
operation("get", "/orders", "orders:read", {
  operationId: "listOrders",
  summary: "List the account's orders, newest first",
  tags: ["orders"],
  parameters: PAGE_PARAMETERS,
  responses: { "200": ok("A page of orders.", OrderPage), ...errors("BadRequest") },
});
operation("get", "/orders/{order_id}", "orders:read", {
  operationId: "getOrder",
  summary: "Order status",
  description: "Another account's order is 404.",
  tags: ["orders"],
  request: { params: pathParameter("order_id", "`order_id` returned at creation.") },
  responses: { "200": ok("The order.", Order), ...errors("NotFound") },
});
operation("post", "/orders/{order_id}/renew", "orders:write", {
  operationId: "renewOrder",
  summary: "Renew an active order's resource",
  description:
    "Charges cycle price × quantity × periods to the customer's wallet (402 when it does not cover it) and extends the resource's expiry. " +
    "An order that is not `active` is 409. The body may be empty.",
  tags: ["orders"],
  request: { params: pathParameter("order_id", "An active order of the account."), body: body(RenewOrderRequest, false) },
  responses: {
    "200": ok("The order after the renewal.", Order, replayedHeader),
    ...WRITE_ERRORS,
    ...errors("InsufficientBalance"),
    ...errors("NotFound"),
  },
});
operation("post", "/domains", "domains:write", {
  operationId: "createDomain",
  summary: "Add a CDN accelerated domain",
  description:
    "The order must be an active CDN order of the account (404 unknown, 409 not CDN or not active) for the same customer (422 `customer_id`); a domain already taken is 409. " +
    "Statuses then advance over time: read them with `GET /domains/{domain}/status`.",
  tags: ["domains"],
  request: { body: body(CreateDomainRequest) },
  responses: { "201": ok("The domain and its statuses at creation.", Domain, replayedHeader), ...WRITE_ERRORS, ...errors("NotFound") },
});
operation("get", "/domains/{domain}/status", "domains:read", {
  operationId: "getDomainStatus",
  summary: "Domain status",
  tags: ["domains"],
  request: { params: pathParameter("domain", "The accelerated domain.") },
  responses: { "200": ok("The domain and its statuses now.", Domain), ...errors("NotFound") },
});
operation("post", "/domains/{domain}/purge", "domains:write", {
  operationId: "purgeDomain",
  summary: "Purge cached URLs or directories",
  description: "Answers the purge task; `data.task_id` identifies it. A domain whose review was rejected is 409.",
  tags: ["domains"],
  request: { params: pathParameter("domain", "An accelerated domain of the account."), body: body(PurgeRequest) },
  responses: { "201": ok("The purge task.", PurgeTask, replayedHeader), ...WRITE_ERRORS, ...errors("NotFound") },
});
operation("get", "/usage/bandwidth", "usage:read", {
  operationId: "getBandwidth",
  summary: "Bandwidth curve of a resource",
  description:
    "Points every 300 s for ranges up to a day, 3600 s up to 7 days, 14400 s beyond; at most 31 days. Start after (or equal to) end, an unparsable time or a longer range is 400.",
  tags: ["usage"],
  request: {
    query: z.object({
      resource_id: query("A resource of the account.", z.string().min(1)),
      start: query("ISO 8601 date-time with a time zone, inclusive.", z.string().datetime()),
      end: query("ISO 8601 date-time with a time zone, exclusive.", z.string().datetime()),
    }),
  },
  responses: { "200": ok("The curve.", Bandwidth), ...errors("BadRequest"), ...errors("NotFound") },
});
operation("get", "/usage/traffic", "usage:read", {
  operationId: "getTraffic",
  summary: "Traffic summary and daily detail of a resource",
  description:
    "UTC days, both dates inclusive, at most 31 days; `total_bytes` is the sum of the days. Start after end, an unparsable date or a longer range is 400.",
  tags: ["usage"],
  request: {
    query: z.object({
      resource_id: query("A resource of the account.", z.string().min(1)),
      start: query("First day, YYYY-MM-DD.", z.string().date()),
      end: query("Last day, YYYY-MM-DD.", z.string().date()),
    }),
  },
  responses: { "200": ok("The traffic.", Traffic), ...errors("BadRequest"), ...errors("NotFound") },
});
operation("get", "/resources", "resources:read", {
  operationId: "listResources",
  summary: "Resources held by the account's customers",
  tags: ["orders"],
  request: { query: z.object({ customer_id: query("Only this customer's resources.").optional() }) },
  parameters: PAGE_PARAMETERS,
  responses: { "200": ok("A page of resources.", ResourcePage), ...errors("BadRequest") },
});
operation("get", "/billing/balance", "billing:read", {
  operationId: "getBalance",
  summary: "A customer's balance",
  description: "A customer the account never had is 404.",
  tags: ["billing"],
  request: { query: z.object({ customer_id: query("The customer.", z.string().min(1).max(64)) }) },
  responses: { "200": ok("The balance.", Balance), ...errors("BadRequest"), ...errors("NotFound") },
});
operation("get", "/billing/transactions", "billing:read", {
  operationId: "listTransactions",
  summary: "Transactions, newest first, filtered by customer, order, type and time range",
  tags: ["billing"],
  request: {
    query: z.object({
      customer_id: query("Only this customer's.").optional(),
      order_id: query("Only this order's.").optional(),
      type: query("Only this type; anything else is 400.", z.enum([...TRANSACTION_TYPES] as [string, ...string[]])).optional(),
      start: query("From: ISO 8601 date (00:00 UTC) or date-time (UTC without an offset), inclusive.").optional(),
      end: query("Until: ISO 8601 date (the whole day) or date-time, inclusive.").optional(),
    }),
  },
  parameters: PAGE_PARAMETERS,
  responses: { "200": ok("A page of transactions.", TransactionPage), ...errors("BadRequest") },
});
const statementId = () => pathParameter("statement_id", "`stm_YYYY-MM` (UTC month).", z.string().regex(/^stm_\d{4}-\d{2}$/));
operation("get", "/billing/statements/{statement_id}", "billing:read", {
  operationId: "getStatement",
  summary: "A monthly statement",
  description: "Reading a statement requests its CSV export, which becomes `ready` shortly after. Another form of id, or a month that has not begun, is 404.",
  tags: ["billing"],
  request: { params: statementId() },
  responses: { "200": ok("The statement.", Statement), ...errors("NotFound") },
});
operation("get", "/billing/statements/{statement_id}/export", "billing:read", {
  operationId: "exportStatement",
  summary: "A statement's CSV export",
  description: "409 while `export_status` is `pending`.",
  tags: ["billing"],
  request: { params: statementId() },
  responses: {
    "200": {
      description:
        "CSV with the header `transaction_id,customer_id,order_id,type,amount,balance_after,created_at`; amounts in decimal yuan. Cells with a comma, quote or line break are quoted (RFC 4180); a cell beginning with `=`, `+`, `-`, `@`, tab or CR that is not a plain number is written as quoted text after a `'` (OWASP CSV injection).",
      headers: {
        "X-Request-Id": headerRef("X-Request-Id"),
        ...rateLimitHeaderRefs,
        "Content-Disposition": { required: true, description: '`attachment; filename="<statement_id>.csv"`.', schema: { type: "string" } },
      },
      content: { "text/csv": { schema: z.string().regex(/^transaction_id,customer_id,order_id,type,amount,balance_after,created_at\n/) } },
    },
    ...errors("NotFound"),
    ...errors("Conflict"),
  },
});
registry.registerPath({
  method: "get",
  path: `${API}/openapi.json`,
  operationId: "getCloudOpenApi",
  summary: "This OpenAPI document",
  description: "Generated from the shapes the router checks requests with; no key needed.",
  tags: ["service"],
  security: [],
  responses: {
    "200": {
      description: "The OpenAPI 3.1 document of the cloud open API (not in the envelope).",
      headers: { "X-Request-Id": headerRef("X-Request-Id") },
      content: { "application/json": { schema: OpenApiDocumentShape } },
    },
  },
});

/** The cloud open API's OpenAPI document. */
export const cloudOpenApi = buildDocument(registry, {
  info: {
    title: "Switchyard cloud open API",
    version: "1.0.0",
    description:
      "Vendors, products, orders, CDN domains and purges, usage, resources and billing (cloud spec). Answers are `{success: true, request_id, data}`; " +
      "errors `{success: false, request_id, error: {code, message, details}}`. " +
      `Lists take \`limit\` (an integer from 1 to ${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}; anything else is 400 \`invalid_request\`) and \`cursor\` and answer \`data.items\` and \`data.next_cursor\`. ` +
      "Money is yuan as JSON numbers with at most three decimals. Creates take an `Idempotency-Key` (Stripe's semantics, kept 24 hours). " +
      "Key scopes appear in each operation's security requirement. An unknown path is 404 `not_found`; a known path with another method is 405 with code `method_not_allowed`; " +
      "a request target that is not a URL is 400 `invalid_request`. A request line and headers over 16 KiB are refused by the HTTP server itself with 431 and no body.",
  },
  servers: [{ url: "/", description: "This router" }],
  security: [{ bearerAuth: [] }],
  tags: [
    { name: "catalog", description: "Vendors and products." },
    { name: "orders", description: "Orders and the resources they provision." },
    { name: "domains", description: "CDN domains and cache purges." },
    { name: "usage", description: "Bandwidth and traffic." },
    { name: "billing", description: "Balances, transactions and statements." },
    { name: "service", description: "This document; no key needed." },
  ],
});
