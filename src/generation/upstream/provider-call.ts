/**
 * One HTTP call to a provider, shared by the channel-type adapters (./openai-compatible.ts,
 * ./kling.ts, ./ark.ts, ./dashscope.ts, ./minimax.ts, ./gemini-veo.ts; ADR 0023): the timeout, the failure kinds of {@link UpstreamError}, a `Retry-After`
 * kept as milliseconds, and the provider's own words redacted with the channel's secrets before
 * they leave the adapter (./redact.ts).
 */
import { redactSecrets } from "./redact.ts";
import { UpstreamError } from "./types.ts";

/** Longest provider message kept in a failure's text, once redacted (the attempts column keeps 300 characters). */
export const PROVIDER_MESSAGE_CHARS = 200;

/** The fields of a JSON value: an object's, else none. */
export function fieldsOf(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** A provider task id as text: a non-empty string or number of at most 160 characters, else null. */
export function providerId(value: unknown): string | null {
  if (typeof value !== "string" && typeof value !== "number") return null;
  const text = String(value);
  return text.length > 0 && text.length <= 160 ? text : null;
}

/**
 * `Retry-After` in milliseconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3), capped at an
 * hour; undefined when absent or unreadable.
 */
export function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = /^\s*\d+\s*$/.test(header) ? Number(header) * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 3_600_000) : undefined;
}

/** Settings of a provider client. */
export interface ProviderClientOptions {
  baseUrl: string;
  timeoutMs: number;
  /** The channel's credentials: removed from every text the provider or the transport gives us. */
  secrets: readonly string[];
  /** Headers of every call (the credential), computed per call (Kling's token expires). */
  headers(): Record<string, string>;
  /** The provider's words in an error body (its JSON shape), or null. */
  messageOf(body: Record<string, unknown>): string | null;
  /** The wait (ms) an error body asks for when the answer has no `Retry-After` (Google's `RetryInfo`). */
  retryAfterOf?(body: Record<string, unknown>): number | undefined;
}

/** An answer with a JSON object body. */
export interface ProviderAnswer {
  status: number;
  body: Record<string, unknown>;
  /** The answer's `Retry-After` in ms (a provider that refuses in a 200 body, MiniMax), else undefined. */
  retryAfterMs?: number;
}

/** A client for one provider account. */
export interface ProviderClient {
  /**
   * Calls `path` with a JSON body (or none) and reads a JSON object.
   * @param allow HTTP statuses answered rather than thrown (for example 404 of a lookup)
   * @param headers headers of this call only (DashScope's `X-DashScope-Async`)
   * @throws UpstreamError `timeout`, or `failed` with reason transport / http / body
   */
  json(method: string, path: string, body?: unknown, allow?: readonly number[], timeoutMs?: number, headers?: Record<string, string>): Promise<ProviderAnswer>;
  /** GETs `url` (absolute, or a path under the base URL) with the credential when `withCredential`. @throws UpstreamError */
  download(url: string, withCredential: boolean): Promise<Response>;
  /** Redacts the channel's secrets and credential shapes from a text. */
  clean(text: string): string;
  /** A failure whose text is redacted. */
  failed(detail: string, reason?: "http" | "code" | "body", retryAfter?: number): UpstreamError;
}

/** Creates the client. */
export function createProviderClient(options: ProviderClientOptions): ProviderClient {
  const base = options.baseUrl.replace(/\/+$/, "");
  const clean = (text: string) => redactSecrets(text, options.secrets).replaceAll("\u0000", "");
  const failed = (detail: string, reason?: "http" | "code" | "body", retryAfter?: number) => new UpstreamError("failed", clean(detail), reason, retryAfter);

  async function send(url: string, init: RequestInit, timeoutMs: number): Promise<Response> {
    try {
      return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      const name = (error as Error)?.name;
      if (name === "TimeoutError" || name === "AbortError") throw new UpstreamError("timeout", `no answer within ${timeoutMs} ms`);
      throw failed(`transport error: ${(error as Error).message}`);
    }
  }

  /** The provider's words about a refusal, redacted and cut; null when it said nothing readable. */
  function words(text: string): string | null {
    let said: string | null = text.trimStart().startsWith("<") ? null : text;
    try {
      said = options.messageOf(fieldsOf(JSON.parse(text)));
    } catch {
      /* not JSON: the text itself */
    }
    if (typeof said !== "string") return null;
    const folded = clean(said.slice(0, 65_536)).replace(/\s+/g, " ").trim();
    return folded ? folded.slice(0, PROVIDER_MESSAGE_CHARS) : null;
  }

  /** The wait an error body asks for, when the type reads one. */
  function bodyWait(text: string): number | undefined {
    if (!options.retryAfterOf) return undefined;
    try {
      return options.retryAfterOf(fieldsOf(JSON.parse(text)));
    } catch {
      return undefined;
    }
  }

  return {
    clean,
    failed,
    async json(method, path, body, allow = [], timeoutMs = options.timeoutMs, headers = {}) {
      const response = await send(
        `${base}${path}`,
        {
          method,
          headers: { ...headers, ...options.headers(), accept: "application/json", ...(body === undefined ? {} : { "content-type": "application/json" }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        },
        timeoutMs,
      );
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        const name = (error as Error)?.name;
        if (name === "TimeoutError" || name === "AbortError") throw new UpstreamError("timeout", "body not received in time");
        throw new UpstreamError("failed", "body could not be read");
      }
      if (!response.ok && !allow.includes(response.status)) {
        const wait = retryAfterMs(response.headers.get("retry-after")) ?? bodyWait(text);
        const said = words(text);
        const head = `HTTP ${response.status}${said ? `: ${said}` : ""}`;
        throw failed(wait === undefined ? head : `${head} (retry after ${Math.ceil(wait / 1000)} s)`, "http", wait);
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new UpstreamError("failed", "unparsable body", "body");
      }
      return { status: response.status, body: fieldsOf(parsed), retryAfterMs: retryAfterMs(response.headers.get("retry-after")) };
    },
    async download(url, withCredential) {
      const absolute = /^https?:\/\//i.test(url) ? url : `${base}${url}`;
      const response = await send(absolute, { method: "GET", headers: withCredential ? options.headers() : {} }, Math.max(options.timeoutMs, 120_000));
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw failed(`result download: HTTP ${response.status}`, "http", retryAfterMs(response.headers.get("retry-after")));
      }
      return response;
    },
  };
}
