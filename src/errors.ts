/**
 * One error hierarchy for the whole system (docs/architecture.md §4).
 *
 * Every error a user can see is an {@link AppError}: a stable `code`, an HTTP `status`, a
 * message and optional `details`. GraphQL carries them as `extensions.code` and
 * `extensions.http.status`; the REST shims map them to their spec's bodies. Codes are
 * lower snake case because the cloud spec's error bodies use them verbatim
 * (`validation_failed`, `conflict`, ...); GraphQL uses the same strings so a code never has two
 * spellings.
 */

/** The registry: every code with its HTTP status and default message. */
export const ERROR_CODES = {
  invalid_json: { status: 400, message: "Request body must be valid JSON" },
  invalid_request: { status: 400, message: "Invalid request" },
  validation_failed: { status: 422, message: "Validation failed" },
  unauthorized: { status: 401, message: "Invalid or missing API key" },
  key_disabled: { status: 403, message: "API key is disabled" },
  forbidden: { status: 403, message: "Forbidden" },
  insufficient_balance: { status: 402, message: "Insufficient balance" },
  not_found: { status: 404, message: "Not found" },
  method_not_allowed: { status: 405, message: "Method not allowed" },
  task_not_found: { status: 404, message: "Task not found" },
  conflict: { status: 409, message: "Conflict" },
  query_too_costly: { status: 400, message: "Query is too costly" },
  payload_too_large: { status: 413, message: "Request body is too large" },
  rate_limited: { status: 429, message: "Too many requests" },
  internal: { status: 500, message: "Internal server error" },
  upstream_failed: { status: 502, message: "Upstream request failed" },
  service_unavailable: { status: 503, message: "Service unavailable" },
  upstream_timeout: { status: 504, message: "Upstream request timed out" },
  request_timeout: { status: 504, message: "Request timed out" },
  upstream_error: { status: 502, message: "Upstream vendor error" },
} as const satisfies Record<string, { status: number; message: string }>;

/** A stable error code of {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Extra machine-readable facts about an error, such as `{ field: "seconds" }`. */
export type ErrorDetails = Record<string, unknown>;

/**
 * The one error type users see. `status` is the HTTP status of the code in the registry.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetails;

  /**
   * @param code a registry code; decides the HTTP status
   * @param message overrides the registry's default message
   * @param details extra facts, carried in GraphQL `extensions` and the cloud error body
   */
  constructor(code: ErrorCode, message?: string, details?: ErrorDetails) {
    super(message ?? ERROR_CODES[code].message);
    this.name = "AppError";
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.details = details;
  }
}

/**
 * Creates an {@link AppError}; Directus-style shorthand.
 * @throws nothing; returns the error for the caller to throw
 */
export function createError(code: ErrorCode, message?: string, details?: ErrorDetails): AppError {
  return new AppError(code, message, details);
}

/** True when `value` is an {@link AppError}. */
export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

/**
 * docs/api/generation.md §7: the generation service's exact validation messages.
 * Kept here so the validator and the REST shim (which maps GraphQL type errors of a field to the
 * same message) share one wording.
 */
export const validationMessages = {
  prompt: "prompt must be a non-empty string",
  modelId: "model_id must be one of: 52, 51, 67, 69, 39, 45",
  unsupported: (field: string) => `${field} has an unsupported value`,
  publicUrl: (field: string) => `${field} must be a public HTTPS URL`,
} as const;

/**
 * The 400 error of a generation request field, with the spec's message for that field:
 * `prompt` and `model_id` have their own messages, every other field "{field} has an unsupported
 * value".
 * @param field the REST (snake case) field name
 * @param extra further details (for example the limit that was passed)
 */
export function invalidFieldError(field: string, extra: ErrorDetails = {}): AppError {
  const message =
    field === "prompt"
      ? validationMessages.prompt
      : field === "model_id"
        ? validationMessages.modelId
        : validationMessages.unsupported(field);
  return new AppError("invalid_request", message, { field, ...extra });
}
