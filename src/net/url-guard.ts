/**
 * Public-HTTPS URL guard (SSRF protection) for reference URLs, and its host check for CDN origin
 * host names (`checkHost`; docs/api/cloud.md §4 `POST /domains`).
 *
 * Implements docs/api/generation.md §4 rule 3 ("Every reference URL ... must be a public HTTPS URL,
 * else 400. Rejected: HTTP, localhost, private or local IP addresses, URLs with embedded
 * credentials, and domains whose DNS resolution points to a private or local address") and the
 * DNS row of docs/architecture.md §2 (`DNS_SERVERS` overrides the system resolver; unresolvable hosts are
 * rejected).
 *
 * Decisions:
 * - Address classification is an allowlist: an address is public only when ipaddr.js names its
 *   range `unicast`. Every other named range (documentation, benchmarking, AS112, AMT, ORCHID,
 *   segment routing, discard, ...) is rejected, not only the ones the spec lists.
 * - Documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20) are
 *   rejected: they are never routable on the Internet, so a URL that uses them is not public.
 * - IPv6 is public only inside global unicast 2000::/3, which rules out the deprecated
 *   IPv4-compatible block ::/96 (for example `::7f00:1`) and other unassigned space.
 * - IPv6 forms that carry an IPv4 address (IPv4-mapped ::ffff:0:0/96, IPv4-translated
 *   ::ffff:0:0:0/96, NAT64 well-known prefix 64:ff9b::/96, 6to4 2002::/16) are classified by the
 *   embedded IPv4 address. The local-use NAT64 prefix 64:ff9b:1::/48 and all of Teredo 2001::/32
 *   are rejected (Teredo hides its client address; no real server is reached through it).
 * - An IPv6 address with a zone id (`fe80::1%eth0`) is link-scoped, hence never public.
 * - Nothing is cached: every check resolves afresh, so a DNS answer that changes to a private
 *   address is seen on the next check. The guard does not pin the address it checked; a fetcher
 *   that later connects resolves again (DNS rebinding must be handled there if it matters).
 * - A DNS failure other than "no such name" (ENOTFOUND) or "no records of that type" (ENODATA) on
 *   either family (timeout, SERVFAIL, refused) rejects the URL: the guard cannot vouch for answers
 *   it never saw.
 * - Ports are not restricted; the spec only constrains scheme, credentials and address.
 * - Rejection reasons name the URL's own literal address but never an address learnt from DNS,
 *   so the API does not become an oracle for internal DNS.
 */
import { promises as dnsPromises } from "node:dns";
import ipaddr from "ipaddr.js";

/** Per-try DNS timeout used when {@link UrlGuardOptions.timeoutMs} is not given. */
const DEFAULT_TIMEOUT_MS = 2_000;

/** DNS error codes that mean "this family has no answer" rather than "the lookup failed". */
const NO_ANSWER_CODES = new Set(["ENODATA", "ENOTFOUND"]);

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3");
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR("64:ff9b::/96");

/**
 * Options of {@link createUrlGuard}.
 *
 * Spec: docs/api/generation.md §4 rule 3; docs/architecture.md §2 (DNS row).
 */
export interface UrlGuardOptions {
  /**
   * DNS servers to query, each `host` or `host:port` (IPv6 as `[addr]:port`), for example
   * `["127.0.0.1:5353"]`. Unset or empty: the system resolver's servers (`/etc/resolv.conf`).
   */
  dnsServers?: string[];
  /** Timeout of one DNS try in milliseconds (two tries are made). Default 2000. */
  timeoutMs?: number;
}

/**
 * True when a URL names credentials (`user:password@`, or a user alone): refused in reference
 * URLs here, in channel base URLs and in GENERATION_UPSTREAM_URL (the key has its own field).
 */
export function carriesCredentials(url: URL): boolean {
  return url.username !== "" || url.password !== "";
}

