/**
 * The OpenAPI 3.1 document of the generation REST surface (`/api/v1/*` and `/health`), served at
 * `GET /api/v1/openapi.json`. Shapes: docs/api/generation.md §2-8, docs/architecture.md §4 and §8, README
 * "REST answers"; implementation router/rest/generation.ts and router/health.ts.
 *
 * Model ids come from the catalog (src/generation/catalog.ts, data only), statuses and messages from
 * the error registry (src/errors.ts); the sizes below are written out and
 * test/integration/openapi.test.ts compares them with the catalog and validates real answers
 * against this document.
 *
 * Longer than 400 lines on purpose: it is one document literal that reads top to bottom like the
 * API reference, each operation next to the schemas it names; split, a path and its body would
 * sit in different files. Its helpers and shared parts are in ./common.ts.
 */
import { ERROR_CODES, validationMessages, type ErrorCode } from "../../src/errors.ts";
import { IMAGE_MODEL_ID, DEFAULT_VIDEO_MODEL_ID, MODEL_IDS, VIDEO_MODEL_IDS } from "../../src/generation/catalog.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, pageSizeError } from "../../src/pagination.ts";
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
import type { JsonSchema, OpenApiDocument, Operation, Reference, Response } from "./types.ts";

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const responseRef = (name: string): Reference => ({ $ref: `#/components/responses/${name}` });
const parameterRef = (name: string): Reference => ({ $ref: `#/components/parameters/${name}` });

