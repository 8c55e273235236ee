// The resolver behind webhook URL checks and the sender's connections, against real DNS servers
// on 127.0.0.1: one that answers from a table (packets encoded by dns-packet) and one that
// receives every query and never answers.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestCa, type TestCa } from "@audit-review/test-kit/ca";
import { startReceiver } from "@audit-review/test-kit/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSender } from "../../src/delivery/sender.js";
import { createAddressPolicy } from "../../src/net/ip-policy.js";
import { createDnsResolver, DnsLookupError } from "../../src/net/resolver.js";
import { checkWebhookUrl } from "../../src/net/webhook-url.js";
import { startDnsServer, type TestDnsServer } from "../harness/dns-server.js";

const TIMEOUT_MS = 300;
const HOST = "hooks.acme-corp.com";

let answering: TestDnsServer;
let silent: TestDnsServer;
let ca: TestCa;
const dir = mkdtempSync(join(tmpdir(), "ars-dns-"));

beforeAll(async () => {
  ca = createTestCa();
  answering = await startDnsServer({
    [HOST]: ["93.184.216.34", "2606:4700:4700::1111"],
    "v4only.acme-corp.com": ["93.184.216.35"],
    "receiver.test-hooks.dev": ["127.0.0.1"],
  });
  silent = await startDnsServer({}, { silent: true });
});
afterAll(async () => {
  await answering.close();
  await silent.close();
  rmSync(dir, { recursive: true, force: true });
});

const through = (server: TestDnsServer, hostsFile: string | null = null) => createDnsResolver({ servers: [server.address], timeoutMs: TIMEOUT_MS, hostsFile });

describe("createDnsResolver", () => {
  it("When the DNS server answers, Then A and AAAA are asked in parallel and every address comes back, IPv4 first", async () => {
    answering.queries.length = 0;
    expect(await through(answering)(`${HOST.toUpperCase()}.`)).toEqual([
      { address: "93.184.216.34", family: 4 },
      { address: "2606:4700:4700::1111", family: 6 },
    ]);
    expect(answering.queries.sort()).toEqual([`A ${HOST}`, `AAAA ${HOST}`]);
  });

  it("When a name has only A records, Then its IPv4 addresses are the answer", async () => {
    expect(await through(answering)("v4only.acme-corp.com")).toEqual([{ address: "93.184.216.35", family: 4 }]);
  });

  it("When DNS says the name does not exist, Then the lookup fails with ENOTFOUND", async () => {
    await expect(through(answering)("nowhere.acme-corp.com")).rejects.toMatchObject({
      name: "DnsLookupError",
      code: "ENOTFOUND",
      message: "could not resolve nowhere.acme-corp.com (ENOTFOUND)",
    });
  });

  it("When the DNS server never answers, Then the lookup fails with ETIMEOUT at the deadline, not the system resolver's", async () => {
    silent.queries.length = 0;
    const started = performance.now();
    const failure = await through(silent)(HOST).catch((err: unknown) => err);
    const took = performance.now() - started;
    expect(failure).toBeInstanceOf(DnsLookupError);
    expect(failure).toMatchObject({ code: "ETIMEOUT", hostname: HOST, timeoutMs: TIMEOUT_MS, message: `could not resolve ${HOST}: no answer from DNS within ${TIMEOUT_MS} ms` });
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(took).toBeLessThan(TIMEOUT_MS + 700);
    // both families were asked, at once
    expect(new Set(silent.queries)).toEqual(new Set([`A ${HOST}`, `AAAA ${HOST}`]));
  });

  it("When many lookups wait on a silent server, Then file reads (libuv's thread pool) are not held up", async () => {
    const resolve = through(silent);
    const waiting = Array.from({ length: 16 }, (_, i) => resolve(`slow-${i}.acme-corp.com`).catch(() => "timed out"));
    const started = performance.now();
    await readFile(join(import.meta.dirname, "dns-resolver.test.ts"));
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS / 2);
    expect(new Set(await Promise.all(waiting))).toEqual(new Set(["timed out"]));
  });

  it("When the name is an IP literal, localhost or under .localhost, Then no DNS query is made", async () => {
    const resolve = through(silent);
    silent.queries.length = 0;
    expect(await resolve("203.0.113.9")).toEqual([{ address: "203.0.113.9", family: 4 }]);
    expect(await resolve("[2001:db8::1]")).toEqual([{ address: "2001:db8::1", family: 6 }]);
    for (const name of ["localhost", "api.localhost."]) {
      expect(await resolve(name)).toEqual([
        { address: "127.0.0.1", family: 4 },
        { address: "::1", family: 6 },
      ]);
    }
    expect(silent.queries).toEqual([]);
  });

  it("When the hosts file names the host, Then its addresses win over DNS, as with the system resolver", async () => {
    const hosts = join(dir, "hosts");
    writeFileSync(hosts, `# comment\n127.0.0.1 localhost\n203.0.113.7   Mirror.acme-corp.com mirror # trailing\n2001:db8::7 mirror.acme-corp.com\nfe80::1%lo0 scoped.acme-corp.com\n`);
    const resolve = through(silent, hosts);
    silent.queries.length = 0;
    expect(await resolve("mirror.acme-corp.com")).toEqual([
      { address: "203.0.113.7", family: 4 },
      { address: "2001:db8::7", family: 6 },
    ]);
    expect(await resolve("localhost")).toEqual([{ address: "127.0.0.1", family: 4 }]);
    expect(silent.queries).toEqual([]);
    // a scoped address is skipped: the name goes to DNS (which never answers)
    await expect(resolve("scoped.acme-corp.com")).rejects.toMatchObject({ code: "ETIMEOUT" });
  });
});

