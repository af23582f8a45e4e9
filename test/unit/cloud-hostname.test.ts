/**
 * The one host-name rule of the cloud API (src/cloud/validation.ts `normalizeHostname`;
 * docs/api/cloud.md §2.5 "Host names"). The order service's `metadata.domain` used its own, looser
 * check; the cases where the two disagreed are pinned here.
 */
import { describe, expect, it } from "vitest";
import { normalizeHostname } from "../../src/cloud/validation.ts";

describe("normalizeHostname", () => {
  it.each([
    // Accepted by the old order check, refused now: the top label must be 2-63 letters or an A-label.
    ["example.c", null],
    ["example.c0m", null],
    ["example.a-b", null],
    ["example.x1", null],
    ["host.123abc", null],
    // Refused by the old order check, accepted now: one trailing root dot is dropped.
    ["www.example.com.", "www.example.com"],
    ["WWW.Example.COM.", "www.example.com"],
  ])("decides %j as %j (the case the two rules disagreed on)", (input, expected) => {
    expect(normalizeHostname(input)).toBe(expected);
  });

  it.each([
    ["a-b.example.co.uk", "a-b.example.co.uk"],
    ["xn--fiqs8s.cn", "xn--fiqs8s.cn"],
    ["shop.xn--p1ai", "shop.xn--p1ai"],
    ["CDN.Example.COM", "cdn.example.com"],
  ])("accepts %j as %j", (input, expected) => {
    expect(normalizeHostname(input)).toBe(expected);
  });

  it.each([
    "",
    "localhost",
    "-bad.example.com",
    "bad-.example.com",
    `${"a".repeat(64)}.com`,
    "*.example.com",
    "example..com",
    "10.0.0.1",
    "example.com:443",
    "https://example.com",
    "www.example.com..",
    "exa_mple.com",
  ])("refuses %j", (input) => {
    expect(normalizeHostname(input)).toBeNull();
  });

  it("refuses a name longer than the limit and values that are not strings", () => {
    const long = `${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.com`;
    expect(long.length).toBeGreaterThan(230);
    expect(normalizeHostname(long)).toBe(long);
    expect(normalizeHostname(long, 230)).toBeNull();
    expect(normalizeHostname(42)).toBeNull();
    expect(normalizeHostname(null)).toBeNull();
  });
});
