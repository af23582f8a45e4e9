/**
 * The generation REST shim (`/api/v1/*`, docs/api/generation.md §4; docs/architecture.md §8): each documented call
 * becomes one GraphQL operation on the graph; results and errors are mapped back to the spec's
 * bodies: `{"code":200,"data":...}` and `{"code":<status>,"message":...}`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError, ERROR_CODES, invalidFieldError, type ErrorCode, type ErrorDetails } from "../../src/errors.ts";
import { pageSize } from "../../src/pagination.ts";
import { yuanNumber } from "../../src/shared/money.js";
import type { Gateway } from "../graph/gateway.ts";
import { bodyReadError, isJsonContentType, jsonTooDeep, parseJsonObject, readBody, tooDeepError } from "../http/body.ts";
import { policyHeaders, runOperation, sha256Hex, toShimError, type CallContext, type ShimError } from "../graph/client.ts";
import type { OwnedOperation } from "../graph/direct.ts";
import { toCamel } from "../../src/names.ts";
import { ImageGenerationRequest, VideoGenerationRequest, generationErrorMap, type RestTask, type RestUsage } from "./shapes/generation.ts";
import { checkBody, toGraphqlInput } from "./shapes/zod.ts";
import { validateGenerationRequest, type GenerationInput } from "../../src/generation/validation.ts";
import { OPERATIONS } from "./generation-operations.ts";

/**
 * What the service answers a submission that lacks a required field (`prompt`; `model_id` of an
 * image), which GraphQL would refuse in its own words before the service saw it: the service's
 * own first validation error, so a blank `prompt` still comes before a missing `model_id`
 * (docs/api/generation.md §7). Such an input fails before any reference URL is looked up.
 * @param field the missing field (REST name), for an error should the validator pass it
 */
