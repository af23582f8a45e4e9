/**
 * The OpenAPI 3.1 document of the cloud open API (`/openapi/v1/*`), served at
 * `GET /openapi/v1/openapi.json`. Shapes: docs/api/cloud.md §2-7, docs/architecture.md §4 and §8; implementation
 * router/rest/cloud.ts (`cloudShapes`, `sendCloudError`) and the field rules of src/cloud/*.ts.
 * test/integration/openapi.test.ts validates real answers against this document.
 *
 * Longer than 400 lines on purpose: it is one document literal that reads top to bottom like the
 * API reference, each operation next to the schemas it names; split, a path and its body would
 * sit in different files. Its helpers and shared parts are in ./common.ts.
 */
import {
  bearerAuth,
  dateTime,
  moneySchema,
  openApiDocumentSchema,
  rateLimitHeader,
  rateLimitHeaderRefs,
  rateLimitPolicyHeader,
  requestIdHeader,
  requestIdParameter,
  retryAfterHeader,
  signatureParameter,
} from "./common.ts";
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
} from "../../src/cloud/states.ts";
import type { Header, JsonSchema, OpenApiDocument, Operation, Parameter, Reference, Response } from "./types.ts";
import { CLOUD_CODES, ERROR_CODES, type CloudCode } from "../../src/errors.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageSizeError } from "../../src/pagination.ts";

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const responseRef = (name: string): Reference => ({ $ref: `#/components/responses/${name}` });
const parameterRef = (name: string): Reference => ({ $ref: `#/components/parameters/${name}` });
const headerRef = (name: string): Reference => ({ $ref: `#/components/headers/${name}` });

const API = "/openapi/v1";

/**
 * Error codes of docs/api/cloud.md §7 and those the shim adds: the registry's `cloud` column
 * (src/errors.ts), whose own statuses the answers carry.
 */
export const CLOUD_ERROR_CODES = CLOUD_CODES;

/** The cloud code (hence the status) of each error response of this document. */
const ERROR_RESPONSE_CODES = {
  BadRequest: "invalid_request",
  Unauthorized: "unauthorized",
  Forbidden: "forbidden",
  NotFound: "not_found",
  Conflict: "conflict",
  ValidationFailed: "validation_failed",
  InsufficientBalance: "insufficient_balance",
  PayloadTooLarge: "payload_too_large",
  UnsupportedMediaType: "unsupported_media_type",
  TooManyRequests: "rate_limited",
  ServiceUnavailable: "service_unavailable",
} as const satisfies Record<string, CloudCode>;

/** Error responses by status, for an operation's `responses`. */
function errors(...names: (keyof typeof ERROR_RESPONSE_CODES)[]): Record<string, Reference> {
  return Object.fromEntries(names.map((name) => [String(ERROR_CODES[ERROR_RESPONSE_CODES[name]].status), responseRef(name)]));
}

/** No whitespace or control characters (client_order_no, customer_id). */
const TOKEN = "^[^\\s\\x00-\\x1f\\x7f]+$";

/** The success envelope around `data`. */
function envelope(data: JsonSchema): JsonSchema {
  return {
    type: "object",
    required: ["success", "request_id", "data"],
    additionalProperties: false,
    properties: {
      success: { type: "boolean", const: true },
      request_id: { type: "string", minLength: 1, description: "Equals the `X-Request-Id` response header." },
      data,
    },
  };
}

/** A success answer in the envelope. */
function ok(description: string, data: JsonSchema, extraHeaders: Record<string, Header | Reference> = {}): Response {
  return {
    description,
    headers: { "X-Request-Id": headerRef("X-Request-Id"), ...rateLimitHeaderRefs, ...extraHeaders },
    content: { "application/json": { schema: envelope(data) } },
  };
}

