import { describe, expect, it } from "vitest";
import { createAddressPolicy, isPublicUnicast } from "../../src/net/ip-policy.js";

const NON_PUBLIC: Array<[string, string]> = [
  ["10.0.0.1", "RFC 1918 10/8"],
  ["172.16.5.4", "RFC 1918 172.16/12"],
  ["172.31.255.255", "RFC 1918 172.16/12 upper end"],
  ["192.168.1.1", "RFC 1918 192.168/16"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback /8"],
  ["169.254.169.254", "link-local cloud metadata"],
  ["169.254.0.1", "link-local"],
  ["100.64.0.1", "CGNAT"],
  ["100.127.255.254", "CGNAT upper end"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "0/8"],
  ["255.255.255.255", "broadcast"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast SSDP"],
  ["192.0.2.10", "TEST-NET-1"],
  ["198.51.100.7", "TEST-NET-2"],
  ["203.0.113.9", "TEST-NET-3"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.254", "benchmarking /15 upper half"],
  ["192.0.0.8", "IETF protocol assignments"],
  ["240.0.0.1", "reserved 240/4"],
  ["::1", "IPv6 loopback"],
  ["::", "IPv6 unspecified"],
  ["fe80::1", "IPv6 link-local"],
  ["febf::1", "IPv6 link-local upper end"],
  ["fc00::1", "ULA fc00::/7"],
  ["fd00::1", "ULA fd"],
  ["ff02::1", "IPv6 multicast"],
  ["fec0::1", "site-local"],
  ["2001:db8::1", "IPv6 documentation"],
  ["3fff::1", "IPv6 documentation RFC 9637"],
  ["100::1", "discard 100::/64"],
  ["2001::1", "Teredo"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo with public server"],
  ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
  ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
  ["::ffff:169.254.169.254", "IPv4-mapped metadata"],
  ["::ffff:10.0.0.1", "IPv4-mapped private"],
  ["::127.0.0.1", "IPv4-compatible loopback"],
  ["::8.8.8.8", "IPv4-compatible (deprecated) even if public"],
  ["::ffff:0:8.8.8.8", "SIIT rfc6145"],
  ["2002:7f00:1::1", "6to4 of 127.0.0.1"],
  ["2002:a9fe:a9fe::1", "6to4 of 169.254.169.254"],
  ["2002:c0a8:0101::", "6to4 of 192.168.1.1"],
  ["64:ff9b::127.0.0.1", "NAT64 of loopback"],
  ["64:ff9b::a9fe:a9fe", "NAT64 of metadata"],
  ["64:ff9b::10.1.2.3", "NAT64 of private"],
  ["64:ff9b:1::8.8.8.8", "local-use NAT64"],
  ["5f00::1", "segment routing, outside 2000::/3"],
  ["4000::1", "unallocated, outside 2000::/3"],
  ["fe80::1%eth0", "zone id"],
];

const NON_CANONICAL = ["2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.1", "8.8.8.8 ", "", "example.com", "[::1]", "1.2.3.4/32"];

const PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001:82a::200e", "::ffff:8.8.8.8", "2002:0808:0808::1", "64:ff9b::8.8.8.8"];

describe("isPublicUnicast", () => {
  it.each(NON_PUBLIC)("When the address is %s (%s), Then it is not public", (address) => {
    expect(isPublicUnicast(address)).toBe(false);
  });

  it.each(NON_CANONICAL)("When the text %j is not a canonical IP, Then it is refused", (text) => {
    expect(isPublicUnicast(text)).toBe(false);
  });

  it.each(PUBLIC)("When the address is %s, Then it is public", (address) => {
    expect(isPublicUnicast(address)).toBe(true);
  });
});

describe("createAddressPolicy", () => {
  it("When nothing extra is allowed, Then only public unicast passes", () => {
    const policy = createAddressPolicy();
    expect(policy.isAllowed("8.8.8.8")).toBe(true);
    expect(policy.isAllowed("127.0.0.1")).toBe(false);
  });

  it("When 127.0.0.1/32 is allowed, Then exactly that loopback address passes, mapped form included", () => {
    const policy = createAddressPolicy({ allowCidrs: ["127.0.0.1/32"] });
    expect(policy.isAllowed("127.0.0.1")).toBe(true);
    expect(policy.isAllowed("::ffff:127.0.0.1")).toBe(true);
    expect(policy.isAllowed("127.0.0.2")).toBe(false);
    expect(policy.isAllowed("::1")).toBe(false);
    expect(policy.isAllowed("10.0.0.1")).toBe(false);
    expect(policy.isAllowed("8.8.8.8")).toBe(true);
  });

  it("When an IPv6 CIDR is allowed, Then addresses inside it pass and IPv4 ones are unaffected", () => {
    const policy = createAddressPolicy({ allowCidrs: ["fd00:1::/64"] });
    expect(policy.isAllowed("fd00:1::5")).toBe(true);
    expect(policy.isAllowed("fd00:2::5")).toBe(false);
    expect(policy.isAllowed("10.0.0.1")).toBe(false);
  });

  it("When an allowed CIDR is malformed, Then creating the policy throws", () => {
    expect(() => createAddressPolicy({ allowCidrs: ["127.0.0.1/33"] })).toThrow(/invalid CIDR/);
    expect(() => createAddressPolicy({ allowCidrs: ["localhost"] })).toThrow(/invalid CIDR/);
  });

  it("When the address text is not canonical, Then even an allowed range does not let it pass", () => {
    const policy = createAddressPolicy({ allowCidrs: ["127.0.0.0/8"] });
    expect(policy.isAllowed("2130706433")).toBe(false);
    expect(policy.isAllowed("127.1")).toBe(false);
  });
});
