/**
 * The contract between the router and the subgraphs for what only the router knows: the client's
 * IP, the request id, the id a request is counted under by the rate limiter, the route and, for a
 * signed client request, its method, path and body digest — plus the client's own credentials
 * (`authorization`, `x-service-signature`) and locale. The router puts these facts in the
 * extension `switchyard` of every subgraph request and signs the request with Hive Gateway's HMAC
 * upstream signature (@graphql-mesh/hmac-upstream-signature: HMAC-SHA256 with SUBGRAPH_SECRET,
 * extension `hmac-signature`). Each subgraph request (not each client request: one fans out to
 * several) carries a fresh nonce and the subgraph it is for, both signed. A subgraph serves only
 * requests whose signature verifies, that are meant for it and whose nonce it has not seen
 * (hop-nonces.ts), and reads these facts only from the signed extension, never from HTTP headers
 * (docs: README "Security model").
 *
 * The library signs the operation text and variables; its serializers are extended here so that
 * the `switchyard` extension is covered by the same signature.
 */
import { createHmac, randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { ExecutionRequest } from "@graphql-tools/utils";
import {
  defaultExecutionRequestSerializer,
  defaultParamsSerializer,
  useHmacSignatureValidation,
  useHmacUpstreamSignature,
} from "@graphql-mesh/hmac-upstream-signature";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import type { ErrorCode } from "../../src/errors.ts";
import type { NonceStore } from "./hop-nonces.ts";

/** Name of the extension carrying the internal context. */
export const INTERNAL_EXTENSION = "switchyard";
/** Name of the extension carrying the HMAC signature (the library's default). */
const SIGNATURE_EXTENSION = "hmac-signature";
/** How far (seconds) a signed request's `issuedAt` may be from the subgraph's clock. */
const INTERNAL_CONTEXT_TOLERANCE_SECONDS = 300;

/**
 * The facts of one client request as the router states them, as lower-case header names so that
 * the subgraphs' context builders read them like headers: `authorization`, `accept-language`,
 * `x-service-signature` (the client's), `x-request-id` (the correlation id echoed to the client),
 * `x-switchyard-count-id` (minted by the router per client request: the rate limiter counts each
 * id once), `x-switchyard-client-ip`, `x-switchyard-route`, `x-switchyard-route-status`,
 * `x-switchyard-method`, `x-switchyard-path`, `x-switchyard-body-sha256`; for the operator console
 * (docs/adr/0022-operators-and-audit.md) `x-switchyard-session` (the session cookie's value),
 * `x-switchyard-csrf` (the `X-CSRF-Token` header's) and `x-switchyard-new-session` (the id the
 * router's sign-in route made, on that route only).
 */
export type InternalHeaders = Record<string, string>;

/** The `switchyard` extension: the facts, when the router issued them, and for which subgraph, once. */
export interface InternalContext {
  /** Unix seconds at which the router signed the request. */
  issuedAt: number;
  /** A fresh random id per subgraph request: the subgraph serves it once (hop-nonces.ts). */
  nonce: string;
  /** The subgraph the request is for (`generation`, `cloud`): any other refuses it. */
  audience: string;
  headers: InternalHeaders;
}

/** What a nonce looks like (a UUID from the router; bounded so it stays a small Redis key). */
const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;

/**
 * The internal context of one subgraph request: now, a new nonce, the subgraph it is for.
 * @param audience the subgraph's name (`generation`, `cloud`)
 * @param headers the facts the router states ({@link pickInternalHeaders})
 */
export function newInternalContext(audience: string, headers: InternalHeaders): InternalContext {
  return { issuedAt: Math.floor(Date.now() / 1000), nonce: randomUUID(), audience, headers };
}

/** The header names the router states (and the only ones a subgraph reads). */
const INTERNAL_HEADER_NAMES = [
  "authorization",
  "accept-language",
  "x-service-signature",
  "x-request-id",
  "x-switchyard-count-id",
  "x-switchyard-client-ip",
  "x-switchyard-route",
  "x-switchyard-route-status",
  "x-switchyard-method",
  "x-switchyard-path",
  "x-switchyard-body-sha256",
  "x-switchyard-session",
  "x-switchyard-csrf",
  "x-switchyard-new-session",
] as const;

/**
 * Picks the internal headers (missing or empty ones left out).
 * @param source a header map, or a lookup by lower-case name (a fetch `Headers`' `get`)
 */
export function pickInternalHeaders(source: Record<string, string | undefined> | ((name: string) => string | null | undefined)): InternalHeaders {
  const headers: InternalHeaders = {};
  const read = typeof source === "function" ? source : (name: string) => source[name];
  for (const name of INTERNAL_HEADER_NAMES) {
    const value = read(name);
    if (typeof value === "string" && value) headers[name] = value;
  }
  return headers;
}

/** The signed text of the internal context: appended to the library's serialization of the operation. */
function contextText(value: unknown): string {
  return `\n${INTERNAL_EXTENSION}:${JSON.stringify(value ?? null)}`;
}

/** The text a subgraph checks the signature of, from the parameters it received. */
function signedText(params: SignedParams): string {
  const operation = defaultParamsSerializer({ query: params.query, variables: params.variables ?? undefined });
  return `${operation ?? ""}${contextText(params.extensions?.[INTERNAL_EXTENSION])}`;
}

/**
 * The router's signing plugin (Hive Gateway's HMAC upstream signature) covering the operation,
 * its variables and the `switchyard` extension.
 * @param secret SUBGRAPH_SECRET
 * @param shouldSign which subgraph requests to sign (in-process ones need no signature)
 */
export function internalSigningPlugin(secret: string, shouldSign: (subgraphName: string) => boolean): GatewayPlugin {
  // (The library is typed against its own copy of the gateway's plugin types.)
  return useHmacUpstreamSignature({
    secret,
    extensionName: SIGNATURE_EXTENSION,
    shouldSign: ({ subgraphName }) => shouldSign(subgraphName),
    serializeExecutionRequest: (request: ExecutionRequest) =>
      `${defaultExecutionRequestSerializer(request) ?? ""}${contextText(request.extensions?.[INTERNAL_EXTENSION])}`,
  }) as unknown as GatewayPlugin;
}

/** GraphQL parameters as a subgraph receives them (HTTP body or graphql-ws subscribe payload). */
export interface SignedParams {
  query?: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
}

/** A subgraph request refused for its signature or its internal context. */
export class InternalContextError extends Error {
  /**
   * @param code the registry code of the answer: `forbidden` (403) for every request the router
   *   did not sign for this subgraph just now, `service_unavailable` (503) when the nonce could not
   *   be claimed (the store is full or unreachable)
   */
  constructor(
    message: string,
    readonly code: Extract<ErrorCode, "forbidden" | "service_unavailable"> = "forbidden",
  ) {
    super(message);
    this.name = "InternalContextError";
  }
}

/** The logger the validation plugin expects from GraphQL Yoga (it logs only on debug and failure). */
const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** Options of {@link createInternalVerifier}. */
export interface InternalVerifierOptions {
  /** SUBGRAPH_SECRET. */
  secret: string;
  /** This subgraph's name: a request signed for another subgraph is refused. */
  audience: string;
  /** Where nonces are claimed (one per process; Redis when `REDIS_URL` is set). */
  nonces: NonceStore;
  /** Refusals are logged at warn (the request id when the signature verified), store failures at error. */
  logger: Pick<Logger, "warn" | "error">;
}

/**
 * Creates a subgraph's verifier: Hive Gateway's HMAC signature validation over the same text the
 * router signs, then the shape, age and audience of the internal context, then its nonce, claimed
 * once. Every refusal is logged at warn.
 * @returns `verify(params)`: the internal context of a request whose signature holds, meant for
 *   this subgraph, seen for the first time
 * @throws InternalContextError (from `verify`) `forbidden` when the signature is missing or wrong,
 *   the context is malformed, older than {@link INTERNAL_CONTEXT_TOLERANCE_SECONDS}, for another
 *   subgraph, or already served (a replay); `service_unavailable` when the nonce cannot be claimed
 */
export function createInternalVerifier(options: InternalVerifierOptions): { verify(params: SignedParams, nowSeconds?: number): Promise<InternalContext> } {
  const { secret, audience, nonces, logger } = options;
  const validation = useHmacSignatureValidation({
    secret,
    extensionName: SIGNATURE_EXTENSION,
    serializeParams: signedText,
  }) as { onYogaInit(payload: unknown): void; onParams(payload: unknown): unknown };
  validation.onYogaInit({ yoga: { logger: quietLogger } });
  const refuse = (message: string, requestId?: string): never => {
    logger.warn({ subgraph: audience, request_id: requestId, reason: message }, "subgraph request refused");
    throw new InternalContextError(message);
  };
  return {
    async verify(params, nowSeconds = Math.floor(Date.now() / 1000)) {
      const signature = params.extensions?.[SIGNATURE_EXTENSION];
      if (typeof signature !== "string" || !signature) return refuse("Subgraph requests must be signed by the router");
      try {
        await validation.onParams({ params, fetchAPI: globalThis });
      } catch {
        return refuse("Invalid router signature");
      }
      const context = params.extensions?.[INTERNAL_EXTENSION] as Partial<InternalContext> | undefined;
      if (
        !context ||
        typeof context !== "object" ||
        typeof context.issuedAt !== "number" ||
        typeof context.nonce !== "string" ||
        !NONCE_PATTERN.test(context.nonce) ||
        typeof context.audience !== "string" ||
        !context.headers ||
        typeof context.headers !== "object"
      ) {
        return refuse("Missing internal context");
      }
      const headers = pickInternalHeaders(context.headers as Record<string, string>);
      const requestId = headers["x-request-id"];
      if (Math.abs(nowSeconds - context.issuedAt) > INTERNAL_CONTEXT_TOLERANCE_SECONDS) return refuse("Router signature expired", requestId);
      if (context.audience !== audience) return refuse("Router signature is for another subgraph", requestId);
      let first: boolean;
      try {
        first = await nonces.claim(context.nonce, context.issuedAt, INTERNAL_CONTEXT_TOLERANCE_SECONDS);
      } catch (error) {
        logger.error({ err: error, subgraph: audience, request_id: requestId }, "subgraph request nonce not claimed");
        throw new InternalContextError("Service unavailable", "service_unavailable");
      }
      if (!first) return refuse("Router signature already used", requestId);
      return { issuedAt: context.issuedAt, nonce: context.nonce, audience, headers };
    },
  };
}

/**
 * Signs one subgraph request outside the gateway: for tools that speak to a subgraph directly —
 * the benchmark's direct-subgraph row, Apollo Gateway in the benchmark, tests. The same
 * HMAC-SHA256 (base64) over the same text the subgraph's verifier checks ({@link signedText}),
 * computed with node:crypto so that a load generator can sign each request as it sends it. Each
 * call makes a new nonce: the answer is good for one request.
 * @param secret SUBGRAPH_SECRET
 * @param request the operation, its variables, the subgraph it is for (`audience`), and the
 *   internal headers it states
 * @returns the GraphQL parameters to POST as JSON (`extensions` carries the context and signature)
 */
export function signSubgraphRequest(
  secret: string,
  request: { query: string; variables?: Record<string, unknown>; operationName?: string; audience: string; headers: InternalHeaders },
): SignedParams {
  const params = {
    query: request.query,
    variables: request.variables,
    operationName: request.operationName,
    extensions: { [INTERNAL_EXTENSION]: newInternalContext(request.audience, request.headers) } as Record<string, unknown>,
  };
  params.extensions[SIGNATURE_EXTENSION] = createHmac("sha256", secret).update(signedText(params)).digest("base64");
  return params;
}
