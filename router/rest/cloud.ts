/**
 * The cloud REST shim (`/openapi/v1/*`, docs/api/cloud.md §4; docs/architecture.md §8): each documented call is
 * one GraphQL operation on the graph; answers use the spec's envelope
 * `{success, request_id, data}` and error body `{success:false, request_id, error:{code, message, details}}`.
 */
import type { ServerResponse } from "node:http";
import { AppError, ERROR_CODES, cloudErrorOf, notOneOfError, publicDetails, type ErrorCode, type ErrorDetails } from "../../src/errors.ts";
import { pageSize } from "../../src/pagination.ts";
import { isOneOf, PRODUCT_STATUSES, TRANSACTION_TYPES } from "../../src/cloud/states.ts";
import type { Gateway } from "../graph/gateway.ts";
import { bodyReadError, isJsonContentType, jsonTooDeep, parseJsonObject, readBody, tooDeepError } from "../http/body.ts";
import { policyHeaders, runOperation, sha256Hex, toShimError, type ShimError } from "../graph/client.ts";
import { toCamel, toSnake } from "../../src/names.ts";
import { CLOUD_INPUTS, cloudErrorMap } from "./shapes/cloud.ts";
import { checkBody, toGraphqlInput } from "./shapes/zod.ts";
import { requireScope, type Scope } from "../../src/auth/scopes.ts";
import { parseOrderInput, parseRenewInput } from "../../src/cloud/order-request.ts";
import { validateDomainInput } from "../../src/cloud/domains.ts";
import { checkPurgeRequest } from "../../src/cloud/purge.ts";
import type { RestCall } from "./generation.ts";
import { CLOUD_OPERATIONS, cloudShapes, type CloudData, type Connection } from "./cloud-shapes.ts";

/** Dependencies of the shim. */
export interface CloudShimDeps {
  gateway: Gateway;
  bodyLimit: number;
}