/**
 * Whether `ip` is a publicly routable unicast address.
 *
 * Takes an IPv4 or IPv6 address as text: any form ipaddr.js parses (dotted quad, the legacy
 * IPv4 forms such as `2130706433` or `0x7f.1`, IPv6 with or without embedded IPv4, optionally
 * wrapped in `[...]` as URL hostnames are). Returns `true` only for a global unicast address;
 * `false` for loopback, private, link-local, CGNAT, unique-local, unspecified, multicast,
 * broadcast, reserved (including documentation and benchmarking ranges), IPv6 outside 2000::/3,
 * Teredo, local-use NAT64, any address with a zone id, IPv6 that embeds a non-public IPv4
 * (IPv4-mapped, IPv4-translated, NAT64 64:ff9b::/96, 6to4), and for text that is not an address.
 * Never throws.
 *
 * Spec: docs/api/generation.md §4 rule 3 ("private or local IP addresses").
 */
export function isPublicAddress(ip: string): boolean {
  if (typeof ip !== "string") return false;
  let text = ip.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  if (!ipaddr.isValid(text)) return false;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.parse(text);
  } catch {
    return false;
  }
  return addr.kind() === "ipv4" ? isPublicV4(addr as ipaddr.IPv4) : isPublicV6(addr as ipaddr.IPv6);
}

function isPublicV4(addr: ipaddr.IPv4): boolean {
  return addr.range() === "unicast";
}

function isPublicV6(addr: ipaddr.IPv6): boolean {
  if (addr.zoneId) return false;
  const bytes = addr.toByteArray();
  const range = addr.range();
  // Forms that carry an IPv4 address in their low 32 bits.
  if (range === "ipv4Mapped" || range === "rfc6145" || addr.match(NAT64_WELL_KNOWN)) {
    return isPublicV4(new ipaddr.IPv4(bytes.slice(12, 16)));
  }
  // 6to4 2002:AABB:CCDD::/48 carries the IPv4 address AA.BB.CC.DD.
  if (range === "6to4") return isPublicV4(new ipaddr.IPv4(bytes.slice(2, 6)));
  if (range !== "unicast") return false;
  return addr.match(GLOBAL_UNICAST_V6);
}

/**
 * Outcome of {@link UrlGuard.check}: `{ ok: true }` for a public HTTPS URL, otherwise
 * `{ ok: false, reason }` with a short human-readable reason suitable for a 400 response.
 *
 * Spec: docs/api/generation.md §4 rule 3.
 */
export type UrlCheckResult = { ok: true } | { ok: false; reason: string };

/**
 * Checks that a URL is a public HTTPS URL.
 *
 * Spec: docs/api/generation.md §4 rule 3; docs/architecture.md §2 (DNS row).
 */
export interface UrlGuard {
  /**
   * Checks one URL: it must parse as a WHATWG URL, use `https:`, carry no username or password,
   * not name `localhost`, `*.localhost` or a single-label host, and its host must be a public
   * IP literal or a domain whose A and AAAA answers (at least one family answering) are all
   * public. Takes the URL text; returns the verdict. Never throws and never rejects: malformed
   * input, DNS errors and timeouts all become `{ ok: false }`. Resolves afresh on every call.
   */
  check(url: string): Promise<UrlCheckResult>;
  /**
   * Same as {@link UrlGuard.check} but returns only whether the URL passed. Never throws and
   * never rejects.
   */
  isPublicHttpsUrl(url: string): Promise<boolean>;
  /**
   * Checks a bare host, as a URL's host is checked by {@link UrlGuard.check}: an IP literal
   * (IPv6 with or without brackets) must be public; a name must not be `localhost`,
   * `*.localhost` or single-label, and its A and AAAA answers (at least one family answering)
   * must all be public. A trailing root dot is ignored and case is folded. Takes the host text;
   * returns the verdict, whose reason never names an address learnt from DNS. Never throws and
   * never rejects. Resolves afresh on every call. Used for CDN origins (docs/api/cloud.md §4
   * `POST /domains`), which we never fetch ourselves but must not point at our network.
   */
  checkHost(host: string): Promise<UrlCheckResult>;
}

