/**
 * Provider text made safe to keep (README "Security model"; issue 20 finding 3). What a provider
 * says when it fails (an error message, a task's `error`, a transport error naming its URL) can
 * echo the key we sent it. Every such text is passed through {@link redactSecrets} where it enters
 * our system — the HTTP adapter (its own key) and the channel router (every configured key, with
 * {@link redactingUpstream}) — so the task row, the REST and GraphQL task, callbacks, ledger
 * reasons, `channel_attempts`, `disabledReason`, `adminTestChannel`, `channels test` and the logs
 * only ever see the clean text. The provider's own words are kept; only the secret becomes
 * {@link REDACTED}.
 */
import { UpstreamError, type GenerationUpstream } from "./types.ts";

/** What a secret is replaced with. */
export const REDACTED = "[redacted]";

/**
 * Shortest configured key matched literally: a shorter one would shred ordinary words (and is no
 * secret worth the name); such a key is still caught by the shapes below when it appears in one.
 */
export const MIN_SECRET_LENGTH = 4;

/** Credentials in a URL: scheme://user:password@ or scheme://token@. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi;

/**
 * A text with the credentials of every URL in it replaced: `https://[redacted]@host/...` (a
 * channel base URL stored before such URLs were refused is shown this way).
 */
export function redactUrlCredentials(text: string): string {
  return text.replace(URL_CREDENTIALS, `$1${REDACTED}@`);
}

/**
 * Shapes of credentials, whoever's they are, in the order they are applied (an `Authorization:`
 * echo first, so its `Bearer …` value goes whole).
 */
const SHAPES: readonly (readonly [RegExp, string])[] = [
  [URL_CREDENTIALS, `$1${REDACTED}@`],
  // An echoed Authorization / Proxy-Authorization header (also as a JSON member): its whole value.
  [/\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?)[^"'\r\n,;}]+/gi, `$1${REDACTED}`],
  // An echoed API-key header or parameter: x-api-key, api-key, api_key, apikey.
  [/\b((?:x-)?api[-_]?key["']?\s*[:=]\s*["']?)[^"'\s,;&}]+/gi, `$1${REDACTED}`],
  // A bearer or basic credential (RFC 6750 token68) of at least 8 characters ("Bearer token" stays).
  [/\b(Bearer|Basic)(\s+)[A-Za-z0-9\-._~+/]{8,}=*/gi, `$1$2${REDACTED}`],
  // Keys in the common secret-key shape: sk-…, sk_live_…, sk-proj-….
  [/\bsk[-_][A-Za-z0-9_-]{8,}/g, REDACTED],
  // A Google API key (a gemini-veo channel's credential): AIza and 35 more characters.
  [/\bAIza[0-9A-Za-z_-]{35}\b/g, REDACTED],
  // A JSON Web Token (Kling's bearer credential, made from the channel's secret key): header.payload.signature.
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, REDACTED],
];

/**
 * Removes secrets from a text a provider sent (or one built around it).
 * @param text any text (a non-string is turned into one)
 * @param secrets configured keys to remove wherever they appear, also URL-encoded (keys shorter
 *   than {@link MIN_SECRET_LENGTH} characters are matched by shape only)
 * @returns the text with every secret replaced by {@link REDACTED}
 */
export function redactSecrets(text: string, secrets: Iterable<string> = []): string {
  let clean = String(text);
  const literals = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== "string" || secret.length < MIN_SECRET_LENGTH) continue;
    literals.add(secret);
    literals.add(encodeURIComponent(secret));
  }
  // Longest first: a key that contains another is removed whole.
  for (const secret of [...literals].sort((a, b) => b.length - a.length)) clean = clean.split(secret).join(REDACTED);
  for (const [pattern, replacement] of SHAPES) clean = clean.replace(pattern, replacement);
  return clean;
}

/**
 * The error of an upstream call with its message redacted: a new error (a fresh stack, which
 * repeats the message), of the same kind and reason.
 */
export function redactedError(error: unknown, secrets: Iterable<string> = []): Error {
  if (error instanceof UpstreamError) return new UpstreamError(error.kind, redactSecrets(error.message, secrets), error.reason, error.retryAfterMs);
  const message = redactSecrets(error instanceof Error ? error.message : String(error), secrets);
  const clean = new Error(message);
  if (error instanceof Error) clean.name = error.name;
  return clean;
}

/**
 * An upstream whose failures and task errors are redacted with every configured key (the
 * channel router wraps each channel's adapter, the implicit one included).
 * @param upstream the adapter
 * @param secrets the configured keys, read when a text is to be cleaned (rarely: on failures)
 * @returns an upstream that behaves as `upstream` except for the redacted texts
 */
export function redactingUpstream(upstream: GenerationUpstream, secrets: () => Promise<readonly string[]>): GenerationUpstream {
  const guarded =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args);
      } catch (error) {
        throw redactedError(error, await secrets());
      }
    };
  const fetchStatus = guarded(upstream.fetchStatus.bind(upstream));
  return {
    name: upstream.name,
    submit: guarded(upstream.submit.bind(upstream)),
    async fetchStatus(upstreamTaskId, channelId) {
      const state = await fetchStatus(upstreamTaskId, channelId);
      return state.error == null ? state : { ...state, error: redactSecrets(state.error, await secrets()) };
    },
    ...(upstream.findSubmission ? { findSubmission: guarded(upstream.findSubmission.bind(upstream)) } : {}),
    ...(upstream.probe ? { probe: guarded(upstream.probe.bind(upstream)) } : {}),
    ...(upstream.admits ? { admits: upstream.admits.bind(upstream) } : {}),
  };
}
