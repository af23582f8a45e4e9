/**
 * The in-process store of router nonces (subgraphs/shared/hop-nonces.ts): each nonce is claimed
 * once while its request can still verify, forgotten after that, and a full store refuses rather
 * than forgets.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createNonceStore, NonceStoreFullError } from "../../subgraphs/shared/hop-nonces.ts";

const TOLERANCE = 300;

describe("the in-process nonce store", () => {
  afterEach(() => vi.useRealTimers());

  it("claims a nonce once, and the same nonce of another second is another request's", async () => {
    const store = createNonceStore();
    const issuedAt = Math.floor(Date.now() / 1000);
    expect(await store.claim("nonce-aaaaaaaaaaaaaaaa", issuedAt, TOLERANCE)).toBe(true);
    expect(await store.claim("nonce-aaaaaaaaaaaaaaaa", issuedAt, TOLERANCE)).toBe(false);
    expect(await store.claim("nonce-bbbbbbbbbbbbbbbb", issuedAt, TOLERANCE)).toBe(true);
  });

  it("remembers a nonce while its request could verify, and frees the room once the window has passed", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-01-01T00:00:00Z"));
    const store = createNonceStore({ maxEntries: 2 });
    const issuedAt = Math.floor(Date.now() / 1000);
    await store.claim("nonce-aaaaaaaaaaaaaaaa", issuedAt, TOLERANCE);
    await store.claim("nonce-bbbbbbbbbbbbbbbb", issuedAt, TOLERANCE);
    vi.setSystemTime((issuedAt + TOLERANCE) * 1000);
    expect(await store.claim("nonce-aaaaaaaaaaaaaaaa", issuedAt, TOLERANCE)).toBe(false);
    await expect(store.claim("nonce-cccccccccccccccc", issuedAt + TOLERANCE, TOLERANCE)).rejects.toBeInstanceOf(NonceStoreFullError);
    // Past the window (and the clock margin) the second's nonces are dropped: there is room again.
    vi.setSystemTime((issuedAt + TOLERANCE + 60) * 1000);
    expect(await store.claim("nonce-cccccccccccccccc", issuedAt + TOLERANCE + 60, TOLERANCE)).toBe(true);
  });
});