/** Writes the envelope. */
function send(res: ServerResponse, status: number, requestId: string, data: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify({ success: true, request_id: requestId, data });
  res.writeHead(status, { ...headers, "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(text)) });
  res.end(text);
}

/**
 * Writes the error body (docs/api/cloud.md §7) with the registry's cloud code and status for the
 * error's code (src/errors.ts `cloudErrorOf`: `upstream_timeout` is 502 `upstream_error`), the
 * code's documented details only, with `Retry-After` on 429.
 * @param error a registry code, the message (default: the registry's) and details
 */
export function sendCloudError(res: ServerResponse, requestId: string, error: { code: ErrorCode; message?: string; details?: ErrorDetails }): void {
  const { code, status } = cloudErrorOf(error.code);
  // Only the code's documented details (src/errors.ts `publicDetails`), whoever built the error.
  const details = publicDetails(error.code, error.details);
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
  if (status === 429 && typeof details.retry_after_seconds === "number") headers["retry-after"] = String(details.retry_after_seconds);
  const text = JSON.stringify({ success: false, request_id: requestId, error: { code, message: error.message ?? ERROR_CODES[error.code].message, details } });
  res.writeHead(status, { ...headers, "content-length": String(Buffer.byteLength(text)) });
  res.end(text);
}

const fromAppError = (error: AppError): ShimError => ({ code: error.code, status: error.status, message: error.message, details: error.details ?? {} });

/**
 * What a create or update needs before its service validates the input: the scope the service
 * checks first, and the service's checks that need no database, in its order (the answer to a
 * body lacking a required field, which GraphQL would refuse in its own words: docs/api/cloud.md §7).
 */
interface ServiceRules {
  scope: Scope;
  check: (input: Record<string, unknown>) => unknown;
}

/**
 * The service's answer to an input that lacks a required field: its own first validation error
 * (so `client_order_no is required` still comes before a missing `product_id`).
 * @param field the missing field (REST name), for an error should the checks pass it
 */
function missingFieldError(rules: ServiceRules, input: Record<string, unknown>, field: string): AppError {
  try {
    rules.check(input);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  return new AppError("validation_failed", `${field} is required`, { field });
}

/**
 * Reads `limit` (src/pagination.ts's one rule: default 20, an integer from 1 to 100) and `cursor`.
 * @throws AppError from src/pagination.ts `pageSize` (400 `invalid_request` on this surface)
 */
function pageParams(query: URLSearchParams): { first: number; after: string | null } {
  return { first: pageSize(query.get("limit"), "limit"), after: query.get("cursor") || null };
}

/** Optional query parameter: absent or empty → undefined. */
const param = (query: URLSearchParams, name: string) => query.get(name) || undefined;

/**
 * Creates the handlers of `/openapi/v1/*`.
 */
export function createCloudShim(deps: CloudShimDeps) {
  function context(call: RestCall, bodySha256 = sha256Hex("")) {
    return {
      authorization: call.req.headers.authorization ?? null,
      acceptLanguage: (call.req.headers["accept-language"] as string | undefined) ?? null,
      headers: policyHeaders(call.req, bodySha256),
      requestId: call.requestId,
      route: `${call.req.method} ${(call.req.url ?? "").split("?")[0]}`,
    };
  }

  /**
   * Answers a rejection the shim itself found, after authentication (401/403 come first) and,
   * when `scope` is given, after the scope check the service would have made first (403).
   */
  async function rejectAfterAuth(call: RestCall, error: AppError, bodySha256?: string, scope?: Scope): Promise<void> {
    const auth = await runOperation<Pick<CloudData, "apiKey">>(deps.gateway, CLOUD_OPERATIONS.auth, {}, context(call, bodySha256));
    if (auth.errors?.length) return sendCloudError(call.res, call.requestId, toShimError(auth.errors[0]!));
    try {
      if (scope) requireScope(auth.data!.apiKey, scope);
    } catch (refusal) {
      return sendCloudError(call.res, call.requestId, fromAppError(refusal as AppError));
    }
    sendCloudError(call.res, call.requestId, fromAppError(error));
  }

  /** Runs a query and sends `shape(data)` or the mapped error. */
  async function query(call: RestCall, operation: string, variables: Record<string, unknown>, shape: (data: CloudData) => unknown): Promise<void> {
    const result = await runOperation<CloudData>(deps.gateway, operation, variables, context(call));
    if (result.errors?.length) return sendCloudError(call.res, call.requestId, toShimError(result.errors[0]!));
    send(call.res, 200, call.requestId, shape(result.data!));
  }

  /** A list answer: `data.items` and `data.next_cursor` (null on the last page). */
  const list =
    <T>(pick: (data: CloudData) => Connection<T>, item: (node: T) => unknown) =>
    (data: CloudData) => {
      const connection = pick(data);
      return { items: connection.nodes.map(item), next_cursor: connection.pageInfo.hasNextPage ? connection.pageInfo.endCursor : null };
    };

  async function withPage(call: RestCall, run: (page: { first: number; after: string | null }) => Promise<void>): Promise<void> {
    let page: ReturnType<typeof pageParams>;
    try {
      page = pageParams(call.query);
    } catch (error) {
      return rejectAfterAuth(call, error as AppError);
    }
    return run(page);
  }

  /** A list call with only `limit`, `cursor` and plain `variables` to read (nothing to refuse). */
  const pagedList = <T>(call: RestCall, operation: string, pick: (data: CloudData) => Connection<T>, item: (node: T) => unknown, variables = {}) =>
    withPage(call, (page) => query(call, operation, { ...page, ...variables }, list(pick, item)));

  /**
   * Runs a create/update mutation from a JSON body: strict types (422), a missing required field
   * answered as the service would (`rules`), the Idempotency-Key header into the input,
   * `Idempotent-Replayed: true` on a replay.
   */
  async function mutate(
    call: RestCall,
    inputType: keyof typeof CLOUD_INPUTS,
    operation: string,
    extra: Record<string, unknown>,
    pick: (data: CloudData) => { replayed: boolean; value: unknown },
    status: number,
    rules: ServiceRules,
  ): Promise<void> {
    let text: string;
    try {
      text = await readBody(call.req, deps.bodyLimit);
    } catch (error) {
      return sendCloudError(call.res, call.requestId, fromAppError(bodyReadError(call.req, error)));
    }
    const digest = sha256Hex(text);
    if (text && !isJsonContentType(call.req.headers["content-type"])) return rejectAfterAuth(call, new AppError("unsupported_media_type"), digest);
    if (jsonTooDeep(text)) return rejectAfterAuth(call, tooDeepError(), digest);
    const body = text.trim() === "" && inputType === "RenewOrderInput" ? {} : parseJsonObject(text);
    if (!body) return rejectAfterAuth(call, new AppError("invalid_request", "Request body must be a valid JSON object"), digest);
    const shape = CLOUD_INPUTS[inputType];
    const typeProblem = checkBody(shape, body, cloudErrorMap);
    if (typeProblem?.kind === "type")
      return rejectAfterAuth(call, new AppError("validation_failed", typeProblem.message, { field: typeProblem.field }), digest);
    const input: Record<string, unknown> = { ...toGraphqlInput(shape, body, toCamel), ...extra };
    // The path's values (`order_id`, `domain`) count as sent: only the body can lack a field.
    const missing = checkBody(shape, { ...body, ...Object.fromEntries(Object.entries(extra).map(([name, value]) => [toSnake(name), value])) }, cloudErrorMap);
    if (missing) return rejectAfterAuth(call, missingFieldError(rules, input, missing.field), digest, rules.scope);
    const key = call.req.headers["idempotency-key"];
    if (typeof key === "string") input.idempotencyKey = key;
    else delete input.idempotencyKey;
    const result = await runOperation<CloudData>(deps.gateway, operation, { input }, context(call, digest));
    if (result.errors?.length) return sendCloudError(call.res, call.requestId, toShimError(result.errors[0]!));
    const { replayed, value } = pick(result.data!);
    send(call.res, status, call.requestId, value, replayed ? { "idempotent-replayed": "true" } : {});
  }

  return {
    vendors: (call: RestCall) => pagedList(call, CLOUD_OPERATIONS.vendors, (d) => d.vendors, cloudShapes.vendor),
    products: (call: RestCall) =>
      withPage(call, (page) => {
        const status = param(call.query, "status");
        if (status && !isOneOf(PRODUCT_STATUSES, status)) {
          return rejectAfterAuth(call, notOneOfError("invalid_request", "status", PRODUCT_STATUSES));
        }
        return query(
          call,
          CLOUD_OPERATIONS.products,
          { ...page, category: param(call.query, "category"), vendorId: param(call.query, "vendor_id"), status: status?.toUpperCase() },
          list((d) => d.products, cloudShapes.product),
        );
      }),
    product: (call: RestCall) => query(call, CLOUD_OPERATIONS.product, { id: call.params.product_id }, (d) => cloudShapes.product(d.product)),
    createOrder: (call: RestCall) =>
      mutate(
        call,
        "CreateOrderInput",
        CLOUD_OPERATIONS.createOrder,
        {},
        (d) => ({ replayed: d.createOrder.replayed, value: cloudShapes.order(d.createOrder.order) }),
        201,
        { scope: "orders:write", check: parseOrderInput },
      ),
    order: (call: RestCall) => query(call, CLOUD_OPERATIONS.order, { id: call.params.order_id }, (d) => cloudShapes.order(d.order)),
    orders: (call: RestCall) => pagedList(call, CLOUD_OPERATIONS.orders, (d) => d.orders, cloudShapes.order),
    renewOrder: (call: RestCall) =>
      mutate(
        call,
        "RenewOrderInput",
        CLOUD_OPERATIONS.renewOrder,
        { orderId: call.params.order_id },
        (d) => ({ replayed: d.renewOrder.replayed, value: cloudShapes.order(d.renewOrder.order) }),
        200,
        { scope: "orders:write", check: ({ orderId: _, ...renewal }) => parseRenewInput(renewal) },
      ),
    createDomain: (call: RestCall) =>
      mutate(
        call,
        "CreateDomainInput",
        CLOUD_OPERATIONS.createDomain,
        {},
        (d) => ({ replayed: d.createDomain.replayed, value: cloudShapes.domain(d.createDomain.domain) }),
        201,
        { scope: "domains:write", check: validateDomainInput },
      ),
    domainStatus: (call: RestCall) => query(call, CLOUD_OPERATIONS.domain, { domain: call.params.domain }, (d) => cloudShapes.domain(d.domain)),
    purge: (call: RestCall) =>
      mutate(
        call,
        "PurgeDomainInput",
        CLOUD_OPERATIONS.purge,
        { domain: call.params.domain },
        (d) => ({ replayed: d.purgeDomain.replayed, value: cloudShapes.purge(d.purgeDomain.purgeTask) }),
        201,
        { scope: "domains:write", check: ({ domain, ...purge }) => checkPurgeRequest(String(domain), purge) },
      ),
    bandwidth: (call: RestCall) => usage(call, "bandwidth"),
    traffic: (call: RestCall) => usage(call, "traffic"),
    resources: (call: RestCall) =>
      pagedList(call, CLOUD_OPERATIONS.resources, (d) => d.resources, cloudShapes.resource, { customerId: param(call.query, "customer_id") }),
    balance: (call: RestCall) => {
      const customerId = param(call.query, "customer_id");
      if (!customerId) return rejectAfterAuth(call, new AppError("invalid_request", "customer_id is required", { field: "customer_id" }));
      return query(call, CLOUD_OPERATIONS.balance, { customerId }, (d) => cloudShapes.balance(d.customerBalance));
    },
    transactions: (call: RestCall) =>
      withPage(call, (page) => {
        const type = param(call.query, "type");
        if (type && !isOneOf(TRANSACTION_TYPES, type)) {
          return rejectAfterAuth(call, notOneOfError("invalid_request", "type", TRANSACTION_TYPES));
        }
        return query(
          call,
          CLOUD_OPERATIONS.transactions,
          {
            ...page,
            customerId: param(call.query, "customer_id"),
            orderId: param(call.query, "order_id"),
            type: type?.toUpperCase(),
            start: param(call.query, "start"),
            end: param(call.query, "end"),
          },
          list((d) => d.transactions, cloudShapes.transaction),
        );
      }),
    statement: (call: RestCall) => query(call, CLOUD_OPERATIONS.statement, { id: call.params.statement_id }, (d) => cloudShapes.statement(d.statement)),
    statementExport: async (call: RestCall) => {
      const result = await runOperation<Pick<CloudData, "statement">>(
        deps.gateway,
        CLOUD_OPERATIONS.statementCsv,
        { id: call.params.statement_id },
        context(call),
      );
      if (result.errors?.length) return sendCloudError(call.res, call.requestId, toShimError(result.errors[0]!));
      const statement = result.data!.statement;
      if (statement.exportStatus !== "ready" || statement.csv == null) {
        return sendCloudError(call.res, call.requestId, {
          code: "conflict",
          message: "Statement export is not ready yet",
          details: { export_status: statement.exportStatus },
        });
      }
      call.res.writeHead(200, { "content-type": "text/csv; charset=utf-8", "content-disposition": `attachment; filename="${statement.id}.csv"` });
      call.res.end(statement.csv);
    },
  };

  async function usage(call: RestCall, kind: "bandwidth" | "traffic"): Promise<void> {
    const resourceId = param(call.query, "resource_id");
    const start = param(call.query, "start");
    const end = param(call.query, "end");
    const missing = !resourceId ? "resource_id" : !start ? "start" : !end ? "end" : null;
    if (missing) return rejectAfterAuth(call, new AppError("invalid_request", `${missing} is required`, { field: missing }));
    return query(call, kind === "bandwidth" ? CLOUD_OPERATIONS.bandwidth : CLOUD_OPERATIONS.traffic, { resourceId, start, end }, (d) => {
      if (kind === "bandwidth") {
        const b = d.bandwidthUsage;
        return { resource_id: b.resourceId, interval_seconds: b.intervalSeconds, peak_bps: b.peakBps, points: b.points };
      }
      const t = d.trafficUsage;
      return { resource_id: t.resourceId, total_bytes: t.totalBytes, items: t.items };
    });
  }
}