async function missingFieldError(kind: "video" | "image", input: GenerationInput, field: string): Promise<AppError> {
  try {
    await validateGenerationRequest(kind, input, async () => false);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  return invalidFieldError(field);
}

// The operations of this shim live in ./generation-operations.ts, which imports nothing (the
// contract check reads them without loading the gateway).
export { OPERATIONS };

/** A task as the operations select it (TASK_FIELDS, ./generation-operations.ts). */
interface TaskNode {
  id: string;
  statusCode: number;
  statusName: string;
  result: string | null;
  images: string[] | null;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  price: { amount: string };
  refunded: { amount: string };
  charged: { amount: string };
  model: { id: number; name: string; kind: "VIDEO" | "IMAGE" };
}

/** The REST task body of docs/architecture.md §8, as its shape describes it. */
export function restTask(task: TaskNode): RestTask {
  return {
    task_id: task.id,
    model_id: task.model.id,
    model_name: task.model.name,
    kind: task.model.kind === "VIDEO" ? "video" : "image",
    status: task.statusCode,
    status_name: task.statusName,
    result: task.result ?? null,
    images: task.images ?? null,
    error: task.error ?? null,
    amount: yuanNumber(task.charged),
    price: yuanNumber(task.price),
    refunded: yuanNumber(task.refunded),
    created_at: task.createdAt,
    updated_at: task.updatedAt,
  };
}

/** The viewer as OPERATIONS.usage selects it. */
interface UsageViewer {
  balance: { amount: string };
  spent: { amount: string };
  billedSeconds: number;
  billedImages: number;
  tasks: { nodes: TaskNode[] };
  recentRequests: { method: string; path: string; status: number; at: string }[];
}

/** Writes a JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Writes a generation error body (docs/api/generation.md §7): `{code: <status>, message}`, the status
 * being the registry code's (src/errors.ts), with `Retry-After` on 429 (docs/architecture.md §8).
 * @param error a registry code, the message (default: the registry's) and details
 */
export function sendGenerationError(res: ServerResponse, error: { code: ErrorCode; message?: string; details?: ErrorDetails }): void {
  const { status, message } = ERROR_CODES[error.code];
  const retryAfter = error.details?.retry_after_seconds;
  if (status === 429 && typeof retryAfter === "number") res.setHeader("retry-after", String(retryAfter));
  sendJson(res, status, { code: status, message: error.message ?? message });
}

/** Dependencies of the shim. */
export interface GenerationShimDeps {
  gateway: Gateway;
  bodyLimit: number;
  /**
   * Runs an operation the generation subgraph owns whole without planning it through the
   * supergraph (router/graph/direct.ts); unset: through the gateway. Every operation of this
   * shim is one.
   */
  owned?: OwnedOperation;
}

/** One REST request as the shim sees it. */
interface RestCall {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  params: Record<string, string | undefined>;
  query: URLSearchParams;
}

function callContext(call: RestCall, route: string, bodySha256 = sha256Hex("")): CallContext {
  return {
    authorization: call.req.headers.authorization ?? null,
    acceptLanguage: (call.req.headers["accept-language"] as string | undefined) ?? null,
    headers: policyHeaders(call.req, bodySha256),
    requestId: call.requestId,
    route,
  };
}

/**
 * Creates the handlers of `/api/v1/*` and `/health`.
 */
export function createGenerationShim(deps: GenerationShimDeps) {
  const run: OwnedOperation = deps.owned ?? ((_subgraph, query, variables, call) => runOperation(deps.gateway, query, variables, call));
  /**
   * Answers a rejection the shim itself found (bad JSON, wrong types), after authentication:
   * the spec's order of checks puts 401/403 first.
   */
  async function rejectAfterAuth(call: RestCall, route: string, error: ShimError | AppError, bodySha256?: string): Promise<void> {
    const auth = await run("generation", OPERATIONS.auth, {}, { ...callContext(call, route, bodySha256), routeStatus: error.status });
    if (auth.errors?.length) return sendGenerationError(call.res, toShimError(auth.errors[0]!));
    sendGenerationError(call.res, error);
  }

  async function submit(call: RestCall, kind: "video" | "image"): Promise<void> {
    const route = `POST /api/v1/${kind === "video" ? "video" : "images"}/generations`;
    let text: string;
    try {
      text = await readBody(call.req, deps.bodyLimit);
    } catch (error) {
      return sendGenerationError(call.res, bodyReadError(call.req, error));
    }
    const digest = sha256Hex(text);
    if (text && !isJsonContentType(call.req.headers["content-type"])) return rejectAfterAuth(call, route, new AppError("unsupported_media_type"), digest);
    if (jsonTooDeep(text)) return rejectAfterAuth(call, route, tooDeepError(), digest);
    const body = parseJsonObject(text);
    if (!body) return rejectAfterAuth(call, route, new AppError("invalid_json"), digest);
    const shape = kind === "video" ? VideoGenerationRequest : ImageGenerationRequest;
    const input = toGraphqlInput(shape, body, toCamel);
    const problem = checkBody(shape, body, generationErrorMap);
    if (problem?.kind === "type") return rejectAfterAuth(call, route, new AppError("invalid_request", problem.message, { field: problem.field }), digest);
    if (problem) return rejectAfterAuth(call, route, await missingFieldError(kind, input, problem.field), digest);
    const result = await run<Record<"submitVideoGeneration" | "submitImageGeneration", { task: TaskNode }>>(
      "generation",
      kind === "video" ? OPERATIONS.submitVideo : OPERATIONS.submitImage,
      { input },
      callContext(call, route, digest),
    );
    if (result.errors?.length) return sendGenerationError(call.res, toShimError(result.errors[0]!));
    const task = (kind === "video" ? result.data!.submitVideoGeneration : result.data!.submitImageGeneration).task;
    sendJson(call.res, 200, {
      code: 200,
      data: {
        task_id: task.id,
        model_id: task.model.id,
        model_name: task.model.name,
        status: task.statusCode,
        status_name: task.statusName,
        amount: yuanNumber(task.price),
      },
    });
  }

  async function getTask(call: RestCall): Promise<void> {
    const id = call.params.task_id ?? "";
    // The route goes out as a header: the raw (percent-encoded) path, not the decoded id, which may hold NUL or non-Latin-1.
    const result = await run<{ task: TaskNode }>("generation", OPERATIONS.task, { id }, callContext(call, `GET ${(call.req.url ?? "").split("?")[0]}`));
    if (result.errors?.length) return sendGenerationError(call.res, toShimError(result.errors[0]!));
    sendJson(call.res, 200, { code: 200, data: restTask(result.data!.task) });
  }

  async function usage(call: RestCall): Promise<void> {
    const route = "GET /api/v1/usage";
    let first: number;
    try {
      first = pageSize(call.query.get("limit"), "limit");
    } catch (error) {
      return rejectAfterAuth(call, route, error as AppError);
    }
    const result = await run<{ viewer: UsageViewer }>("generation", OPERATIONS.usage, { first }, callContext(call, route));
    if (result.errors?.length) return sendGenerationError(call.res, toShimError(result.errors[0]!));
    const viewer = result.data!.viewer;
    const data: RestUsage = {
      balance: yuanNumber(viewer.balance),
      spent: yuanNumber(viewer.spent),
      billed_seconds: viewer.billedSeconds,
      billed_images: viewer.billedImages,
      tasks: viewer.tasks.nodes.map(restTask),
      recent_requests: viewer.recentRequests,
    };
    sendJson(call.res, 200, { code: 200, data });
  }

  return {
    submitVideo: (call: RestCall) => submit(call, "video"),
    submitImage: (call: RestCall) => submit(call, "image"),
    getTask,
    usage,
  };
}

export type { RestCall };
