/**
 * URL guard (docs/api/generation.md §4 rule 3; docs/architecture.md §2 DNS row). Despite the folder, the DNS cases
 * talk to a real dns2 UDP server on loopback.
 */
import { createSocket, type Socket } from "node:dgram";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUrlGuard, isPublicAddress, type UrlGuard } from "../../src/net/url-guard.ts";
import { startDnsServer } from "../support/dns-server.ts";

const PUBLIC_V4 = "93.184.215.14";
const PUBLIC_V6 = "2606:2800:21f:cb07:6820:80da:af6b:8b2c";

let dns: Awaited<ReturnType<typeof startDnsServer>>;
let guard: UrlGuard;

beforeAll(async () => {
  dns = await startDnsServer({
    "public.example.test": { A: [PUBLIC_V4], AAAA: [PUBLIC_V6] },
    "v4only.example.test": { A: [PUBLIC_V4] },
    "v6only.example.test": { AAAA: [PUBLIC_V6] },
    "private-a.example.test": { A: ["10.0.0.5"], AAAA: [PUBLIC_V6] },
    "loopback-aaaa.example.test": { A: [PUBLIC_V4], AAAA: ["::1"] },
    "mapped-aaaa.example.test": { A: [PUBLIC_V4], AAAA: ["::ffff:10.0.0.1"] },
    "mixed-a.example.test": { A: [PUBLIC_V4, "192.168.1.1"] },
    "norecords.example.test": {},
    "loopback.example.test": { A: ["127.0.0.1"] },
  });
  guard = createUrlGuard({ dnsServers: [dns.address], timeoutMs: 1_000 });
});

afterAll(async () => {
  await dns?.close();
});

