/**
 * The one redaction of provider texts (src/generation/upstream/redact.ts): configured keys
 * wherever they are, credential shapes whoever's they are, and the provider's other words kept.
 */
import { describe, expect, it } from "vitest";
import { redactSecrets, redactUrlCredentials } from "../../src/generation/upstream/redact.ts";

describe("redactSecrets", () => {
  it("replaces a configured key anywhere, also URL-encoded, and the longest of two overlapping keys whole", () => {
    expect(redactSecrets("no quota for key abc+def/123 (abc%2Bdef%2F123)", ["abc+def/123"])).toBe("no quota for key [redacted] ([redacted])");
    expect(redactSecrets("keys key-one-long and key-one", ["key-one", "key-one-long"])).toBe("keys [redacted] and [redacted]");
  });

  it("replaces bearer and basic credentials, Authorization and API-key echoes, sk- keys and URL credentials", () => {
    const cases: [string, string][] = [
      ["quota exceeded for Bearer abcdefgh12345678", "quota exceeded for Bearer [redacted]"],
      ["got Authorization: Bearer abc.def-ghi_jkl", "got Authorization: [redacted]"],
      ['{"authorization":"Basic dXNlcjpwYXNzd29yZA=="}', '{"authorization":"[redacted]"}'],
      ["header x-api-key: k3y-value-1, retry", "header x-api-key: [redacted], retry"],
      ["GET /v1?api_key=QWERTY123&x=1", "GET /v1?api_key=[redacted]&x=1"],
      ["org key sk-proj-Zx81bQ2m9LkP4r7T and sk_live_51HxYzAbCdEf", "org key [redacted] and [redacted]"],
      ["API key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q not valid", "API key [redacted] not valid"],
      ["x-goog-api-key: AIza-short", "x-goog-api-key: [redacted]"],
      ["see https://billing:hunter2@provider.example/q and ftp://token@host/x", "see https://[redacted]@provider.example/q and ftp://[redacted]@host/x"],
    ];
    for (const [said, kept] of cases) expect(redactSecrets(said)).toBe(kept);
  });

  it("keeps a provider's words that hold no secret", () => {
    for (const said of [
      "Bearer token required",
      "authorization failed",
      "invalid api key",
      "model sk-turbo not found",
      "see https://provider.example/docs?ref=a@b.example",
      "content policy violation: prompt rejected",
    ])
      expect(redactSecrets(said)).toBe(said);
  });

  it("matches keys shorter than 4 characters by shape only", () => {
    expect(redactSecrets("the cat sat", ["cat"])).toBe("the cat sat");
  });
});

describe("redactUrlCredentials", () => {
  it("masks the user and password of a URL and leaves the rest", () => {
    expect(redactUrlCredentials("https://user:pw@provider.example:8443/v1")).toBe("https://[redacted]@provider.example:8443/v1");
    expect(redactUrlCredentials("https://provider.example/v1")).toBe("https://provider.example/v1");
  });
});