describe("webhook URL checks through the resolver", () => {
  const addressPolicy = createAddressPolicy();

  it("When DNS answers with public addresses, Then the URL is accepted with them", async () => {
    expect(await checkWebhookUrl(`https://${HOST}/hook`, { resolver: through(answering), addressPolicy })).toMatchObject({
      ok: true,
      addresses: ["93.184.216.34", "2606:4700:4700::1111"],
    });
  });

  it("When DNS does not answer in time, Then the reason says so and that trying again may help", async () => {
    expect(await checkWebhookUrl(`https://${HOST}/hook`, { resolver: through(silent), addressPolicy })).toEqual({
      ok: false,
      reason: `URL host "${HOST}" could not be checked: DNS did not answer within ${TIMEOUT_MS} ms; try again later`,
    });
  });
});

describe("the sender through the resolver", () => {
  const sender = (server: TestDnsServer) =>
    createSender({
      resolver: through(server),
      addressPolicy: createAddressPolicy({ allowCidrs: ["127.0.0.1/32"] }),
      ca: ca.cert,
      userAgent: "AuditReview-Webhooks/test",
      connectTimeoutMs: 5_000,
    });
  const request = (port: number) => ({ url: `https://receiver.test-hooks.dev:${port}/hook`, headers: { "content-type": "application/json" }, body: "{}" });

  it("When DNS answers, Then the attempt connects to the address it gave", async () => {
    const r = await startReceiver({ ca, hostname: "receiver.test-hooks.dev" });
    const s = sender(answering);
    try {
      expect(await s.send(request(r.port))).toMatchObject({ ok: true, status: 200, error: null });
      expect(r.requests).toHaveLength(1);
    } finally {
      await s.close();
      await r.close();
    }
  });

  it("When DNS does not answer, Then the attempt is a dns_error naming the deadline, well before the connect timeout", async () => {
    const r = await startReceiver({ ca, hostname: "receiver.test-hooks.dev" });
    const s = sender(silent);
    try {
      const outcome = await s.send(request(r.port));
      expect(outcome).toMatchObject({
        ok: false,
        status: null,
        responseBody: null,
        error: { code: "dns_error", message: `could not resolve receiver.test-hooks.dev: no answer from DNS within ${TIMEOUT_MS} ms` },
      });
      expect(outcome.durationMs).toBeLessThan(TIMEOUT_MS + 700);
      expect(r.requests).toHaveLength(0);
    } finally {
      await s.close();
      await r.close();
    }
  });
});
