/**
 * Automatic persisted queries and trusted documents on the router's `/graphql` (issue 21 §3;
 * README "Persisted queries and trusted documents"; ADR 0020), over POST, GET, SSE and graphql-ws
 * alike: every one of them reaches GraphQL Yoga's `onParams`, before anything is parsed.
 *
 * The lookup of a hash and the hand-over of its document are GraphQL Yoga's
 * `@graphql-yoga/plugin-persisted-operations`; this file is the glue around it:
 * - the protocol (`extensions.persistedQuery: {version: 1, sha256Hash}`, Apollo's APQ): a
 *   hash-only request runs the trusted document or the registered one with that hash, else gets
 *   `PersistedQueryNotFound` (`PERSISTED_QUERY_NOT_FOUND`, 400), on which Apollo Client's and
 *   urql's links send the document with its hash; a document with a hash that is not its SHA-256
 *   is refused (`persisted_query_hash_mismatch`, 400); a document with its hash is registered in
 *   the store (router/plugins/usePersistedQueries.store.ts: Redis with REDIS_URL, shared by every
 *   router) once it has passed validation, just before it runs;
 * - `PERSISTED_ONLY=true`: only trusted documents run (the manifests of
 *   router/plugins/usePersistedQueries.manifest.ts), sent by id/hash or in full (a full document
 *   runs when the SHA-256 of its text is a manifest id, so the pages need not change); anything
 *   else is refused (`persisted_query_required`, 400) before it is parsed, and nothing is
 *   registered. The REST shims' operations are manifest documents: they pass like any client's
 *   (those the generation subgraph owns run on it directly, router/graph/direct.ts, and are
 *   manifest documents too).
 *
 * Errors are results, never throws: over graphql-ws a throw from `onParams` would close the
 * socket (4500); a result reaches the client as the operation's `next` with the error, then
 * `complete`, as a validation error does.
 */
import { GraphQLError, type ExecutionArgs } from "graphql";
import type { GatewayPlugin } from "@graphql-hive/gateway-runtime";
import { usePersistedOperations } from "@graphql-yoga/plugin-persisted-operations";
import type { Logger } from "pino";
import { ERROR_CODES, graphqlExtensions, type ErrorCode } from "../../src/errors.ts";
import { sha256Hex } from "../../src/digest.ts";
import type { TrustedDocuments } from "./usePersistedQueries.manifest.ts";
import type { PersistedQueryStore } from "./usePersistedQueries.store.ts";

/** The protocol's only version. */
const APQ_VERSION = 1;

/** A hash as the protocol sends it: SHA-256 in lowercase hex. */
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Options of {@link usePersistedQueries}. */
export interface PersistedQueriesOptions {
  /** The trusted documents (the project's manifest and PERSISTED_DOCUMENTS'). */
  trusted: TrustedDocuments;
  /** Where registered documents are kept (APQ). */
  store: PersistedQueryStore;
  /** PERSISTED_ONLY: only trusted documents run; nothing is registered. */
  persistedOnly: boolean;
  /** Where a failing store is reported (warn); the request then runs, or is answered not found. */
  logger: Pick<Logger, "warn">;
}

/** The parameters `onParams` sees (GraphQL Yoga's `GraphQLParams`, loosely: a client wrote them). */
interface Params {
  query?: unknown;
  operationName?: unknown;
  variables?: unknown;
  extensions?: unknown;
}

/** What `onParams` is handed (GraphQL Yoga's `OnParamsEventPayload`, the parts used here). */
interface ParamsPayload {
  params: Params;
  context: object;
  setParams(params: Params): void;
  setResult(result: { errors: GraphQLError[] }): void;
}

/**
 * A query that satisfies GraphQL Yoga's later check of the parameters ("Must provide query
 * string.", which runs even when a result is set). Never parsed or run: the result is set.
 */
const NEVER_RUN = "{ __typename }";

/** Answers the request with `error`, without parsing or running anything. */
function refuse(payload: ParamsPayload, error: GraphQLError): void {
  payload.setResult({ errors: [error] });
  if (typeof payload.params.query !== "string" || payload.params.query === "") payload.setParams({ ...payload.params, query: NEVER_RUN });
}

/**
 * A registry error for `onParams`' result.
 * @param message overrides the registry's message
 */
export function persistedQueryError(code: ErrorCode, message?: string): GraphQLError {
  return new GraphQLError(message ?? ERROR_CODES[code].message, { extensions: graphqlExtensions(code) });
}