describe("createUrlGuard", () => {
  it("accepts a public https host whose A and AAAA are public", async () => {
    expect(await guard.check("https://public.example.test/ref.png")).toEqual({ ok: true });
    expect(await guard.isPublicHttpsUrl("https://public.example.test/ref.png")).toBe(true);
  });

  it("accepts a host with only a public A record (AAAA has no data)", async () => {
    expect(await guard.check("https://v4only.example.test/a.mp3")).toEqual({ ok: true });
  });

  it("accepts a host with only a public AAAA record (A has no data)", async () => {
    expect(await guard.check("https://v6only.example.test/a.mp4")).toEqual({ ok: true });
  });

  it("accepts a public IPv4 literal without DNS", async () => {
    expect(await guard.check(`https://${PUBLIC_V4}/x.png`)).toEqual({ ok: true });
  });

  it("accepts a public IPv6 literal without DNS", async () => {
    expect(await guard.check(`https://[${PUBLIC_V6}]/x.png`)).toEqual({ ok: true });
  });

  it("rejects http://", async () => {
    const result = await guard.check("http://public.example.test/ref.png");
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(/https/) });
    expect(await guard.isPublicHttpsUrl("http://public.example.test/ref.png")).toBe(false);
  });

  it("rejects other schemes such as ftp:", async () => {
    expect(await guard.check("ftp://public.example.test/ref.png")).toEqual({
      ok: false,
      reason: expect.stringMatching(/https/),
    });
  });

  it.each(["https://user:pass@public.example.test/ref.png", "https://user@public.example.test/ref.png", "https://:secret@public.example.test/ref.png"])(
    "rejects embedded credentials: %s",
    async (url) => {
      expect(await guard.check(url)).toEqual({
        ok: false,
        reason: expect.stringMatching(/credentials/),
      });
    },
  );

  it.each(["https://localhost/ref.png", "https://LOCALHOST./ref.png", "https://x.localhost/ref.png", "https://a.b.localhost:8443/ref.png"])(
    "rejects localhost names: %s",
    async (url) => {
      expect(await guard.check(url)).toEqual({
        ok: false,
        reason: expect.stringMatching(/localhost/),
      });
    },
  );

  it("rejects a single-label host", async () => {
    expect(await guard.check("https://intranet/ref.png")).toEqual({
      ok: false,
      reason: expect.stringMatching(/fully qualified/),
    });
  });

  it.each([
    ["127.0.0.1", "https://127.0.0.1/ref.png"],
    ["10.x", "https://10.1.2.3/ref.png"],
    ["172.16.x", "https://172.16.0.1/ref.png"],
    ["172.31.x", "https://172.31.255.254/ref.png"],
    ["192.168.x", "https://192.168.0.1/ref.png"],
    ["169.254.x (cloud metadata)", "https://169.254.169.254/latest/meta-data/"],
    ["100.64.x", "https://100.64.0.1/ref.png"],
    ["0.0.0.0", "https://0.0.0.0/ref.png"],
    ["[::1]", "https://[::1]/ref.png"],
    ["[fe80::1]", "https://[fe80::1]/ref.png"],
    ["[fc00::1]", "https://[fc00::1]/ref.png"],
    ["[::]", "https://[::]/ref.png"],
    ["[::ffff:127.0.0.1]", "https://[::ffff:127.0.0.1]/ref.png"],
    ["[::ffff:7f00:1]", "https://[::ffff:7f00:1]/ref.png"],
    ["2130706433 decimal form", "https://2130706433/ref.png"],
    ["0x7f.1 hex short form", "https://0x7f.1/ref.png"],
    ["0177.0.0.1 octal form", "https://0177.0.0.1/ref.png"],
    ["[64:ff9b::a00:1] NAT64 of 10.0.0.1", "https://[64:ff9b::a00:1]/ref.png"],
    ["[2002:c0a8:101::1] 6to4 of 192.168.1.1", "https://[2002:c0a8:101::1]/ref.png"],
  ])("rejects the IP literal %s", async (_label, url) => {
    expect(await guard.check(url)).toEqual({
      ok: false,
      reason: expect.stringMatching(/not public/),
    });
  });

  it("rejects a host whose A is private", async () => {
    expect(await guard.check("https://private-a.example.test/ref.png")).toEqual({
      ok: false,
      reason: expect.stringMatching(/private or local/),
    });
  });

  it("rejects a host with one private A among public ones", async () => {
    expect(await guard.check("https://mixed-a.example.test/ref.png")).toEqual({
      ok: false,
      reason: expect.stringMatching(/private or local/),
    });
  });

  it("rejects a host whose AAAA is ::1 while A is public (any private answer rejects)", async () => {
    expect(await guard.check("https://loopback-aaaa.example.test/ref.png")).toEqual({
      ok: false,
      reason: expect.stringMatching(/private or local/),
    });
  });

  it("rejects a host whose AAAA is ::ffff:10.0.0.1 while A is public", async () => {
    expect(await guard.check("https://mapped-aaaa.example.test/ref.png")).toEqual({
      ok: false,
      reason: expect.stringMatching(/private or local/),
    });
  });

  it("does not reveal the private address it resolved in the reason", async () => {
    const result = await guard.check("https://private-a.example.test/ref.png");
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain("10.0.0.5");
  });

  it("rejects an unresolvable host (NXDOMAIN)", async () => {
    expect(await guard.check("https://missing.example.test/ref.png")).toEqual({
      ok: false,
      reason: expect.stringMatching(/does not resolve/),
    });
  });

  it("rejects a known name with neither A nor AAAA records", async () => {
    expect(await guard.check("https://norecords.example.test/ref.png")).toEqual({
      ok: false,
      reason: expect.stringMatching(/does not resolve/),
    });
  });

  it.each(["not a url", "https://", "https://[::1/ref.png", "", "//public.example.test/x"])("rejects a malformed URL: %j", async (url) => {
    expect(await guard.check(url)).toEqual({
      ok: false,
      reason: expect.stringMatching(/malformed/),
    });
  });

  it("returns ok:false instead of throwing for a non-string input", async () => {
    const result = await guard.check(42 as unknown as string);
    expect(result.ok).toBe(false);
    expect(await guard.isPublicHttpsUrl(undefined as unknown as string)).toBe(false);
  });

  describe("with a DNS server that never answers", () => {
    let silent: Socket;
    let silentAddress: string;

    beforeAll(async () => {
      silent = createSocket("udp4");
      await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve));
      silentAddress = `127.0.0.1:${silent.address().port}`;
    });

    afterAll(async () => {
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    });

    it("rejects after the DNS timeout instead of throwing", async () => {
      const slowGuard = createUrlGuard({ dnsServers: [silentAddress], timeoutMs: 100 });
      const started = Date.now();
      const result = await slowGuard.check("https://public.example.test/ref.png");
      expect(result).toEqual({ ok: false, reason: expect.stringMatching(/DNS lookup .* failed/) });
      expect(Date.now() - started).toBeLessThan(10_000);
    });
  });

  describe("checkHost (a bare host, as CDN origins are given)", () => {
    it("accepts a name whose A and AAAA answers are public, in any case and with a root dot", async () => {
      expect(await guard.checkHost("public.example.test")).toEqual({ ok: true });
      expect(await guard.checkHost("V4ONLY.Example.Test.")).toEqual({ ok: true });
    });

    it("refuses a name that resolves to 127.0.0.1 without naming the address", async () => {
      const result = await guard.checkHost("loopback.example.test");
      expect(result).toEqual({ ok: false, reason: expect.stringMatching(/private or local/) });
      expect(JSON.stringify(result)).not.toContain("127.0.0.1");
    });

    it.each(["private-a.example.test", "loopback-aaaa.example.test", "mapped-aaaa.example.test", "mixed-a.example.test"])(
      "refuses %s, which has a non-public answer in one family",
      async (host) => {
        expect(await guard.checkHost(host)).toEqual({ ok: false, reason: expect.stringMatching(/private or local/) });
      },
    );

    it("refuses a name that does not resolve, or has no records", async () => {
      expect(await guard.checkHost("missing.example.test")).toEqual({ ok: false, reason: expect.stringMatching(/does not resolve/) });
      expect(await guard.checkHost("norecords.example.test")).toEqual({ ok: false, reason: expect.stringMatching(/does not resolve/) });
    });

    it("judges IP literals without DNS, bracketed or not, legacy IPv4 forms included", async () => {
      expect(await guard.checkHost(PUBLIC_V4)).toEqual({ ok: true });
      expect(await guard.checkHost(PUBLIC_V6)).toEqual({ ok: true });
      expect(await guard.checkHost(`[${PUBLIC_V6}]`)).toEqual({ ok: true });
      for (const host of ["127.0.0.1", "10.1.2.3", "::1", "[::1]", "2130706433", "::ffff:127.0.0.1"]) {
        expect(await guard.checkHost(host)).toEqual({ ok: false, reason: expect.stringMatching(/not public/) });
      }
    });

    it("refuses localhost, single-label names and non-strings without asking DNS", async () => {
      expect(await guard.checkHost("localhost")).toEqual({ ok: false, reason: expect.stringMatching(/localhost/) });
      expect(await guard.checkHost("api.localhost.")).toEqual({ ok: false, reason: expect.stringMatching(/localhost/) });
      expect(await guard.checkHost("intranet")).toEqual({ ok: false, reason: expect.stringMatching(/fully qualified/) });
      expect((await guard.checkHost("")).ok).toBe(false);
      expect((await guard.checkHost(null as unknown as string)).ok).toBe(false);
    });
  });

  it("throws at construction for a malformed DNS server entry", () => {
    expect(() => createUrlGuard({ dnsServers: ["not an address"] })).toThrow();
  });

  it("throws at construction for a non-positive timeout", () => {
    expect(() => createUrlGuard({ timeoutMs: 0 })).toThrow(RangeError);
  });
});

