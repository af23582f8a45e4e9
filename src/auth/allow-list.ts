/**
 * The source-IP allow-list of a key (docs/api/cloud.md §5 and §7; docs/architecture.md §8.3
 * `--allow-ip`): addresses and CIDR ranges, IPv4 and IPv6, parsed by ipaddr.js.
 */
import ipaddr from "ipaddr.js";
import { AppError } from "../errors.ts";
import type { Caller } from "./caller.ts";

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Strips `[...]` brackets and an IPv6 zone (`%eth0`). */
function cleanAddress(text: string): string {
  let value = text.trim();
  if (value.startsWith("[") && value.includes("]")) value = value.slice(1, value.indexOf("]"));
  const zone = value.indexOf("%");
  if (zone >= 0) value = value.slice(0, zone);
  return value;
}

/** Parses an address, turning an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) into IPv4. */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const value = cleanAddress(text);
  if (!ipaddr.isValid(value)) return null;
  try {
    return ipaddr.process(value);
  } catch {
    return null;
  }
}

/** Parses an allow-list entry: a CIDR or a plain address (a /32 or /128); null when invalid. */
function parseRange(entry: string): Range | null {
  const text = entry.trim();
  const slash = text.indexOf("/");
  if (slash < 0) {
    const address = parseAddress(text);
    return address ? [address, address.kind() === "ipv4" ? 32 : 128] : null;
  }
  let range: Range;
  try {
    range = ipaddr.parseCIDR(`${cleanAddress(text.slice(0, slash))}${text.slice(slash)}`);
  } catch {
    return null;
  }
  const [address, prefix] = range;
  // An IPv4-mapped IPv6 range (::ffff:10.0.0.0/104) is the IPv4 range it maps (10.0.0.0/8).
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    return [(address as ipaddr.IPv6).toIPv4Address(), prefix - 96];
  }
  return range;
}

/**
 * True when an allow-list entry is a valid IP address or CIDR range (IPv4 or IPv6), the forms
 * {@link ipInAllowList} understands.
 * @see docs/architecture.md §2 `keys create --allow-ip`
 */
export function isValidAllowListEntry(entry: string): boolean {
  return typeof entry === "string" && entry.length <= 100 && parseRange(entry) !== null;
}

const rangeCache = new WeakMap<readonly string[], Range[]>();

function rangesOf(allowIps: readonly string[]): Range[] {
  let ranges = rangeCache.get(allowIps);
  if (!ranges) {
    ranges = allowIps.map(parseRange).filter((r): r is Range => r !== null);
    rangeCache.set(allowIps, ranges);
  }
  return ranges;
}

/**
 * True when an address falls in an allow-list (a CIDR, or a plain address as /32 or /128).
 * IPv4-mapped IPv6 addresses count as the IPv4 address they map. Invalid entries never match.
 * @param ip the source address (`203.0.113.7`, `::1`, `::ffff:203.0.113.7`, `[::1]`)
 * @param allowIps CIDRs such as `203.0.113.0/24`, `2001:db8::/32`, `198.51.100.7`
 */
export function ipInAllowList(ip: string, allowIps: readonly string[]): boolean {
  const address = parseAddress(ip);
  if (!address) return false;
  return rangesOf(allowIps).some(([base, prefix]) => base.kind() === address.kind() && address.match(base, prefix));
}

/**
 * Checks the request's source address against the key's allow-list (docs/api/cloud.md §5: keys
 * have an allowed source IP list; §7: 403 when the source IP is not allowed).
 * @param caller the authenticated key; `allowIps` null allows any address
 * @param ip the source address of the request; null when unknown (then only a key without a list passes)
 * @returns nothing when allowed
 * @throws AppError `forbidden` (403) `Source IP not allowed`
 */
export function checkSourceIp(caller: Pick<Caller, "allowIps">, ip: string | null): void {
  if (caller.allowIps === null || caller.allowIps === undefined) return;
  if (ip === null || !ipInAllowList(ip, caller.allowIps)) {
    throw new AppError("forbidden", "Source IP not allowed");
  }
}