/** An error answer whose `error.code` is fixed; `details` may be required to hold more. */
function errorResponse(code: CloudCode, description: string, details?: JsonSchema, extraHeaders: Record<string, Header | Reference> = {}): Response {
  const error: JsonSchema = { type: "object", properties: { code: { const: code } } };
  if (details) error.properties!.details = details;
  return {
    description,
    headers: { "X-Request-Id": headerRef("X-Request-Id"), ...rateLimitHeaderRefs, ...extraHeaders },
    content: {
      "application/json": { schema: { type: "object", allOf: [ref("ErrorEnvelope")], properties: { error } } },
    },
  };
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

/**
 * An operation needing `scope`, with the common parameters and errors; a write (a create with a
 * body) also takes `Idempotency-Key`.
 */
function operation(scope: string, fields: Omit<Operation, "security">): Operation {
  const write = fields.requestBody !== undefined;
  return {
    ...fields,
    description: `${fields.description ? `${fields.description} ` : ""}Scope: \`${scope}\`.`,
    security: [{ bearerAuth: [scope] }],
    parameters: [...(fields.parameters ?? []), ...(write ? WRITE_PARAMETERS : COMMON_PARAMETERS)],
    responses: { ...fields.responses, ...AUTH_ERRORS },
  };
}

const pathParameter = (name: string, description: string, schema: JsonSchema = { type: "string", minLength: 1 }): Parameter => ({
  name,
  in: "path",
  required: true,
  description,
  schema,
});
const query = (name: string, description: string, schema: JsonSchema, required = false): Parameter => ({ name, in: "query", required, description, schema });

const page = (item: string, description: string): JsonSchema => ({
  type: "object",
  description,
  required: ["items", "next_cursor"],
  additionalProperties: false,
  properties: {
    items: { type: "array", items: ref(item) },
    next_cursor: { type: ["string", "null"], description: "Pass as `cursor` for the next page; null on the last page." },
  },
});

const replayedHeader = { "Idempotent-Replayed": headerRef("Idempotent-Replayed") };

/** The cloud open API's OpenAPI document. */
export const cloudOpenApi: OpenApiDocument = {
  openapi: "3.1.0",
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
  paths: {
    [`${API}/vendors`]: {
      get: operation("catalog:read", {
        operationId: "listVendors",
        summary: "List vendors",
        tags: ["catalog"],
        parameters: PAGE_PARAMETERS,
        responses: { "200": ok("A page of vendors.", ref("VendorPage")), ...errors("BadRequest") },
      }),
    },
    [`${API}/products`]: {
      get: operation("catalog:read", {
        operationId: "listProducts",
        summary: "List products, filtered by category, vendor and sale status",
        description: "Only products with status `available` should be shown to end customers.",
        tags: ["catalog"],
        parameters: [
          query("category", "Category, for example `cdn`.", { type: "string" }),
          query("vendor_id", "Vendor id.", { type: "string" }),
          query("status", "Sale status; anything else is 400.", { type: "string", enum: [...PRODUCT_STATUSES] }),
          ...PAGE_PARAMETERS,
        ],
        responses: { "200": ok("A page of products.", ref("ProductPage")), ...errors("BadRequest") },
      }),
    },
    [`${API}/products/{product_id}`]: {
      get: operation("catalog:read", {
        operationId: "getProduct",
        summary: "Product detail",
        tags: ["catalog"],
        parameters: [pathParameter("product_id", "Product id.")],
        responses: { "200": ok("The product.", ref("Product")), ...errors("NotFound") },
      }),
    },
    [`${API}/orders`]: {
      post: operation("orders:write", {
        operationId: "createOrder",
        summary: "Create an order and pay it",
        description:
          "Creates the order and pays it at once from the customer's balance and credit line: 201 with status `provisioning`, then `active` (or `failed`, refunded in full) once the vendor answers. " +
          "When the balance does not cover it the order stays `unpaid` and nothing is taken (still 201). " +
          "A duplicate `client_order_no`, short stock, or an `Idempotency-Key` reused with another body or still running is 409.",
        tags: ["orders"],
        requestBody: { required: true, content: { "application/json": { schema: ref("CreateOrderRequest") } } },
        responses: {
          "201": ok("The order as created (or, with `Idempotent-Replayed: true`, the first answer to this key).", ref("Order"), replayedHeader),
          ...WRITE_ERRORS,
        },
      }),
      get: operation("orders:read", {
        operationId: "listOrders",
        summary: "List the account's orders, newest first",
        tags: ["orders"],
        parameters: PAGE_PARAMETERS,
        responses: { "200": ok("A page of orders.", ref("OrderPage")), ...errors("BadRequest") },
      }),
    },
    [`${API}/orders/{order_id}`]: {
      get: operation("orders:read", {
        operationId: "getOrder",
        summary: "Order status",
        description: "Another account's order is 404.",
        tags: ["orders"],
        parameters: [pathParameter("order_id", "`order_id` returned at creation.")],
        responses: { "200": ok("The order.", ref("Order")), ...errors("NotFound") },
      }),
    },
    [`${API}/orders/{order_id}/renew`]: {
      post: operation("orders:write", {
        operationId: "renewOrder",
        summary: "Renew an active order's resource",
        description:
          "Charges cycle price × quantity × periods to the customer's wallet (402 when it does not cover it) and extends the resource's expiry. " +
          "An order that is not `active` is 409. The body may be empty.",
        tags: ["orders"],
        parameters: [pathParameter("order_id", "An active order of the account.")],
        requestBody: { required: false, content: { "application/json": { schema: ref("RenewOrderRequest") } } },
        responses: {
          "200": ok("The order after the renewal.", ref("Order"), replayedHeader),
          ...WRITE_ERRORS,
          ...errors("InsufficientBalance"),
          ...errors("NotFound"),
        },
      }),
    },
    [`${API}/domains`]: {
      post: operation("domains:write", {
        operationId: "createDomain",
        summary: "Add a CDN accelerated domain",
        description:
          "The order must be an active CDN order of the account (404 unknown, 409 not CDN or not active) for the same customer (422 `customer_id`); a domain already taken is 409. " +
          "Statuses then advance over time: read them with `GET /domains/{domain}/status`.",
        tags: ["domains"],
        requestBody: { required: true, content: { "application/json": { schema: ref("CreateDomainRequest") } } },
        responses: {
          "201": ok("The domain and its statuses at creation.", ref("Domain"), replayedHeader),
          ...WRITE_ERRORS,
          ...errors("NotFound"),
        },
      }),
    },
    [`${API}/domains/{domain}/status`]: {
      get: operation("domains:read", {
        operationId: "getDomainStatus",
        summary: "Domain status",
        tags: ["domains"],
        parameters: [pathParameter("domain", "The accelerated domain.")],
        responses: { "200": ok("The domain and its statuses now.", ref("Domain")), ...errors("NotFound") },
      }),
    },
    [`${API}/domains/{domain}/purge`]: {
      post: operation("domains:write", {
        operationId: "purgeDomain",
        summary: "Purge cached URLs or directories",
        description: "Answers the purge task; `data.task_id` identifies it. A domain whose review was rejected is 409.",
        tags: ["domains"],
        parameters: [pathParameter("domain", "An accelerated domain of the account.")],
        requestBody: { required: true, content: { "application/json": { schema: ref("PurgeRequest") } } },
        responses: {
          "201": ok("The purge task.", ref("PurgeTask"), replayedHeader),
          ...WRITE_ERRORS,
          ...errors("NotFound"),
        },
      }),
    },
    [`${API}/usage/bandwidth`]: {
      get: operation("usage:read", {
        operationId: "getBandwidth",
        summary: "Bandwidth curve of a resource",
        description:
          "Points every 300 s for ranges up to a day, 3600 s up to 7 days, 14400 s beyond; at most 31 days. Start after (or equal to) end, an unparsable time or a longer range is 400.",
        tags: ["usage"],
        parameters: [
          query("resource_id", "A resource of the account.", { type: "string", minLength: 1 }, true),
          query("start", "ISO 8601 date-time with a time zone, inclusive.", { type: "string", format: "date-time" }, true),
          query("end", "ISO 8601 date-time with a time zone, exclusive.", { type: "string", format: "date-time" }, true),
        ],
        responses: { "200": ok("The curve.", ref("Bandwidth")), ...errors("BadRequest"), ...errors("NotFound") },
      }),
    },
    [`${API}/usage/traffic`]: {
      get: operation("usage:read", {
        operationId: "getTraffic",
        summary: "Traffic summary and daily detail of a resource",
        description:
          "UTC days, both dates inclusive, at most 31 days; `total_bytes` is the sum of the days. Start after end, an unparsable date or a longer range is 400.",
        tags: ["usage"],
        parameters: [
          query("resource_id", "A resource of the account.", { type: "string", minLength: 1 }, true),
          query("start", "First day, YYYY-MM-DD.", { type: "string", format: "date" }, true),
          query("end", "Last day, YYYY-MM-DD.", { type: "string", format: "date" }, true),
        ],
        responses: { "200": ok("The traffic.", ref("Traffic")), ...errors("BadRequest"), ...errors("NotFound") },
      }),
    },
    [`${API}/resources`]: {
      get: operation("resources:read", {
        operationId: "listResources",
        summary: "Resources held by the account's customers",
        tags: ["orders"],
        parameters: [query("customer_id", "Only this customer's resources.", { type: "string" }), ...PAGE_PARAMETERS],
        responses: { "200": ok("A page of resources.", ref("ResourcePage")), ...errors("BadRequest") },
      }),
    },
    [`${API}/billing/balance`]: {
      get: operation("billing:read", {
        operationId: "getBalance",
        summary: "A customer's balance",
        description: "A customer the account never had is 404.",
        tags: ["billing"],
        parameters: [query("customer_id", "The customer.", { type: "string", minLength: 1, maxLength: 64 }, true)],
        responses: { "200": ok("The balance.", ref("Balance")), ...errors("BadRequest"), ...errors("NotFound") },
      }),
    },
    [`${API}/billing/transactions`]: {
      get: operation("billing:read", {
        operationId: "listTransactions",
        summary: "Transactions, newest first, filtered by customer, order, type and time range",
        tags: ["billing"],
        parameters: [
          query("customer_id", "Only this customer's.", { type: "string" }),
          query("order_id", "Only this order's.", { type: "string" }),
          query("type", "Only this type; anything else is 400.", { type: "string", enum: [...TRANSACTION_TYPES] }),
          query("start", "From: ISO 8601 date (00:00 UTC) or date-time (UTC without an offset), inclusive.", { type: "string" }),
          query("end", "Until: ISO 8601 date (the whole day) or date-time, inclusive.", { type: "string" }),
          ...PAGE_PARAMETERS,
        ],
        responses: { "200": ok("A page of transactions.", ref("TransactionPage")), ...errors("BadRequest") },
      }),
    },
    [`${API}/billing/statements/{statement_id}`]: {
      get: operation("billing:read", {
        operationId: "getStatement",
        summary: "A monthly statement",
        description:
          "Reading a statement requests its CSV export, which becomes `ready` shortly after. Another form of id, or a month that has not begun, is 404.",
        tags: ["billing"],
        parameters: [pathParameter("statement_id", "`stm_YYYY-MM` (UTC month).", { type: "string", pattern: "^stm_\\d{4}-\\d{2}$" })],
        responses: { "200": ok("The statement.", ref("Statement")), ...errors("NotFound") },
      }),
    },
    [`${API}/billing/statements/{statement_id}/export`]: {
      get: operation("billing:read", {
        operationId: "exportStatement",
        summary: "A statement's CSV export",
        description: "409 while `export_status` is `pending`.",
        tags: ["billing"],
        parameters: [pathParameter("statement_id", "`stm_YYYY-MM` (UTC month).", { type: "string", pattern: "^stm_\\d{4}-\\d{2}$" })],
        responses: {
          "200": {
            description:
              "CSV with the header `transaction_id,customer_id,order_id,type,amount,balance_after,created_at`; amounts in decimal yuan. Cells with a comma, quote or line break are quoted (RFC 4180); a cell beginning with `=`, `+`, `-`, `@`, tab or CR that is not a plain number is written as quoted text after a `'` (OWASP CSV injection).",
            headers: {
              "X-Request-Id": headerRef("X-Request-Id"),
              ...rateLimitHeaderRefs,
              "Content-Disposition": { required: true, description: '`attachment; filename="<statement_id>.csv"`.', schema: { type: "string" } },
            },
            content: { "text/csv": { schema: { type: "string", pattern: "^transaction_id,customer_id,order_id,type,amount,balance_after,created_at\\n" } } },
          },
          ...errors("NotFound"),
          ...errors("Conflict"),
        },
      }),
    },
    [`${API}/openapi.json`]: {
      get: {
        operationId: "getCloudOpenApi",
        summary: "This OpenAPI document",
        description: "Generated from the shapes the router checks requests with; no key needed.",
        tags: ["service"],
        security: [],
        responses: {
          "200": {
            description: "The OpenAPI 3.1 document of the cloud open API (not in the envelope).",
            headers: { "X-Request-Id": headerRef("X-Request-Id") },
            content: { "application/json": { schema: openApiDocumentSchema } },
          },
        },
      },
    },
  },
  components: {
    securitySchemes: { bearerAuth },
    parameters: {
      XServiceSignature: signatureParameter,
      XRequestId: requestIdParameter,
      IdempotencyKey: {
        name: "Idempotency-Key",
        in: "header",
        required: false,
        description:
          "Caller-unique key of this create. The same key and body within 24 hours replays the first answer (status and body) with `Idempotent-Replayed: true` and does nothing again; " +
          "another body, or a retry while the first is still running, is 409. Scoped per account and operation: the key of an order's creation may be sent again for its renewal. Longer than 255 characters: 400.",
        schema: { type: "string", minLength: 1, maxLength: 255 },
      },
      Limit: {
        name: "limit",
        in: "query",
        required: false,
        description: `Page size: an integer from 1 to ${MAX_PAGE_SIZE} in decimal digits; anything else (\`1e2\`, \`0x10\`, \` 5\` included) is 400 \`invalid_request\` \`${pageSizeError(0, "limit")!.message}\`.`,
        schema: { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
      },
      Cursor: {
        name: "cursor",
        in: "query",
        required: false,
        description:
          "`next_cursor` of the previous page. A cursor this API did not issue (not base64url, over 512 characters, or holding values of the wrong type) is 400 `invalid_request` `cursor is not valid`, never an empty page.",
        schema: { type: "string", maxLength: 512 },
      },
    },
    headers: {
      "X-Request-Id": requestIdHeader,
      "Retry-After": retryAfterHeader,
      "RateLimit-Policy": rateLimitPolicyHeader,
      RateLimit: rateLimitHeader,
      "Idempotent-Replayed": {
        description: "Present (`true`) when the answer replays the first answer to the same `Idempotency-Key`.",
        required: false,
        schema: { type: "string", const: "true" },
      },
    },
    responses: {
      BadRequest: errorResponse(
        "invalid_request",
        "Malformed request: invalid JSON body, a body nested deeper than 64 levels of objects and arrays, a bad query parameter (`details.field` names it), a bad cursor, or an over-long `Idempotency-Key`.",
      ),
      Unauthorized: errorResponse("unauthorized", "API key missing or invalid, or a missing, invalid or stale `X-Service-Signature`."),
      Forbidden: errorResponse("forbidden", "The key is disabled, lacks the operation's scope (`details.scope`), or the source IP is outside its allow-list."),
      NotFound: errorResponse("not_found", "Not found, or another account's."),
      Conflict: errorResponse(
        "conflict",
        "Duplicate idempotency key use, order state conflict, duplicate `client_order_no`, short stock, or the resource already exists.",
      ),
      ValidationFailed: errorResponse(
        "validation_failed",
        "A field is invalid; `details.field` names the first one (`customer.customer_id`, `metadata.domain`, `targets[0]`, ...).",
        {
          type: "object",
          required: ["field"],
          properties: { field: { type: "string", minLength: 1 } },
        },
      ),
      InsufficientBalance: errorResponse("insufficient_balance", "The customer's balance and credit line do not cover the charge; nothing was taken."),
      PayloadTooLarge: errorResponse("payload_too_large", "The body is larger than `BODY_LIMIT_BYTES` (1 MiB by default)."),
      UnsupportedMediaType: errorResponse(
        "unsupported_media_type",
        "The body is declared as another type than `application/json` (a form, `text/plain`) or not at all.",
      ),
      TooManyRequests: errorResponse(
        "rate_limited",
        "The key's rate limit (requests per second) is exceeded.",
        { type: "object", required: ["retry_after_seconds"], properties: { retry_after_seconds: { type: "integer", minimum: 1 } } },
        { "Retry-After": headerRef("Retry-After") },
      ),
      ServiceUnavailable: errorResponse("service_unavailable", "The cloud subgraph cannot be reached."),
    },
    schemas: {
      Money: moneySchema,
      ErrorEnvelope: {
        type: "object",
        description: "Error body (docs/api/cloud.md §7).",
        required: ["success", "request_id", "error"],
        additionalProperties: false,
        properties: {
          success: { type: "boolean", const: false },
          request_id: { type: "string", minLength: 1, description: "Equals the `X-Request-Id` response header." },
          error: {
            type: "object",
            required: ["code", "message", "details"],
            additionalProperties: false,
            properties: {
              code: { type: "string", enum: [...CLOUD_ERROR_CODES] },
              message: { type: "string", minLength: 1 },
              details: { type: "object", description: "Machine-readable facts, for example `field`." },
            },
          },
        },
      },
      Vendor: {
        type: "object",
        description: "An upstream vendor.",
        required: ["vendor_id", "name", "status"],
        additionalProperties: false,
        properties: {
          vendor_id: { type: "string" },
          name: { type: "string" },
          status: { type: "string", enum: [...VENDOR_STATUSES] },
        },
      },
      BillingCycle: {
        type: "object",
        required: ["cycle", "months", "price"],
        additionalProperties: false,
        properties: {
          cycle: { type: "string", description: "Cycle name, for example `monthly`, `quarterly`, `yearly`." },
          months: { type: "integer", minimum: 1, description: "Calendar months one period lasts." },
          price: { ...ref("Money"), description: "Price of one period for one unit." },
        },
      },
      Product: {
        type: "object",
        description: "A sellable product or plan.",
        required: ["product_id", "vendor_id", "category", "name", "description", "status", "billing_cycles", "stock", "required_fields"],
        additionalProperties: false,
        properties: {
          product_id: { type: "string" },
          vendor_id: { type: "string" },
          category: { type: "string", description: "For example `cdn`, `compute`, `storage`." },
          name: { type: "string" },
          description: { type: ["string", "null"] },
          status: { type: "string", enum: [...PRODUCT_STATUSES], description: "Only `available` products can be ordered." },
          billing_cycles: { type: "array", items: ref("BillingCycle"), minItems: 1 },
          stock: { type: ["integer", "null"], minimum: 0, description: "Units left; null when unlimited." },
          required_fields: { type: "array", items: { type: "string" }, description: "`metadata` keys an order must carry, for example `domain` for CDN." },
        },
      },
      OrderCustomer: {
        type: "object",
        required: ["customer_id", "contact"],
        additionalProperties: false,
        properties: { customer_id: { type: "string" }, contact: { type: ["string", "null"] } },
      },
      Order: {
        type: "object",
        description:
          "A cloud-resource order. `status`: `unpaid` (nothing taken) → `provisioning` (paid) → `active` (resource provisioned) or `failed` (refunded in full); renewals keep it `active`.",
        required: [
          "order_id",
          "client_order_no",
          "product_id",
          "quantity",
          "billing_cycle",
          "customer",
          "metadata",
          "amount",
          "payment_status",
          "provisioning_status",
          "status",
          "resource_id",
          "failure_reason",
          "created_at",
          "updated_at",
        ],
        additionalProperties: false,
        properties: {
          order_id: { type: "string" },
          client_order_no: { type: "string" },
          product_id: { type: "string" },
          quantity: { type: "integer", minimum: 1, maximum: 1000 },
          billing_cycle: { type: "string" },
          customer: ref("OrderCustomer"),
          metadata: { type: "object", description: "As given at creation (`domain` lower-cased)." },
          amount: { ...ref("Money"), description: "Cycle price × quantity." },
          payment_status: { type: "string", enum: [...PAYMENT_STATUSES] },
          provisioning_status: { type: "string", enum: [...PROVISIONING_STATUSES] },
          status: { type: "string", enum: [...ORDER_STATUSES] },
          resource_id: { type: ["string", "null"], description: "Set once `active`." },
          failure_reason: { type: ["string", "null"], description: "Set when `failed`." },
          created_at: dateTime,
          updated_at: dateTime,
        },
      },
      Resource: {
        type: "object",
        description: "A resource held by a customer, created by a provisioned order.",
        required: ["resource_id", "order_id", "product_id", "customer_id", "status", "expires_at"],
        additionalProperties: false,
        properties: {
          resource_id: { type: "string" },
          order_id: { type: "string" },
          product_id: { type: "string" },
          customer_id: { type: "string" },
          status: { type: "string", enum: [...RESOURCE_STATUSES] },
          expires_at: dateTime,
        },
      },
      DomainOrigin: {
        type: "object",
        required: ["type", "address", "port"],
        additionalProperties: false,
        properties: {
          type: { type: "string", enum: ["ip", "domain"] },
          address: { type: "string", description: "Canonical IP address, or lower-case host name." },
          port: { type: ["integer", "null"], minimum: 1, maximum: 65535, description: "null: the protocol's default port." },
        },
      },
      Domain: {
        type: "object",
        description: "A CDN accelerated domain and its states.",
        required: [
          "domain",
          "cname",
          "review_status",
          "resolution_status",
          "certificate_status",
          "acceleration_status",
          "error_status",
          "origin",
          "protocol",
          "order_id",
          "customer_id",
        ],
        additionalProperties: false,
        properties: {
          domain: { type: "string" },
          cname: { type: "string", description: "CNAME target: `<domain>.cdn.switchyard.example`." },
          review_status: { type: "string", enum: [...REVIEW_STATUSES] },
          resolution_status: { type: "string", enum: [...RESOLUTION_STATUSES] },
          certificate_status: { type: "string", enum: [...CERTIFICATE_STATUSES], description: "Always `none` for `http`." },
          acceleration_status: { type: "string", enum: [...ACCELERATION_STATUSES] },
          error_status: { type: "string", enum: [...DOMAIN_ERROR_STATUSES] },
          origin: ref("DomainOrigin"),
          protocol: { type: "string", enum: ["http", "https"] },
          order_id: { type: "string" },
          customer_id: { type: "string" },
        },
      },
      PurgeTask: {
        type: "object",
        description: "A cache purge task.",
        required: ["task_id", "domain", "type", "targets", "status", "created_at", "completed_at"],
        additionalProperties: false,
        properties: {
          task_id: { type: "string" },
          domain: { type: "string" },
          type: { type: "string", enum: ["url", "directory"] },
          targets: { type: "array", items: { type: "string", format: "uri" }, description: "Normalized absolute URLs, duplicates dropped." },
          status: { type: "string", enum: [...PURGE_STATUSES] },
          created_at: dateTime,
          completed_at: { type: ["string", "null"], format: "date-time", description: "Set once `done`." },
        },
      },
      Bandwidth: {
        type: "object",
        description: "Bandwidth curve of a resource.",
        required: ["resource_id", "interval_seconds", "peak_bps", "points"],
        additionalProperties: false,
        properties: {
          resource_id: { type: "string" },
          interval_seconds: { type: "integer", enum: [300, 3600, 14400] },
          peak_bps: { type: "number", minimum: 0, description: "The largest point's bps; 0 without points." },
          points: {
            type: "array",
            items: {
              type: "object",
              required: ["time", "bps"],
              additionalProperties: false,
              properties: {
                time: { ...dateTime, description: "Start of the interval." },
                bps: { type: "number", minimum: 0, description: "Mean bits per second." },
              },
            },
          },
        },
      },
      Traffic: {
        type: "object",
        description: "Traffic of a resource per UTC day.",
        required: ["resource_id", "total_bytes", "items"],
        additionalProperties: false,
        properties: {
          resource_id: { type: "string" },
          total_bytes: { type: "number", minimum: 0, description: "Sum of the items." },
          items: {
            type: "array",
            items: {
              type: "object",
              required: ["date", "bytes"],
              additionalProperties: false,
              properties: { date: { type: "string", format: "date" }, bytes: { type: "number", minimum: 0 } },
            },
          },
        },
      },
      Balance: {
        type: "object",
        description: "A customer's wallet.",
        required: ["customer_id", "available", "frozen", "credit_line", "currency"],
        additionalProperties: false,
        properties: {
          customer_id: { type: "string" },
          available: { ...ref("Money"), description: "Balance; below zero only within the credit line." },
          frozen: { ...ref("Money"), description: "Paid for orders still provisioning." },
          credit_line: ref("Money"),
          currency: { type: "string", const: "CNY" },
        },
      },
      Transaction: {
        type: "object",
        description: "One money movement of a customer.",
        required: ["transaction_id", "customer_id", "order_id", "type", "amount", "balance_after", "created_at"],
        additionalProperties: false,
        properties: {
          transaction_id: { type: "string" },
          customer_id: { type: "string" },
          order_id: { type: ["string", "null"] },
          type: { type: "string", enum: [...TRANSACTION_TYPES] },
          amount: { ...ref("Money"), description: "Signed: deductions are negative." },
          balance_after: ref("Money"),
          created_at: dateTime,
        },
      },
      StatementItem: {
        type: "object",
        required: ["transaction_id", "customer_id", "order_id", "type", "amount", "created_at"],
        additionalProperties: false,
        properties: {
          transaction_id: { type: "string" },
          customer_id: { type: "string" },
          order_id: { type: ["string", "null"] },
          type: { type: "string", enum: [...TRANSACTION_TYPES] },
          amount: { ...ref("Money"), description: "Signed." },
          created_at: dateTime,
        },
      },
      Statement: {
        type: "object",
        description: "A monthly statement of the account.",
        required: ["statement_id", "period", "total_amount", "items", "export_status", "export_url"],
        additionalProperties: false,
        properties: {
          statement_id: { type: "string", pattern: "^stm_\\d{4}-\\d{2}$" },
          period: { type: "string", pattern: "^\\d{4}-\\d{2}$", description: "UTC month." },
          total_amount: { ...ref("Money"), description: "Sum of the items (signed)." },
          items: { type: "array", items: ref("StatementItem"), description: "Oldest first." },
          export_status: { type: "string", enum: ["pending", "ready"] },
          export_url: { type: ["string", "null"], description: "Path of the CSV export once `ready`." },
        },
      },
      VendorPage: page("Vendor", "A page of vendors."),
      ProductPage: page("Product", "A page of products, newest first."),
      OrderPage: page("Order", "A page of orders, newest first."),
      ResourcePage: page("Resource", "A page of resources."),
      TransactionPage: page("Transaction", "A page of transactions, newest first."),
      CreateOrderRequest: {
        type: "object",
        description: "Create-order body (docs/api/cloud.md §2). Unknown fields are ignored.",
        required: ["client_order_no", "product_id", "quantity", "billing_cycle", "customer"],
        properties: {
          client_order_no: {
            type: "string",
            minLength: 1,
            maxLength: 64,
            pattern: TOKEN,
            description: "The caller's own order number, unique per account; no spaces.",
          },
          product_id: { type: "string", minLength: 1, maxLength: 40, description: "An `available` product." },
          quantity: { type: "integer", minimum: 1, maximum: 1000 },
          billing_cycle: { type: "string", minLength: 1, maxLength: 20, description: "One of the product's `billing_cycles[].cycle`." },
          customer: {
            type: "object",
            required: ["customer_id"],
            properties: {
              customer_id: { type: "string", minLength: 1, maxLength: 64, pattern: TOKEN, description: "The caller's customer; no spaces." },
              contact: { type: "string", minLength: 1, maxLength: 200, pattern: "\\S", description: "Contact address of the customer." },
            },
          },
          metadata: {
            type: "object",
            description:
              "Free-form, at most 8192 characters of JSON. Keys in the product's `required_fields` must be non-empty strings; `domain` must be a host name such as www.example.com. " +
              'Sandbox: `"simulate": "fail"` makes the vendor fail the order.',
          },
        },
      },
      RenewOrderRequest: {
        type: "object",
        description: "Renew body; may be omitted.",
        properties: {
          periods: { type: "integer", minimum: 1, maximum: 36, default: 1 },
          billing_cycle: { type: "string", minLength: 1, maxLength: 20, description: "A cycle of the product; default the order's." },
        },
      },
      CreateDomainRequest: {
        type: "object",
        description: "Create-domain body (docs/architecture.md §8). Unknown fields are ignored.",
        required: ["domain", "origin", "protocol", "order_id", "customer_id"],
        properties: {
          domain: {
            type: "string",
            format: "hostname",
            maxLength: 230,
            description: "Fully qualified, at least two labels, no wildcard; folded to lower case.",
          },
          origin: {
            type: "object",
            required: ["type", "address"],
            properties: {
              type: { type: "string", enum: ["ip", "domain"] },
              address: {
                type: "string",
                minLength: 1,
                maxLength: 253,
                description:
                  "A public IPv4 or IPv6 address (`ip`), or a host name other than the domain (`domain`) whose DNS answers (A, AAAA) are all public: a name that resolves to a private or local address, or does not resolve, is 422 on `origin.address`, as a private IP is.",
              },
              port: { type: "integer", minimum: 1, maximum: 65535, description: "Omitted: the protocol's default." },
            },
          },
          protocol: { type: "string", enum: ["http", "https"] },
          order_id: { type: "string", minLength: 1, maxLength: 40, description: "An active CDN order of the account." },
          customer_id: { type: "string", minLength: 1, maxLength: 64, description: "The order's customer." },
        },
      },
      PurgeRequest: {
        type: "object",
        description: "Purge body (docs/architecture.md §8). Unknown fields are ignored.",
        required: ["type", "targets"],
        properties: {
          type: { type: "string", enum: ["url", "directory"] },
          targets: {
            type: "array",
            minItems: 1,
            maxItems: 100,
            description:
              "`url`: absolute http(s) URLs on the domain. `directory`: such URLs ending in `/` without a query, or paths starting and ending with `/`.",
            items: { type: "string", minLength: 1, maxLength: 2048 },
          },
        },
      },
    },
  },
};