/**
 * The hash of `extensions.persistedQuery`: null when there is none, `"malformed"` when it is not
 * `{version: 1, sha256Hash: <64 lowercase hex digits>}`.
 */
export function persistedQueryHash(params: Params): string | null | "malformed" {
  const extensions = params.extensions;
  if (extensions === null || typeof extensions !== "object") return null;
  const persisted = (extensions as { persistedQuery?: unknown }).persistedQuery;
  if (persisted === undefined || persisted === null) return null;
  const { version, sha256Hash } = persisted as { version?: unknown; sha256Hash?: unknown };
  return version === APQ_VERSION && typeof sha256Hash === "string" && SHA256_HEX.test(sha256Hash) ? sha256Hash : "malformed";
}

/**
 * Creates the plugin.
 * @returns a gateway plugin to run before every other `onParams` (router/graph/gateway.ts)
 */
export function usePersistedQueries(options: PersistedQueriesOptions): GatewayPlugin {
  const { trusted, store, persistedOnly, logger } = options;
  // Documents to register once they have passed validation, by request context.
  const pending = new WeakMap<object, { hash: string; query: string }>();
  const lookup = usePersistedOperations({
    // Which documents may run is decided below, where the parameters are seen.
    allowArbitraryOperations: true,
    getPersistedOperation: async (hash) => {
      const known = trusted.get(hash);
      // Text, not the parsed document: the Rust query planner (router-runtime) reads the text. GraphQL
      // Yoga parses and validates each text once (its cache by text); the manifests were parsed at start.
      if (known) return known.text;
      if (persistedOnly) return null;
      try {
        return (await store.get(hash)) ?? null; // parsed (and token-limited) as any document
      } catch (error) {
        logger.warn({ err: error }, "persisted query store failed: answered as not found");
        return null;
      }
    },
    customErrors: { notFound: () => persistedQueryError("persisted_query_not_found") },
  });
  const runLookup = async (payload: ParamsPayload) => {
    try {
      await (lookup.onParams as (payload: ParamsPayload) => unknown)(payload);
    } catch (error) {
      if (!(error instanceof GraphQLError)) throw error;
      refuse(payload, error);
    }
  };
  const register = <Args extends ExecutionArgs, Result>(run: (args: Args) => Result) =>
    async function registering(args: Args): Promise<Awaited<Result>> {
      const document = pending.get(args.contextValue as object);
      if (document) {
        pending.delete(args.contextValue as object);
        // Awaited: the client's next, hash-only request may reach another router at once.
        await store.set(document.hash, document.query).catch((error) => logger.warn({ err: error }, "persisted query store failed: not registered"));
      }
      return await run(args);
    };
  const plugin = {
    onParams(payload: ParamsPayload) {
      const { params } = payload;
      const hash = persistedQueryHash(params);
      if (hash === "malformed") {
        return refuse(
          payload,
          persistedQueryError("invalid_request", "extensions.persistedQuery must be { version: 1, sha256Hash: <64 lowercase hex digits> }"),
        );
      }
      const query = params.query;
      if (typeof query !== "string" || query === "") {
        // Hash only: the trusted or registered document, else PersistedQueryNotFound.
        if (hash) return runLookup(payload);
        return; // neither: GraphQL Yoga's own "Must provide query string."
      }
      if (!hash && !persistedOnly) return; // a plain request, as without this plugin
      const actual = sha256Hex(query);
      if (hash && hash !== actual) return refuse(payload, persistedQueryError("persisted_query_hash_mismatch"));
      if (trusted.has(actual)) return;
      if (persistedOnly) return refuse(payload, persistedQueryError("persisted_query_required"));
      pending.set(payload.context, { hash: actual, query });
    },
    onExecute({ setExecuteFn, executeFn, args }: { setExecuteFn(fn: unknown): void; executeFn: (args: ExecutionArgs) => unknown; args: ExecutionArgs }) {
      if (pending.has(args.contextValue as object)) setExecuteFn(register(executeFn));
    },
    onSubscribe({
      setSubscribeFn,
      subscribeFn,
      args,
    }: {
      setSubscribeFn(fn: unknown): void;
      subscribeFn: (args: ExecutionArgs) => unknown;
      args: ExecutionArgs;
    }) {
      if (pending.has(args.contextValue as object)) setSubscribeFn(register(subscribeFn));
    },
  };
  return plugin as unknown as GatewayPlugin;
}
