/**
 * The authenticated caller of one request: the key and its policy (docs/architecture.md §8). Its
 * own module so that key storage (keys.ts) and key policy (allow-list.ts, rate-limit.ts, scopes.ts,
 * authenticate.ts) all use it without importing each other.
 */

/** The authenticated caller of a request: its key and the account the key belongs to. */
export interface Caller {
  keyId: string;
  accountId: string;
  scopes: readonly string[];
  allowIps: readonly string[] | null;
  rateLimit: number | null;
  /** Whether every request must carry a valid `X-Service-Signature`. */
  requireSignature: boolean;
  /** Secret of request signatures and callback signatures. Never logged or returned. */
  signingSecret: string | null;
}