/** Union of the video models' aspect ratios (docs/api/generation.md §2). */
const VIDEO_SIZES = ["9:16", "16:9", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9"] as const;
/** The image model's aspect ratios (docs/api/generation.md §2). */
const IMAGE_SIZES = ["auto", "1:1", "3:2", "2:3", "4:3", "3:4", "5:4", "4:5", "16:9", "9:16", "2:1", "1:2", "21:9", "9:21"] as const;

/** Longest prompt in Unicode code points (src/generation/validation.ts MAX_PROMPT_CODE_POINTS). */
const MAX_PROMPT_CODE_POINTS = 4000;
/** A prompt: JSON Schema's maxLength counts code points too, not UTF-16 units. */
const prompt = (what: string): JsonSchema => ({
  type: "string",
  minLength: 1,
  maxLength: MAX_PROMPT_CODE_POINTS,
  pattern: "\\S",
  description: `Description of the ${what}: at least one visible character (white space and invisible characters such as U+200B, U+2060, U+FEFF, U+00AD do not count), at most ${MAX_PROMPT_CODE_POINTS} Unicode code points (an emoji counts once), no U+0000. Otherwise 400 \`prompt must be a non-empty string\`.`,
});

const url = (description: string): JsonSchema => ({ ...ref("PublicHttpsUrl"), description });
const urls = (description: string, maxItems: number): JsonSchema => ({ type: "array", description, maxItems, items: ref("PublicHttpsUrl") });

/** An error answer whose `code` is the HTTP status of the registry code. */
function errorResponse(code: ErrorCode, description: string): Response {
  const status = ERROR_CODES[code].status;
  return {
    description,
    headers: { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" }, ...rateLimitHeaderRefs },
    content: {
      "application/json": {
        schema: { type: "object", allOf: [ref("Error")], properties: { code: { const: status } } },
      },
    },
  };
}

/** A JSON answer with the request id header. */
function jsonResponse(description: string, schema: JsonSchema): Response {
  return {
    description,
    headers: { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" }, ...rateLimitHeaderRefs },
    content: { "application/json": { schema } },
  };
}

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

/** Error responses by status, for an operation's `responses`. */
function errors(...names: (keyof typeof ERROR_RESPONSES)[]): Record<string, Reference> {
  return Object.fromEntries(names.map((name) => [String(ERROR_CODES[ERROR_RESPONSES[name].code].status), responseRef(name)]));
}

/** The responses every authenticated operation can give. */
const AUTH_ERRORS = errors("Unauthorized", "Forbidden", "TooManyRequests", "ServiceUnavailable");

function submitOperation(kind: "video" | "image"): Operation {
  const video = kind === "video";
  return {
    operationId: video ? "submitVideoGeneration" : "submitImageGeneration",
    summary: video ? "Submit a video generation task" : "Submit an image generation task",
    description: video
      ? "Validates the request, debits the price (seconds × count × the model's rate) and hands the task to the upstream. " +
        "An upstream failure refunds the price in full and answers 502 (504 on timeout). Poll the task with `data.task_id`."
      : "Validates the request, debits 0.30 yuan × count and hands the task to the upstream; the task is settled to the images actually generated. " +
        "An upstream failure refunds the price in full and answers 502 (504 on timeout). Poll the task with `data.task_id`.",
    tags: ["generation"],
    parameters: [parameterRef("AcceptLanguage"), parameterRef("XServiceSignature"), parameterRef("XRequestId")],
    requestBody: {
      required: true,
      content: { "application/json": { schema: ref(video ? "VideoGenerationRequest" : "ImageGenerationRequest") } },
    },
    responses: {
      "200": jsonResponse("Accepted: the task exists with status 0 and its price is debited.", ref("SubmissionAnswer")),
      ...errors("BadRequest", "PaymentRequired", "PayloadTooLarge", "UnsupportedMediaType"),
      ...AUTH_ERRORS,
      ...errors("BadGateway", "GatewayTimeout"),
    },
  };
}

/** The generation REST surface's OpenAPI document. */
export const generationOpenApi: OpenApiDocument = {
  openapi: "3.1.0",
  jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
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
  paths: {
    "/api/v1/video/generations": { post: submitOperation("video") },
    "/api/v1/images/generations": { post: submitOperation("image") },
    "/api/v1/tasks/{task_id}": {
      get: {
        operationId: "getTask",
        summary: "Read a task",
        description: "Only the key that submitted the task can read it; any other key gets 404.",
        tags: ["generation"],
        parameters: [
          { name: "task_id", in: "path", required: true, description: "`data.task_id` of the submission.", schema: { type: "string", minLength: 1 } },
          parameterRef("AcceptLanguage"),
          parameterRef("XServiceSignature"),
          parameterRef("XRequestId"),
        ],
        responses: {
          "200": jsonResponse("The task.", ref("TaskAnswer")),
          ...errors("NotFound"),
          ...AUTH_ERRORS,
        },
      },
    },
    "/api/v1/usage": {
      get: {
        operationId: "getUsage",
        summary: "Balance, spending, billed units, tasks and recent requests of the calling key",
        tags: ["generation"],
        parameters: [
          {
            name: "limit",
            in: "query",
            required: false,
            description: `How many tasks and recent requests to list: an integer from 1 to ${MAX_PAGE_SIZE} in decimal digits; anything else (\`1e2\`, \`0x10\`, \` 5\` included) is 400.`,
            schema: { type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
          },
          parameterRef("AcceptLanguage"),
          parameterRef("XServiceSignature"),
          parameterRef("XRequestId"),
        ],
        responses: {
          "200": jsonResponse("The usage of the calling key.", ref("UsageAnswer")),
          ...errors("BadRequest"),
          ...AUTH_ERRORS,
        },
      },
    },
    "/api/v1/openapi.json": {
      get: {
        operationId: "getGenerationOpenApi",
        summary: "This OpenAPI document",
        tags: ["service"],
        security: [],
        responses: { "200": jsonResponse("The OpenAPI 3.1 document of the generation API.", openApiDocumentSchema) },
      },
    },
    "/health": {
      get: {
        operationId: "getHealth",
        summary: "Readiness and the available models",
        description: "200 only when the router and every subgraph answer; 503 otherwise, naming what is not ready.",
        tags: ["service"],
        security: [],
        responses: {
          "200": jsonResponse("Ready.", ref("Health")),
          "503": jsonResponse("Not ready; `models` is empty.", ref("HealthUnavailable")),
        },
      },
    },
  },
  components: {
    securitySchemes: { bearerAuth },
    parameters: {
      XServiceSignature: signatureParameter,
      XRequestId: requestIdParameter,
      AcceptLanguage: {
        name: "Accept-Language",
        in: "header",
        required: false,
        description: "`status_name` is Chinese unless this prefers English (`en`).",
        schema: { type: "string" },
      },
    },
    headers: { "X-Request-Id": requestIdHeader, "RateLimit-Policy": rateLimitPolicyHeader, RateLimit: rateLimitHeader },
    responses: {
      ...Object.fromEntries(Object.entries(ERROR_RESPONSES).map(([name, { code, description }]) => [name, errorResponse(code, description)])),
      TooManyRequests: {
        ...errorResponse(ERROR_RESPONSES.TooManyRequests.code, ERROR_RESPONSES.TooManyRequests.description),
        headers: { "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" }, "Retry-After": retryAfterHeader, ...rateLimitHeaderRefs },
      },
    },
    schemas: {
      Money: moneySchema,
      Error: {
        type: "object",
        description: "Error body (docs/architecture.md §4): `code` repeats the HTTP status; `message` is the spec's text.",
        required: ["code", "message"],
        additionalProperties: false,
        properties: {
          code: { type: "integer", minimum: 400, maximum: 599 },
          message: { type: "string", minLength: 1 },
        },
      },
      PublicHttpsUrl: {
        type: "string",
        format: "uri",
        pattern: "^https://",
        maxLength: 2048,
        description:
          "A public HTTPS URL: no credentials, not localhost, no private or local IP address, and no host whose DNS answer is one. Otherwise 400 `{field} must be a public HTTPS URL`.",
      },
      VideoGenerationRequest: {
        type: "object",
        description:
          "Body of `POST /api/v1/video/generations` (docs/api/generation.md §2). Allowed `size`, `seconds` and `resolution` depend on the model (see `/health`); " +
          "a value the model does not support is 400 `{field} has an unsupported value`. Unknown fields are ignored.",
        required: ["prompt"],
        properties: {
          prompt: prompt("video"),
          model_id: { type: "integer", enum: [...VIDEO_MODEL_IDS], default: DEFAULT_VIDEO_MODEL_ID, description: `${VIDEO_MODEL_IDS.join(", ")}.` },
          size: { type: "string", enum: [...VIDEO_SIZES], description: "Aspect ratio allowed by the model; omitted: not sent upstream." },
          seconds: {
            type: "integer",
            minimum: 4,
            maximum: 30,
            description: "Duration allowed by the model at the resolution; default the model's (52, 67, 39: 5; 69, 51: 4).",
          },
          resolution: {
            type: "string",
            pattern: "^(?:480|720|1080)[Pp]$",
            description: "480P, 720P or 1080P as the model allows, any case; default the model's lowest.",
          },
          count: { type: "integer", minimum: 1, maximum: 4, default: 1, description: "Videos to generate; the price is multiplied by it." },
          reference_image: url("One reference image."),
          reference_images: urls("Reference images: at most 9 (model 67: images, audios and videos together at most 30).", 30),
          frame_start: url("First-frame image; model 39 only."),
          frame_end: url("Last-frame image; model 39 only."),
          reference_audio: url("One reference audio; models 52, 67, 69, 51. Models 52, 67 and 69 need an image or a video with it."),
          reference_audios: urls("Reference audios: at most 3 (model 67: see reference_images); models 52, 67, 69, 51.", 30),
          reference_video: url("One reference video; models 52, 67, 69, 51."),
          reference_videos: urls("Reference videos: at most 3 (model 67: see reference_images); models 52, 67, 69, 51.", 30),
        },
      },
      ImageGenerationRequest: {
        type: "object",
        description: "Body of `POST /api/v1/images/generations` (docs/api/generation.md §2). Unknown fields are ignored.",
        required: ["prompt", "model_id"],
        properties: {
          prompt: prompt("image"),
          model_id: { type: "integer", const: IMAGE_MODEL_ID, description: `Always ${IMAGE_MODEL_ID}.` },
          size: { type: "string", enum: [...IMAGE_SIZES], description: "Aspect ratio, or auto." },
          resolution: { type: "string", pattern: "^1[Kk]$", description: "Only 1k (any case)." },
          count: { type: "integer", minimum: 1, maximum: 4, default: 1, description: "Images to generate; billed for the images actually generated." },
          reference_image: url("One reference image."),
          reference_images: urls("Reference images; with reference_image at most 9.", 9),
        },
      },
      Submission: {
        type: "object",
        description: "The task just submitted (docs/architecture.md §8).",
        required: ["task_id", "model_id", "model_name", "status", "status_name", "amount"],
        additionalProperties: false,
        properties: {
          task_id: { type: "string", minLength: 1, description: "Id to poll `GET /api/v1/tasks/{task_id}` with." },
          model_id: { type: "integer", enum: [...MODEL_IDS] },
          model_name: { type: "string" },
          status: { type: "integer", const: 0, description: "0: waiting." },
          status_name: { type: "string", description: "Localized label of the status." },
          amount: { ...ref("Money"), description: "Yuan debited now." },
        },
      },
      SubmissionAnswer: {
        type: "object",
        required: ["code", "data"],
        additionalProperties: false,
        properties: { code: { type: "integer", const: 200 }, data: ref("Submission") },
      },
      Task: {
        type: "object",
        description: "A generation task (docs/api/generation.md §2-3; docs/architecture.md §8).",
        required: [
          "task_id",
          "model_id",
          "model_name",
          "kind",
          "status",
          "status_name",
          "result",
          "images",
          "error",
          "amount",
          "price",
          "refunded",
          "created_at",
          "updated_at",
        ],
        additionalProperties: false,
        properties: {
          task_id: { type: "string", minLength: 1 },
          model_id: { type: "integer", enum: [...MODEL_IDS] },
          model_name: { type: "string" },
          kind: { type: "string", enum: ["video", "image"] },
          status: { type: "integer", enum: [0, 1, 2, 3, 4], description: "0 waiting, 1 succeeded, 2 failed, 3 processing, 4 submitted or syncing assets." },
          status_name: { type: "string", description: "Localized label of the status (Chinese, or English for `Accept-Language: en`)." },
          result: { type: ["string", "null"], format: "uri", description: "Result address when status is 1, else null." },
          images: {
            type: ["array", "null"],
            items: { type: "string", format: "uri" },
            description: "Every generated image of an image task with status 1, else null.",
          },
          error: { type: ["string", "null"], description: "Failure reason when status is 2, else null." },
          amount: { ...ref("Money"), description: "What the task costs in the end: price − refunded." },
          price: { ...ref("Money"), description: "Yuan debited at submission." },
          refunded: { ...ref("Money"), description: "Yuan refunded (failure, or images not generated)." },
          created_at: dateTime,
          updated_at: dateTime,
        },
      },
      TaskAnswer: {
        type: "object",
        required: ["code", "data"],
        additionalProperties: false,
        properties: { code: { type: "integer", const: 200 }, data: ref("Task") },
      },
      RequestRecord: {
        type: "object",
        description: "One recent request of the key.",
        required: ["method", "path", "status", "at"],
        additionalProperties: false,
        properties: {
          method: { type: "string" },
          path: { type: "string" },
          status: { type: "integer", description: "HTTP status answered." },
          at: dateTime,
        },
      },
      Usage: {
        type: "object",
        description: "Usage of the calling key (docs/architecture.md §8). The balance belongs to the key's account.",
        required: ["balance", "spent", "billed_seconds", "billed_images", "tasks", "recent_requests"],
        additionalProperties: false,
        properties: {
          balance: ref("Money"),
          spent: {
            ...ref("Money"),
            description: "What the key's generation tasks took from the account's balance, minus refunds; cloud orders (customer wallets) are not included.",
          },
          billed_seconds: { type: "integer", minimum: 0, description: "Seconds × count over video tasks not refunded." },
          billed_images: { type: "integer", minimum: 0, description: "Images charged after settlement." },
          tasks: { type: "array", items: ref("Task"), description: "Newest first, at most `limit`." },
          recent_requests: { type: "array", items: ref("RequestRecord"), description: "Newest first, at most `limit`." },
        },
      },
      UsageAnswer: {
        type: "object",
        required: ["code", "data"],
        additionalProperties: false,
        properties: { code: { type: "integer", const: 200 }, data: ref("Usage") },
      },
      Model: {
        type: "object",
        description: "A model and what it accepts (docs/api/generation.md §1, §2 and §8).",
        required: ["model_id", "model_name", "kind", "sizes", "resolutions", "durations", "default_seconds", "max_count", "references"],
        additionalProperties: false,
        properties: {
          model_id: { type: "integer", enum: [...MODEL_IDS] },
          model_name: { type: "string" },
          kind: { type: "string", enum: ["video", "image"] },
          sizes: { type: "array", items: { type: "string" } },
          resolutions: { type: "array", items: { type: "string" } },
          durations: {
            type: "object",
            description: "Allowed seconds per resolution; empty for images.",
            additionalProperties: { type: "array", items: { type: "integer", minimum: 1 } },
          },
          default_seconds: { type: ["integer", "null"], description: "Seconds used when a video request omits them; null for images." },
          max_count: { type: "integer", minimum: 1 },
          references: {
            type: "object",
            required: ["kinds", "frames", "max_images", "max_audios", "max_videos", "max_total", "audio_needs_image_or_video"],
            additionalProperties: false,
            properties: {
              kinds: { type: "array", items: { type: "string", enum: ["image", "audio", "video"] } },
              frames: { type: "boolean", description: "Whether frame_start and frame_end are accepted." },
              max_images: { type: ["integer", "null"], minimum: 0, description: "null: only max_total applies." },
              max_audios: { type: ["integer", "null"], minimum: 0 },
              max_videos: { type: ["integer", "null"], minimum: 0 },
              max_total: { type: ["integer", "null"], minimum: 0, description: "Images, audios and videos together; null: only the per-kind limits apply." },
              audio_needs_image_or_video: { type: "boolean" },
            },
          },
        },
      },
      SubgraphStates: {
        type: "object",
        description: "Each subgraph's readiness.",
        additionalProperties: { type: "string", enum: ["ok", "unavailable"] },
      },
      Health: {
        type: "object",
        required: ["status", "subgraphs", "models"],
        additionalProperties: false,
        properties: {
          status: { type: "string", const: "ok" },
          subgraphs: ref("SubgraphStates"),
          models: { type: "array", items: ref("Model"), description: "The models currently available." },
        },
      },
      HealthUnavailable: {
        type: "object",
        required: ["status", "subgraphs", "models"],
        additionalProperties: false,
        properties: {
          status: { type: "string", const: "unavailable" },
          subgraphs: ref("SubgraphStates"),
          models: { type: "array", maxItems: 0 },
        },
      },
    },
  },
};
