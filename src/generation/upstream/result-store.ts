/**
 * Where a channel-type adapter puts a provider's result that a customer could not fetch
 * (README "Channels", "Results"; ADR 0023): content behind the provider's key (OpenAI's
 * `/content`) or at a URL that expires (Kling's CDN links). The adapter hands the content over
 * once; the customer gets a signed, expiring Switchyard URL (`/media/p/...`, ../media/local.ts), never
 * the provider's URL, key or base URL. The adapters' port: it is defined here, beside them, and
 * the stores of src/generation/media/ implement it (docs/architecture.md §1.2: media → upstream).
 */

/** A store for provider results. */
export interface ResultStore {
  /**
   * Keeps a result once and returns the customer's URL for it.
   * @param key a stable name of this result (channel, provider task, index): the same key is
   *   downloaded once, a later call only signs a new URL
   * @param open fetches the content from the provider (called only when not yet kept)
   * @param extension the file's extension (`mp4`, `png`) when the provider does not say
   * @returns an absolute, signed URL valid for MEDIA_URL_TTL_SECONDS
   * @throws UpstreamError when the content cannot be fetched (the poller asks again later)
   */
  keep(key: string, open: () => Promise<Response>, extension: string): Promise<string>;
  /** The URL of a result kept before, or null when it is not (or no longer) kept. */
  urlOf(key: string): Promise<string | null>;
}
