/**
 * The contract between the router and the subgraphs for what only the router knows: the client's
 * IP, the request id, the id a request is counted under by the rate limiter, the route and, for a
 * signed client request, its method, path and body digest — plus the client's own credentials
 * (`authorization`, `x-service-signature`) and locale. The router puts these facts in the
 * extension `switchyard` of every subgraph request and signs the request with Hive Gateway's HMAC
 * upstream signature (@graphql-mesh/hmac-upstream-signature: HMAC-SHA256 with SUBGRAPH_SECRET,
 * extension `hmac-signature`). A subgraph serves only requests whose signature verifies and reads
 * these facts only from the signed extension, never from HTTP headers (docs: README "Security
 * model").
 *
 * The library signs the operation text and variables; its serializers are extended here so that
 * the `switchyard` extension is covered by the same signature.
 */
import { parse } from "graphql";
import type { ExecutionRequest } from "@graphql-tools/utils";
import {
  defaultExecutionRequestSerializer,
  defaultParamsSerializer,
  useHmacSignatureValidation,
  useHmacUpstreamSignature,
} from "@graphql-mesh/hmac-upstream-signature";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";

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
 * `x-switchyard-method`, `x-switchyard-path`, `x-switchyard-body-sha256`.
 */
export type InternalHeaders = Record<string, string>;

/** The `switchyard` extension: the facts and when the router issued them. */
export interface InternalContext {
  /** Unix seconds at which the router signed the request. */
  issuedAt: number;
  headers: InternalHeaders;
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
  constructor(message: string) {
    super(message);
    this.name = "InternalContextError";
  }
}

/** The logger the validation plugin expects from GraphQL Yoga (it logs only on debug and failure). */
const quietLogger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * Creates a subgraph's verifier: Hive Gateway's HMAC signature validation over the same text the
 * router signs, then the shape and age of the internal context.
 * @param secret SUBGRAPH_SECRET
 * @returns `verify(params)`: the internal context of a request whose signature holds
 * @throws InternalContextError (from `verify`) when the signature is missing or wrong, or the
 *   context is malformed or older than {@link INTERNAL_CONTEXT_TOLERANCE_SECONDS}
 */
export function createInternalVerifier(secret: string): { verify(params: SignedParams, nowSeconds?: number): Promise<InternalContext> } {
  const validation = useHmacSignatureValidation({
    secret,
    extensionName: SIGNATURE_EXTENSION,
    serializeParams: (params) => `${defaultParamsSerializer(params) ?? ""}${contextText(params.extensions?.[INTERNAL_EXTENSION])}`,
  }) as { onYogaInit(payload: unknown): void; onParams(payload: unknown): unknown };
  validation.onYogaInit({ yoga: { logger: quietLogger } });
  return {
    async verify(params, nowSeconds = Math.floor(Date.now() / 1000)) {
      const signature = params.extensions?.[SIGNATURE_EXTENSION];
      if (typeof signature !== "string" || !signature) throw new InternalContextError("Subgraph requests must be signed by the router");
      try {
        await validation.onParams({ params, fetchAPI: globalThis });
      } catch {
        throw new InternalContextError("Invalid router signature");
      }
      const context = params.extensions?.[INTERNAL_EXTENSION] as InternalContext | undefined;
      if (!context || typeof context !== "object" || typeof context.issuedAt !== "number" || !context.headers || typeof context.headers !== "object") {
        throw new InternalContextError("Missing internal context");
      }
      if (Math.abs(nowSeconds - context.issuedAt) > INTERNAL_CONTEXT_TOLERANCE_SECONDS) throw new InternalContextError("Router signature expired");
      return { issuedAt: context.issuedAt, headers: pickInternalHeaders(context.headers as Record<string, string>) };
    },
  };
}

/** The library's signing plugin as a tool outside the gateway uses it. */
interface Signer {
  onYogaInit(payload: unknown): void;
  onSubgraphExecute(payload: unknown): unknown;
}

/** One signer per secret: the plugin caches its imported HMAC key, so reusing it signs at the router's cost. */
const signers = new Map<string, Signer>();
function signerFor(secret: string): Signer {
  let signer = signers.get(secret);
  if (!signer) {
    signer = internalSigningPlugin(secret, () => true) as unknown as Signer;
    signer.onYogaInit({ yoga: { fetchAPI: globalThis } });
    signers.set(secret, signer);
  }
  return signer;
}

/**
 * Signs one subgraph request outside the gateway, exactly as the router's plugin does (the same
 * library call): for tools that speak to a subgraph directly — the benchmark's direct-subgraph
 * row, Apollo Gateway in the benchmark, tests.
 * @param secret SUBGRAPH_SECRET
 * @param request the operation, its variables, and the internal headers it states
 * @returns the GraphQL parameters to POST as JSON (`extensions` carries the context and signature)
 */
export async function signSubgraphRequest(
  secret: string,
  request: { query: string; variables?: Record<string, unknown>; operationName?: string; headers: InternalHeaders },
): Promise<SignedParams> {
  const plugin = signerFor(secret);
  const internal: InternalContext = { issuedAt: Math.floor(Date.now() / 1000), headers: request.headers };
  const executionRequest = {
    document: parse(request.query),
    variables: request.variables,
    operationName: request.operationName,
    extensions: { [INTERNAL_EXTENSION]: internal } as Record<string, unknown>,
  };
  const log = { child: () => log, debug() {} };
  await plugin.onSubgraphExecute({ subgraphName: "direct", subgraph: undefined, executionRequest, log });
  // The text the library signed is the operation as the gateway's transports print it.
  const { query } = JSON.parse(defaultExecutionRequestSerializer(executionRequest as unknown as ExecutionRequest) ?? "{}") as { query: string };
  return { query, variables: request.variables, operationName: request.operationName, extensions: executionRequest.extensions };
}