describe("isPublicAddress", () => {
  it.each([
    // public
    ["8.8.8.8", true],
    ["93.184.215.14", true],
    ["1.1.1.1", true],
    ["172.15.255.255", true],
    ["172.32.0.1", true],
    ["100.63.255.255", true],
    ["100.128.0.1", true],
    ["2606:4700:4700::1111", true],
    ["2a00:1450:4001:80b::200e", true],
    ["[2606:4700:4700::1111]", true],
    ["::ffff:8.8.8.8", true],
    ["64:ff9b::808:808", true],
    ["2002:808:808::1", true],
    // IPv4 loopback, private, link-local, CGNAT, unspecified
    ["127.0.0.1", false],
    ["127.255.255.254", false],
    ["10.0.0.1", false],
    ["172.16.0.1", false],
    ["172.31.255.255", false],
    ["192.168.1.1", false],
    ["169.254.169.254", false],
    ["100.64.0.1", false],
    ["100.127.255.255", false],
    ["0.0.0.0", false],
    ["0.1.2.3", false],
    // IPv4 multicast, broadcast, reserved, benchmarking, documentation
    ["224.0.0.1", false],
    ["239.255.255.250", false],
    ["255.255.255.255", false],
    ["240.0.0.1", false],
    ["192.0.0.8", false],
    ["198.18.0.1", false],
    ["198.19.255.255", false],
    ["192.0.2.1", false],
    ["198.51.100.1", false],
    ["203.0.113.1", false],
    // legacy IPv4 text forms are classified by meaning
    ["2130706433", false],
    ["0x7f.1", false],
    // IPv6 loopback, unspecified, link-local, unique-local, multicast, documentation
    ["::1", false],
    ["[::1]", false],
    ["::", false],
    ["fe80::1", false],
    ["febf::1", false],
    ["fe80::1%eth0", false],
    ["fc00::1", false],
    ["fd12:3456::1", false],
    ["ff02::1", false],
    ["2001:db8::1", false],
    ["100::1", false],
    // IPv6 forms embedding IPv4
    ["::ffff:127.0.0.1", false],
    ["::ffff:7f00:1", false],
    ["::ffff:10.0.0.1", false],
    ["::ffff:0:a00:1", false],
    ["::7f00:1", false],
    ["64:ff9b::7f00:1", false],
    ["64:ff9b::a9fe:a9fe", false],
    ["64:ff9b:1::808:808", false],
    ["2002:7f00:1::1", false],
    ["2002:c0a8:101::1", false],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", false],
    // not an address
    ["", false],
    ["example.com", false],
    ["1.2.3.4.5", false],
    ["::g", false],
  ] as const)("isPublicAddress(%j) is %s", (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });
});
