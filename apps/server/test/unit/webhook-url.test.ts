import { describe, expect, it, vi } from "vitest";
import { createAddressPolicy } from "../../src/net/ip-policy.js";
import { staticResolver, systemResolver } from "../../src/net/resolver.js";
import { checkWebhookUrl } from "../../src/net/webhook-url.js";

const resolver = staticResolver({
  "hooks.acme-corp.com": ["93.184.216.34"],
  "v6.acme-corp.com": ["2606:4700:4700::1111"],
  "dual.acme-corp.com": ["93.184.216.34", "2606:4700:4700::1111"],
  "metadata.evil.com": ["169.254.169.254"],
  "loop.evil.com": ["127.0.0.1"],
  "loop6.evil.com": ["::1"],
  "ula.evil.com": ["fd00::1"],
  "cgnat.evil.com": ["100.64.0.1"],
  "private.evil.com": ["10.0.0.7"],
  "mapped.evil.com": ["::ffff:127.0.0.1"],
  "nat64.evil.com": ["64:ff9b::a9fe:a9fe"],
  "sixtofour.evil.com": ["2002:7f00:1::1"],
  "mixed.evil.com": ["93.184.216.34", "10.0.0.1"],
  "mixed6.evil.com": ["2606:4700:4700::1111", "fe80::1"],
  "localhost.acme-corp.com": ["93.184.216.34"],
  "receiver.test-hooks.dev": ["127.0.0.1"],
});
const addressPolicy = createAddressPolicy();
const check = (raw: string) => checkWebhookUrl(raw, { resolver, addressPolicy });

async function reasonFor(raw: string): Promise<string> {
  const result = await check(raw);
  if (result.ok) throw new Error(`expected ${raw} to be refused`);
  return result.reason;
}

