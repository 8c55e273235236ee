import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

// Belt and braces next to ipaddr's range() labels: this list is what we promise to refuse,
// so a future change in the library's labelling cannot quietly open a range.
const DENIED_V4 = [
  "0.0.0.0/8", // "this network"
  "10.0.0.0/8",
  "100.64.0.0/10", // CGNAT
  "127.0.0.0/8",
  "169.254.0.0/16", // link-local, cloud metadata
  "172.16.0.0/12",
  "192.0.0.0/24", // IETF protocol assignments
  "192.0.2.0/24", // TEST-NET-1
  "192.88.99.0/24", // 6to4 relay anycast
  "192.168.0.0/16",
  "198.18.0.0/15", // benchmarking
  "198.51.100.0/24", // TEST-NET-2
  "203.0.113.0/24", // TEST-NET-3
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, includes broadcast
].map(cidr);

const DENIED_V6 = [
  "::/96", // unspecified, loopback, deprecated IPv4-compatible
  "::ffff:0:0:0/96", // SIIT (RFC 6145)
  "64:ff9b:1::/48", // local-use NAT64 (RFC 8215): embedding position is site-defined
  "100::/64", // discard
  "2001::/23", // IETF protocol assignments, includes Teredo 2001::/32
  "2001:db8::/32", // documentation
  "3fff::/20", // documentation (RFC 9637)
  "fc00::/7", // ULA
  "fe80::/10", // link-local
  "fec0::/10", // site-local
  "ff00::/8", // multicast
].map(cidr);

// IANA hands out global unicast from 2000::/3 only; anything else is not a public destination.
const GLOBAL_UNICAST_V6 = cidr("2000::/3");
const NAT64_WKP = cidr("64:ff9b::/96");
const SIX_TO_FOUR = cidr("2002::/16");

function cidr(text: string): Cidr {
  return ipaddr.parseCIDR(text);
}

function inAny(address: Address, list: Cidr[]): boolean {
  return list.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits));
}

// ipaddr.js 2.5 reads "::a.b.c.d" as "::ffff:a.b.c.d" (mapped) although it is the deprecated
// IPv4-compatible form ::a.b:c.d; rewriting the dotted tail as hex avoids that misreading.
function hexTail(text: string): string {
  const match = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (!match) return text;
  const [a = 0, b = 0, c = 0, d = 0] = match.slice(2).map(Number);
  return `${match[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/**
 * Parses only canonical textual forms (dotted-quad IPv4, RFC 4291 IPv6). ipaddr.js alone would
 * also accept `0177.0.0.1` or `2130706433`; an address that needs such leniency is refused.
 * IPv4-mapped IPv6 is unwrapped so `::ffff:10.0.0.1` is judged as 10.0.0.1.
 */
export function parseAddress(text: string): Address | null {
  const family = isIP(text);
  if (family === 0 || text.includes("%")) return null;
  try {
    return ipaddr.process(family === 6 ? hexTail(text) : text);
  } catch {
    return null;
  }
}

function isPublicV4(address: ipaddr.IPv4): boolean {
  return address.range() === "unicast" && !inAny(address, DENIED_V4);
}

function embeddedV4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const bytes = address.toByteArray();
  if (address.match(NAT64_WKP)) return new ipaddr.IPv4(bytes.slice(12, 16));
  if (address.match(SIX_TO_FOUR)) return new ipaddr.IPv4(bytes.slice(2, 6));
  return null;
}

function isPublicV6(address: ipaddr.IPv6): boolean {
  // NAT64 and 6to4 reach whatever IPv4 address they embed, so that address decides.
  const inner = embeddedV4(address);
  if (inner) return isPublicV4(inner);
  return address.match(GLOBAL_UNICAST_V6) && address.range() === "unicast" && !inAny(address, DENIED_V6);
}

/** True when `address` (an IP in canonical text form) is a public unicast destination. */
export function isPublicUnicast(address: string): boolean {
  const parsed = parseAddress(address);
  if (!parsed) return false;
  return parsed instanceof ipaddr.IPv4 ? isPublicV4(parsed) : isPublicV6(parsed);
}

export interface AddressPolicy {
  isAllowed(address: string): boolean;
}

export interface AddressPolicyOptions {
  /** Extra CIDRs to allow, e.g. `127.0.0.1/32` for loopback receivers in tests. Production: none. */
  allowCidrs?: string[];
}

export function createAddressPolicy({ allowCidrs = [] }: AddressPolicyOptions = {}): AddressPolicy {
  const allowed = allowCidrs.map((text) => {
    try {
      return cidr(text);
    } catch {
      // A typo here must stop start-up rather than silently allowing nothing (or everything).
      throw new Error(`invalid CIDR in address allowlist: ${JSON.stringify(text)}`);
    }
  });
  return {
    isAllowed(address: string): boolean {
      const parsed = parseAddress(address);
      if (!parsed) return false;
      return inAny(parsed, allowed) || isPublicUnicast(address);
    },
  };
}
