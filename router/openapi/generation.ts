/**
 * The OpenAPI 3.1 document of the generation REST surface (`/api/v1/*` and `/health`), served at
 * `GET /api/v1/openapi.json`: the routes, their parameters and statuses, with every body taken
 * from its zod shape (router/rest/shapes/generation.ts). Statuses and messages come from the error
 * registry (src/errors.ts).
 */
import { ERROR_CODES, validationMessages, type ErrorCode } from "../../src/errors.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageSizeError } from "../../src/pagination.ts";
import { moneySchema, OpenApiDocumentShape } from "../rest/shapes/common.ts";
import {
  GenerationError,
  Health,
  HealthUnavailable,
  ImageGenerationRequest,
  PublicHttpsUrl,
  SubmissionAnswer,
  TaskAnswer,
  UsageAnswer,
  VideoGenerationRequest,
} from "../rest/shapes/generation.ts";
import { int, z } from "../rest/shapes/zod.ts";
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
/** The request headers every keyed operation reads. */
const KEYED_PARAMETERS = [parameterRef("AcceptLanguage"), parameterRef("XServiceSignature"), parameterRef("XRequestId")];
const HEADERS = { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" }, ...rateLimitHeaderRefs };

/** A JSON answer with the request id header. */
const json = (description: string, schema: z.ZodTypeAny) => ({ description, headers: HEADERS, content: { "application/json": { schema } } });

/** `` `message` `` of a registry code, for descriptions. */
const said = (code: ErrorCode) => `\`${ERROR_CODES[code].message}\``;

/** The error responses of this document: their registry code (the status) and description. */
const ERROR_RESPONSES = {
  BadRequest: {
    code: "invalid_request",
    description:
      `Invalid request. Messages: ${said("invalid_json")}, \`${validationMessages.prompt}\`, \`${validationMessages.modelId}\`, ` +
      `\`${validationMessages.unsupported("{field}")}\`, \`${validationMessages.publicUrl("{field}")}\`, \`${pageSizeError(0, "limit")!.message}\`, ` +
      "`Request body is nested too deeply: at most 64 levels of objects and arrays`.",
  },
  Unauthorized: { code: "unauthorized", description: `${said("unauthorized")}, or a missing, invalid or stale \`X-Service-Signature\`.` },
  PaymentRequired: { code: "insufficient_balance", description: `${said("insufficient_balance")}: nothing was debited.` },
  Forbidden: {
    code: "key_disabled",
    description: `${said("key_disabled")}, the key lacks the \`generation\` scope, or the source IP is outside the key's allow-list.`,
  },
  NotFound: { code: "task_not_found", description: `${said("task_not_found")}: unknown, or submitted with another key.` },
  PayloadTooLarge: { code: "payload_too_large", description: `${said("payload_too_large")} (\`BODY_LIMIT_BYTES\`, 1 MiB by default).` },
  UnsupportedMediaType: {
    code: "unsupported_media_type",
    description: `${said("unsupported_media_type")}: the body is declared as another type (a form, \`text/plain\`) or not at all.`,
  },
  TooManyRequests: { code: "rate_limited", description: "The key's rate limit (requests per second) is exceeded." },
  BadGateway: { code: "upstream_failed", description: `${said("upstream_failed")}: the price was refunded in full.` },
  ServiceUnavailable: { code: "service_unavailable", description: `${said("service_unavailable")}: the generation subgraph cannot be reached.` },
  GatewayTimeout: { code: "upstream_timeout", description: `${said("upstream_timeout")}: the price was refunded in full.` },
} as const satisfies Record<string, { code: ErrorCode; description: string }>;
type ErrorName = keyof typeof ERROR_RESPONSES;

/** Error responses by status, for an operation's `responses`. */
function errors(...names: ErrorName[]): Record<string, Reference> {
  return Object.fromEntries(names.map((name) => [String(ERROR_CODES[ERROR_RESPONSES[name].code].status), responseRef(name)]));
}

/** The responses every authenticated operation can give. */
const AUTH_ERRORS = errors("Unauthorized", "Forbidden", "TooManyRequests", "ServiceUnavailable");

const registry = new OpenAPIRegistry();
registerRaw(registry, "securitySchemes", "bearerAuth", bearerAuth);
registerRaw(registry, "parameters", "XServiceSignature", signatureParameter);
registerRaw(registry, "parameters", "XRequestId", requestIdParameter);
registerRaw(registry, "parameters", "AcceptLanguage", {
  name: "Accept-Language",
  in: "header",
  required: false,
  description: "`status_name` is Chinese unless this prefers English (`en`).",
  schema: { type: "string" },
});
registerRaw(registry, "headers", "X-Request-Id", requestIdHeader);
registerRaw(registry, "headers", "RateLimit-Policy", rateLimitPolicyHeader);
registerRaw(registry, "headers", "RateLimit", rateLimitHeader);
// Registered first, so a field that describes one of them in its own words does not rename the component.
registry.register("Money", moneySchema);
registry.register("PublicHttpsUrl", PublicHttpsUrl);
registry.register("Error", GenerationError);
for (const [name, { code, description }] of Object.entries(ERROR_RESPONSES)) {
  const status = ERROR_CODES[code].status;
  const headers = name === "TooManyRequests" ? { "X-Request-Id": HEADERS["X-Request-Id"], "Retry-After": retryAfterHeader, ...rateLimitHeaderRefs } : HEADERS;
  registerRaw(registry, "responses", name, {
    description,
    headers,
    content: { "application/json": { schema: { allOf: [{ $ref: "#/components/schemas/Error" }], type: "object", properties: { code: { const: status } } } } },
  });
}

const submit = (kind: "video" | "image") => {
  const video = kind === "video";
  registry.registerPath({
    method: "post",
    path: video ? "/api/v1/video/generations" : "/api/v1/images/generations",
    operationId: video ? "submitVideoGeneration" : "submitImageGeneration",
    summary: video ? "Submit a video generation task" : "Submit an image generation task",
    description: video
      ? "Validates the request, debits the price (seconds × count × the model's rate) and hands the task to the upstream. " +
        "An upstream failure refunds the price in full and answers 502 (504 on timeout). Poll the task with `data.task_id`."
      : "Validates the request, debits 0.30 yuan × count and hands the task to the upstream; the task is settled to the images actually generated. " +
        "An upstream failure refunds the price in full and answers 502 (504 on timeout). Poll the task with `data.task_id`.",
    tags: ["generation"],
    parameters: KEYED_PARAMETERS,
    request: {
      body: { required: true, content: { "application/json": { schema: video ? VideoGenerationRequest : ImageGenerationRequest } } },
    },
    responses: {
      "200": json("Accepted: the task exists with status 0 and its price is debited.", SubmissionAnswer),
      ...errors("BadRequest", "PaymentRequired", "PayloadTooLarge", "UnsupportedMediaType"),
      ...AUTH_ERRORS,
      ...errors("BadGateway", "GatewayTimeout"),
    },
  });
};
submit("video");
submit("image");

registry.registerPath({
  method: "get",
  path: "/api/v1/tasks/{task_id}",
  operationId: "getTask",
  summary: "Read a task",
  description: "Only the key that submitted the task can read it; any other key gets 404.",
  tags: ["generation"],
  request: {
    params: z.object({
      task_id: z
        .string()
        .min(1)
        .openapi({ param: { description: "`data.task_id` of the submission." } }),
    }),
  },
  parameters: KEYED_PARAMETERS,
  responses: { "200": json("The task.", TaskAnswer), ...errors("NotFound"), ...AUTH_ERRORS },
});

registry.registerPath({
  method: "get",
  path: "/api/v1/usage",
  operationId: "getUsage",
  summary: "Balance, spending, billed units, tasks and recent requests of the calling key",
  description: "The balance belongs to the key's account; tasks and recent requests are the key's own, newest first.",
  tags: ["generation"],
  parameters: KEYED_PARAMETERS,
  request: {
    query: z.object({
      limit: int()
        .min(1)
        .max(MAX_PAGE_SIZE)
        .default(DEFAULT_PAGE_SIZE)
        .openapi({
          param: {
            description: `How many tasks and recent requests to list: an integer from 1 to ${MAX_PAGE_SIZE} in decimal digits; anything else (\`1e2\`, \`0x10\`, \` 5\` included) is 400.`,
          },
        }),
    }),
  },
  responses: { "200": json("The usage of the calling key.", UsageAnswer), ...errors("BadRequest"), ...AUTH_ERRORS },
});

registry.registerPath({
  method: "get",
  path: "/api/v1/openapi.json",
  operationId: "getGenerationOpenApi",
  summary: "This OpenAPI document",
  description: "Generated from the shapes the router checks requests with; no key needed.",
  tags: ["service"],
  security: [],
  responses: { "200": json("The OpenAPI 3.1 document of the generation API.", OpenApiDocumentShape) },
});

registry.registerPath({
  method: "get",
  path: "/health",
  operationId: "getHealth",
  summary: "Readiness and the available models",
  description: "200 only when the router and every subgraph answer; 503 otherwise, naming what is not ready.",
  tags: ["service"],
  security: [],
  responses: { "200": json("Ready.", Health), "503": json("Not ready; `models` is empty.", HealthUnavailable) },
});

/** The generation REST surface's OpenAPI document. */
export const generationOpenApi = buildDocument(registry, {
  info: {
    title: "Switchyard generation API",
    version: "1.0.0",
    description:
      "Asynchronous video and image generation on a prepaid balance (generation spec). Every path but `/health` and this document needs an API key. " +
      'Errors are `{"code": <HTTP status>, "message": "..."}`. Money is yuan as JSON numbers with at most three decimals. ' +
      "Checks run in this order: key (401/403, 429), body (413 too large, 415 not `application/json`, 400 invalid JSON), validation (400), balance (402), upstream (502/504, refunded). " +
      "An unknown path is 404, a known path with another method 405, both with the error body; a request target that is not a URL is 400 `Malformed request URL`. " +
      "A request line and headers over 16 KiB are refused by the HTTP server itself with 431 and no body.",
  },
  servers: [{ url: "/", description: "This router" }],
  security: [{ bearerAuth: [] }],
  tags: [
    { name: "generation", description: "Tasks, usage and balance of the calling key." },
    { name: "service", description: "Health and this document; no key needed." },
  ],
});