describe("checkWebhookUrl", () => {
  it("When the URL is https with a public name, Then it is accepted with its addresses", async () => {
    const result = await check("https://hooks.acme-corp.com/webhooks/audit?x=1");
    expect(result).toMatchObject({ ok: true, addresses: ["93.184.216.34"] });
    if (result.ok) expect(result.url.href).toBe("https://hooks.acme-corp.com/webhooks/audit?x=1");
  });

  it("When the name has public A and AAAA answers or a port, Then it is accepted", async () => {
    expect(await check("https://dual.acme-corp.com:8443/hook")).toMatchObject({ ok: true, addresses: ["93.184.216.34", "2606:4700:4700::1111"] });
    expect(await check("https://v6.acme-corp.com/hook")).toMatchObject({ ok: true });
    expect(await check("https://HOOKS.Acme-Corp.com./hook")).toMatchObject({ ok: true });
  });

  describe("scheme and shape", () => {
    it.each([
      ["http://hooks.acme-corp.com/hook", /https/],
      ["ftp://hooks.acme-corp.com/hook", /https/],
      ["HTTPS:hooks.acme-corp.com/hook", /https/],
      ["//hooks.acme-corp.com/hook", /https/],
      ["/relative/path", /https/],
      ["hooks.acme-corp.com/hook", /https/],
      ["https://", /valid/],
      ["https://hooks.acme-corp.com\\@evil.com/", /backslash/],
      [" https://hooks.acme-corp.com/hook", /whitespace/],
      ["https://hooks.acme-\tcorp.com/hook", /whitespace/],
      ["https://hooks.acme-corp.com/ho ok", /whitespace/],
    ])("When the URL is %j, Then it is refused", async (raw, reason) => {
      expect(await reasonFor(raw)).toMatch(reason);
    });

    it.each(["https://user:pass@hooks.acme-corp.com/hook", "https://user@hooks.acme-corp.com/hook", "https://:pass@hooks.acme-corp.com/", "https://@hooks.acme-corp.com/"])(
      "When the URL %j carries userinfo, Then it is refused without echoing it",
      async (raw) => {
        const reason = await reasonFor(raw);
        expect(reason).toMatch(/user information/);
        expect(reason).not.toMatch(/pass|user:/);
      },
    );

    it.each(["https://hooks.acme-corp.com/hook#frag", "https://hooks.acme-corp.com/hook#"])("When the URL %j has a fragment, Then it is refused", async (raw) => {
      expect(await reasonFor(raw)).toMatch(/fragment/);
    });
  });

  describe("IP-literal hosts in every spelling", () => {
    it.each([
      "https://127.0.0.1/hook",
      "https://2130706433/hook",
      "https://0x7f.1/hook",
      "https://0x7f000001/hook",
      "https://0177.0.0.1/hook",
      "https://0177.1/hook",
      "https://127.1/hook",
      "https://127.0.1/hook",
      "https://%31%32%37.0.0.1/hook",
      "https://１２７.０.０.１/hook",
      "https://169.254.169.254/latest/meta-data",
      "https://8.8.8.8/hook",
      "https://[::1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://[::ffff:7f00:1]/hook",
      "https://[2606:4700:4700::1111]/hook",
      "https://[64:ff9b::a9fe:a9fe]/hook",
      "https://127.0.0.1.:8443/hook",
    ])("When the host is %j, Then it is refused as an IP literal", async (raw) => {
      expect(await reasonFor(raw)).toMatch(/not an IP address/);
    });

    it("When the policy would allow the literal's address, Then the literal is still refused and nothing is resolved", async () => {
      const spy = vi.fn(resolver);
      const result = await checkWebhookUrl("https://127.0.0.1/hook", {
        resolver: spy,
        addressPolicy: createAddressPolicy({ allowCidrs: ["127.0.0.1/32"] }),
      });
      expect(result.ok).toBe(false);
      expect(spy).not.toHaveBeenCalled();
    });
  });

  describe("names", () => {
    it.each(["https://receiver/hook", "https://com./hook", "https://hooks/hook", "https://xn--bcher-kva/hook"])(
      "When the host %j is a single label, Then it is refused",
      async (raw) => {
        expect(await reasonFor(raw)).toMatch(/fully qualified/);
      },
    );

    it.each([
      "https://localhost/hook",
      "https://example/hook",
      "https://localdomain/hook",
      "https://intranet/hook",
      "https://localhost./hook",
      "https://LOCALHOST:8443/hook",
      "https://api.localhost/hook",
      "https://printer.local/hook",
      "https://db.internal/hook",
      "https://router.home.arpa/hook",
      "https://1.0.0.127.in-addr.arpa/hook",
      "https://hooks.test/hook",
      "https://hooks.invalid/hook",
      "https://hooks.example/hook",
      "https://nas.lan/hook",
      "https://erp.corp/hook",
      "https://wiki.intranet/hook",
      "https://box.localdomain/hook",
      "https://secret.onion/hook",
      "https://printer。local/hook",
    ])("When the host of %j is a local or reserved name, Then it is refused", async (raw) => {
      expect(await reasonFor(raw)).toMatch(/local or reserved/);
    });

    it("When a reserved word is only a leading label of a public name, Then it is not mistaken for a reserved name", async () => {
      expect(await check("https://localhost.acme-corp.com/hook")).toMatchObject({ ok: true });
    });

    it("When the name does not resolve, Then it is refused naming the host", async () => {
      expect(await reasonFor("https://nowhere.acme-corp.com/hook")).toBe('URL host "nowhere.acme-corp.com" does not resolve');
    });

    it("When the resolver answers with no addresses, Then it is refused as unresolvable", async () => {
      const result = await checkWebhookUrl("https://empty.acme-corp.com/", { resolver: async () => [], addressPolicy });
      expect(result).toEqual({ ok: false, reason: 'URL host "empty.acme-corp.com" does not resolve' });
    });
  });

  describe("resolution to non-public addresses", () => {
    it.each([
      ["metadata.evil.com", "169.254.169.254"],
      ["loop.evil.com", "127.0.0.1"],
      ["loop6.evil.com", "::1"],
      ["ula.evil.com", "fd00::1"],
      ["cgnat.evil.com", "100.64.0.1"],
      ["private.evil.com", "10.0.0.7"],
      ["mapped.evil.com", "::ffff:127.0.0.1"],
      ["nat64.evil.com", "64:ff9b::a9fe:a9fe"],
      ["sixtofour.evil.com", "2002:7f00:1::1"],
      ["mixed.evil.com", "10.0.0.1"],
      ["mixed6.evil.com", "fe80::1"],
    ])("When %s resolves to %s, Then it is refused naming that address", async (host, address) => {
      expect(await reasonFor(`https://${host}/hook`)).toBe(`URL host "${host}" resolves to ${address}, which is not a public unicast address`);
    });

    it("When the policy explicitly allows loopback (tests), Then a name resolving there is accepted", async () => {
      const result = await checkWebhookUrl("https://receiver.test-hooks.dev:4443/hook", {
        resolver,
        addressPolicy: createAddressPolicy({ allowCidrs: ["127.0.0.1/32"] }),
      });
      expect(result).toMatchObject({ ok: true, addresses: ["127.0.0.1"] });
    });

    it("When loopback is not allowed (production), Then the same name is refused", async () => {
      expect((await check("https://receiver.test-hooks.dev:4443/hook")).ok).toBe(false);
    });
  });
});

describe("resolvers", () => {
  it("When a static name is asked in another case or with a trailing dot, Then its addresses come back with families", async () => {
    expect(await resolver("DUAL.acme-corp.com.")).toEqual([
      { address: "93.184.216.34", family: 4 },
      { address: "2606:4700:4700::1111", family: 6 },
    ]);
  });

  it("When a static resolver is asked for an unknown name, Then it fails like getaddrinfo (ENOTFOUND)", async () => {
    await expect(resolver("nowhere.acme-corp.com")).rejects.toMatchObject({ code: "ENOTFOUND", hostname: "nowhere.acme-corp.com" });
  });

  it("When a static table holds something that is not an IP, Then building it throws", () => {
    expect(() => staticResolver({ "a.example.org": ["not-an-ip"] })).toThrow(/not an IP/);
  });

  it("When the system resolver looks up localhost, Then it answers from the OS with loopback only", async () => {
    const answers = await systemResolver("localhost");
    expect(answers.length).toBeGreaterThan(0);
    for (const { address, family } of answers) {
      expect(["127.0.0.1", "::1"]).toContain(address);
      expect(family).toBe(address.includes(":") ? 6 : 4);
    }
  });
});