function reject(reason: string): UrlCheckResult {
  return { ok: false, reason };
}

/**
 * Creates a {@link UrlGuard} backed by its own `dns.promises.Resolver` (timeout
 * `options.timeoutMs` per try, 2 tries), pointed at `options.dnsServers` when given, else at the
 * system resolver's servers. Queries go to DNS directly; `/etc/hosts` is not consulted.
 *
 * @param options - DNS servers and per-try timeout; see {@link UrlGuardOptions}.
 * @returns The guard. It caches nothing between calls.
 * @throws TypeError or Error (from `Resolver#setServers`) when `dnsServers` holds an entry that
 *   is not an IP address with optional port, or RangeError when `timeoutMs` is not a positive
 *   integer. Configuration errors surface at construction, never during `check`.
 *
 * Spec: docs/api/generation.md §4 rule 3; docs/architecture.md §2 (DNS row).
 */
export function createUrlGuard(options: UrlGuardOptions = {}): UrlGuard {
  const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeout) || timeout <= 0) {
    throw new RangeError(`timeoutMs must be a positive integer, got ${String(options.timeoutMs)}`);
  }
  const resolver = new dnsPromises.Resolver({ timeout, tries: 2 });
  if (options.dnsServers && options.dnsServers.length > 0) {
    resolver.setServers(options.dnsServers);
  }

  async function resolveHost(hostname: string): Promise<UrlCheckResult> {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const answers: string[] = [];
    for (const result of [v4, v6]) {
      if (result.status === "fulfilled") {
        answers.push(...result.value);
        continue;
      }
      const code = (result.reason as NodeJS.ErrnoException | undefined)?.code;
      if (!code || !NO_ANSWER_CODES.has(code)) {
        return reject(`DNS lookup of ${hostname} failed (${code ?? "unknown error"})`);
      }
    }
    if (answers.length === 0) return reject(`host ${hostname} does not resolve`);
    if (!answers.every(isPublicAddress)) {
      return reject(`host ${hostname} resolves to a private or local address`);
    }
    return { ok: true };
  }

  async function check(url: string): Promise<UrlCheckResult> {
    try {
      if (typeof url !== "string") return reject("URL must be a string");
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return reject("URL is malformed");
      }
      if (parsed.protocol !== "https:") return reject("URL must use https");
      if (carriesCredentials(parsed)) {
        return reject("URL must not contain credentials");
      }
      const hostname = parsed.hostname;
      if (hostname === "") return reject("URL has no host");
      // WHATWG has already normalised every IPv4 form (2130706433, 0x7f.1, 0177.0.0.1, ...) to
      // a dotted quad, kept IPv6 in brackets, and refused hosts ending in a non-IPv4 number.
      return await hostVerdict(hostname);
    } catch (error) {
      return reject(`URL check failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** The host rules shared by URLs and bare hosts. */
  async function hostVerdict(host: string): Promise<UrlCheckResult> {
    // An IP literal: IPv6 with or without brackets, IPv4 in any form ipaddr.js parses.
    const literal = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
    if (ipaddr.isValid(literal)) {
      return isPublicAddress(literal) ? { ok: true } : reject(`address ${host} is not public`);
    }
    const lowered = host.toLowerCase();
    const name = lowered.endsWith(".") ? lowered.slice(0, -1) : lowered;
    if (name === "localhost" || name.endsWith(".localhost")) {
      return reject("URL must not point to localhost");
    }
    if (name === "" || !name.includes(".")) {
      return reject("URL host must be a fully qualified domain name");
    }
    return resolveHost(name);
  }

  async function checkHost(host: string): Promise<UrlCheckResult> {
    try {
      if (typeof host !== "string" || host.trim() === "") return reject("host is empty");
      return await hostVerdict(host);
    } catch (error) {
      return reject(`host check failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  return {
    check,
    async isPublicHttpsUrl(url: string): Promise<boolean> {
      return (await check(url)).ok;
    },
    checkHost,
  };
}
