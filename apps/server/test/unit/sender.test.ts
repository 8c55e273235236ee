import type { LookupAddress } from "node:dns";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createPinnedLookup, createSender, type Sender, type SenderOptions } from "../../src/delivery/sender.js";
import { createAddressPolicy } from "../../src/net/ip-policy.js";
import { staticResolver, type Resolver } from "../../src/net/resolver.js";
import { createTestCa, type TestCa } from "@audit-review/test-kit/ca";
import { closedPort, startReceiver, startSilentServer, type Receiver } from "@audit-review/test-kit/receiver";

const HOST = "receiver.test-hooks.dev";
const USER_AGENT = "AuditReview-Webhooks/test";
const SECRET = "Bearer very-secret-token-value";

let ca: TestCa;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(() => {
  ca = createTestCa();
});

afterEach(async () => {
  // Senders first: closing an agent waits for its in-flight requests.
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function receiver(opts: Partial<Parameters<typeof startReceiver>[0]> = {}): Promise<Receiver> {
  const r = await startReceiver({ ca, ...opts });
  cleanup.push(() => r.close());
  return r;
}

function sender(opts: Partial<SenderOptions> = {}): Sender {
  const s = createSender({
    resolver: staticResolver({ [HOST]: ["127.0.0.1"] }),
    addressPolicy: createAddressPolicy({ allowCidrs: ["127.0.0.1/32"] }),
    ca: ca.cert,
    userAgent: USER_AGENT,
    ...opts,
  });
  cleanup.unshift(() => s.close());
  return s;
}

const delivery = (url: string) => ({
  url,
  headers: {
    "content-type": "application/json",
    "webhook-id": "evt_123",
    authorization: SECRET,
    "User-Agent": "caller-chosen",
    Host: "evil.example.com",
  },
  body: '{"type":"audit.completed"}',
});

describe("createSender().send", () => {
  it("When the receiver answers 200, Then the outcome is ok and the receiver got the exact request", async () => {
    const r = await receiver();
    const outcome = await sender().send(delivery(r.url));

    expect(outcome).toMatchObject({ ok: true, status: 200, error: null });
    expect(outcome.headers["content-type"]).toBe("text/plain");
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
    const got = await r.nextRequest();
    expect(got.method).toBe("POST");
    expect(got.path).toBe("/hook");
    expect(got.body).toBe('{"type":"audit.completed"}');
    expect(got.headers["webhook-id"]).toBe("evt_123");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["user-agent"]).toBe(USER_AGENT);
    expect(got.headers.host).toBe(`${HOST}:${r.port}`);
    expect(got.localAddress).toBe("127.0.0.1");
  });

  it("When the receiver answers 500, Then the outcome is unexpected_status without header values", async () => {
    const r = await receiver({ status: 500 });
    const outcome = await sender().send(delivery(r.url));
    expect(outcome).toMatchObject({ ok: false, status: 500, error: { code: "unexpected_status", message: "receiver answered 500" } });
    expect(JSON.stringify(outcome)).not.toContain("very-secret");
  });

  it("When the receiver answers 302, Then the redirect is not followed", async () => {
    const r = await receiver();
    r.setStatus(302, { location: `${r.url}/elsewhere` });
    const outcome = await sender().send(delivery(r.url));
    expect(outcome).toMatchObject({ ok: false, status: 302, error: { code: "unexpected_status", message: "receiver answered 302" } });
    expect(outcome.headers.location).toBe(`${r.url}/elsewhere`);
    // Give a follow-up request the chance to arrive before counting.
    await expect(r.nextRequest({ timeoutMs: 5000 })).resolves.toMatchObject({ path: "/hook" });
    await expect(r.nextRequest({ timeoutMs: 200 })).rejects.toThrow(/no request/);
    expect(r.requests).toHaveLength(1);
  });

  it("When the receiver answers 429 with Retry-After, Then status and header come back for scheduling", async () => {
    const r = await receiver();
    r.setStatus(429, { "retry-after": "120", "set-cookie": "session=abc" });
    const outcome = await sender().send(delivery(r.url));
    expect(outcome).toMatchObject({ ok: false, status: 429 });
    expect(outcome.headers["retry-after"]).toBe("120");
    expect(outcome.headers["set-cookie"]).toBeUndefined();
  });

  it("When the receiver never answers, Then the attempt ends as a timeout at the total timeout", async () => {
    const r = await receiver({ handler: () => new Promise<void>(() => {}) });
    const s = sender({ totalTimeoutMs: 300 });
    const outcome = await s.send(delivery(r.url));
    expect(outcome).toMatchObject({ ok: false, status: null, error: { code: "timeout" } });
    expect(outcome.error?.message).toBe(`${HOST} did not answer within 300 ms`);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(250);
    expect(outcome.durationMs).toBeLessThan(5000);
    expect(r.requests).toHaveLength(1);
  });

  it("When the TLS handshake never completes, Then it is a connect timeout", async () => {
    const silent = await startSilentServer();
    cleanup.push(() => silent.close());
    const outcome = await sender({ connectTimeoutMs: 200, totalTimeoutMs: 10_000 }).send(delivery(`https://${HOST}:${silent.port}/hook`));
    expect(outcome).toMatchObject({ ok: false, status: null, error: { code: "timeout", message: `could not connect to ${HOST} within 200 ms` } });
    expect(outcome.durationMs).toBeLessThan(5000);
    expect(silent.connections()).toBe(1);
  });

  it("When nothing listens on the port, Then it is a connection_error", async () => {
    const port = await closedPort();
    const outcome = await sender().send(delivery(`https://${HOST}:${port}/hook`));
    expect(outcome).toMatchObject({ ok: false, status: null, error: { code: "connection_error" } });
    expect(outcome.error?.message).toContain("ECONNREFUSED");
  });

  it("When the receiver's certificate comes from an untrusted CA, Then it is a tls_error and no request is made", async () => {
    const r = await receiver({ ca: createTestCa({ fresh: true }) });
    const outcome = await sender().send(delivery(r.url));
    expect(outcome).toMatchObject({ ok: false, status: null, error: { code: "tls_error" } });
    expect(outcome.error?.message).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN/);
    expect(r.requests).toHaveLength(0);
  });

  it("When no extra CA is configured, Then the test CA is not trusted (verification is on)", async () => {
    const r = await receiver();
    const outcome = await sender({ ca: undefined }).send(delivery(r.url));
    expect(outcome.error?.code).toBe("tls_error");
    expect(r.requests).toHaveLength(0);
  });

  it("When the certificate names another host, Then it is a tls_error (SNI and name check use the URL host)", async () => {
    const r = await receiver({ certNames: ["other.test-hooks.dev"] });
    const outcome = await sender().send(delivery(r.url));
    expect(outcome.error).toEqual({ code: "tls_error", message: `TLS with ${HOST} failed (ERR_TLS_CERT_ALTNAME_INVALID)` });
    expect(r.requests).toHaveLength(0);
  });

  it("When the name does not resolve, Then it is a dns_error", async () => {
    const r = await receiver();
    const outcome = await sender().send(delivery(`https://unknown.test-hooks.dev:${r.port}/hook`));
    expect(outcome.error).toEqual({ code: "dns_error", message: "could not resolve unknown.test-hooks.dev (ENOTFOUND)" });
    expect(r.connections).toBe(0);
  });

  it("When the name resolves to an address the policy refuses, Then it is destination_blocked and nothing connects", async () => {
    const r = await receiver();
    const s = sender({ addressPolicy: createAddressPolicy() });
    const outcome = await s.send(delivery(r.url));
    expect(outcome).toMatchObject({ ok: false, status: null });
    expect(outcome.error).toEqual({ code: "destination_blocked", message: `${HOST} resolves to 127.0.0.1, which is not an allowed destination` });
    expect(r.connections).toBe(0);
    expect(r.requests).toHaveLength(0);
  });

  it("When one of several answers is refused, Then the whole name is refused and nothing connects", async () => {
    const r = await receiver();
    const s = sender({ resolver: staticResolver({ [HOST]: ["127.0.0.1", "10.0.0.1"] }) });
    const outcome = await s.send(delivery(r.url));
    expect(outcome.error?.code).toBe("destination_blocked");
    expect(outcome.error?.message).toContain("10.0.0.1");
    expect(r.connections).toBe(0);
  });

  it.each([
    ["127.0.0.1", (port: number) => `https://127.0.0.1:${port}/hook`],
    ["[::1]", (port: number) => `https://[::1]:${port}/hook`],
    ["decimal", (port: number) => `https://2130706433:${port}/hook`],
  ])("When the URL host is the IP literal %s, Then it is refused before any lookup or connection", async (_name, url) => {
    const r = await receiver();
    const resolver = vi.fn(staticResolver({ [HOST]: ["127.0.0.1"] }));
    const outcome = await sender({ resolver }).send(delivery(url(r.port)));
    expect(outcome.error).toEqual({ code: "destination_blocked", message: "IP-literal destinations are not allowed" });
    expect(resolver).not.toHaveBeenCalled();
    expect(r.connections).toBe(0);
  });

  it("When the URL is not https, Then it is refused without connecting", async () => {
    const r = await receiver();
    const outcome = await sender().send(delivery(`http://${HOST}:${r.port}/hook`));
    expect(outcome.error).toEqual({ code: "destination_blocked", message: "only https destinations are allowed" });
    expect(r.connections).toBe(0);
  });

  it("When the receiver answers 200 and then stalls in its body, Then the answer stands at the total timeout with what arrived", async () => {
    const r = await receiver({
      handler: async (_req, res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("accepted, still writing");
        await new Promise<void>(() => {});
      },
    });
    const outcome = await sender({ totalTimeoutMs: 300 }).send(delivery(r.url));
    expect(outcome).toMatchObject({ ok: true, status: 200, error: null, responseBody: "accepted, still writing" });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(250);
    expect(outcome.durationMs).toBeLessThan(5000);
  });

  it("When the receiver answers with an informational 103 first, Then the final status is the outcome", async () => {
    const r = await receiver({
      handler: (_req, res) => {
        res.writeEarlyHints({ link: "</style.css>; rel=preload; as=style" });
        res.writeHead(204).end();
      },
    });
    expect(await sender().send(delivery(r.url))).toMatchObject({ ok: true, status: 204, error: null, responseBody: "" });
  });

  it("When the receiver streams 10 MB, Then the sender stops after the cap and returns promptly", async () => {
    const total = 10 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let written = 0;
    let finished = false;
    let responseClosed!: () => void;
    const closed = new Promise<void>((resolve) => (responseClosed = resolve));
    const r = await receiver({
      handler: async (_req, res) => {
        res.on("close", responseClosed);
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(total) });
        while (written < total && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) await new Promise((drained) => res.once("drain", drained).once("close", drained));
        }
        res.end(() => (finished = true));
      },
    });

    const outcome = await sender({ maxResponseBytes: 1024, totalTimeoutMs: 10_000 }).send(delivery(r.url));

    expect(outcome).toMatchObject({ ok: true, status: 200, error: null });
    expect(outcome.durationMs).toBeLessThan(5000);
    await closed;
    // The client hung up after the cap: the server never got the whole body out.
    expect(finished).toBe(false);
    expect(written).toBeLessThan(total);
  });

  it("When the resolver's answer changes between lookups, Then the connection uses the one vetted answer (no second lookup)", async () => {
    const r = await receiver();
    // First answer: the receiver (allowed). Any later answer: a loopback address nobody listens on.
    const answers = [["127.0.0.1"], ["127.0.0.3"]];
    const resolver: Resolver = vi.fn(async () => (answers.shift() ?? ["127.0.0.3"]).map((address) => ({ address, family: 4 as const })));
    const s = sender({ resolver, addressPolicy: createAddressPolicy({ allowCidrs: ["127.0.0.0/8"] }) });
    const outcome = await s.send(delivery(r.url));
    expect(outcome).toMatchObject({ ok: true, status: 200 });
    expect(resolver).toHaveBeenCalledTimes(1);
    expect((await r.nextRequest()).localAddress).toBe("127.0.0.1");
  });
});

describe("createSender().request (token fetches)", () => {
  it("When POSTing a form to a JSON endpoint, Then the parsed JSON comes back", async () => {
    const r = await receiver({
      handler: (_req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ access_token: "tok", expires_in: 3600 }));
      },
    });
    const form = new URLSearchParams({ grant_type: "client_credentials", client_id: "c", client_secret: "s" }).toString();
    const outcome = await sender().request({ url: r.url, headers: { "content-type": "application/x-www-form-urlencoded" }, body: form });
    expect(outcome).toMatchObject({ ok: true, status: 200, truncated: false, json: { access_token: "tok", expires_in: 3600 } });
    const got = await r.nextRequest();
    expect(got.body).toBe(form);
    expect(got.headers["content-type"]).toBe("application/x-www-form-urlencoded");
  });

  it("When the response exceeds the cap, Then at most the cap is read and JSON is not parsed", async () => {
    const r = await receiver({
      handler: (_req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ access_token: "x".repeat(5000) }));
      },
    });
    const outcome = await sender().request({ url: r.url, body: "", maxResponseBytes: 1000 });
    expect(outcome.body).toHaveLength(1000);
    expect(outcome.truncated).toBe(true);
    expect(outcome.json).toBeUndefined();
  });

  it("When the token URL resolves to a refused address, Then it is destination_blocked like a delivery", async () => {
    const r = await receiver();
    const outcome = await sender({ addressPolicy: createAddressPolicy() }).request({ url: r.url, body: "" });
    expect(outcome.error?.code).toBe("destination_blocked");
    expect(r.connections).toBe(0);
  });
});

describe("createPinnedLookup", () => {
  const lookup = createPinnedLookup(
    staticResolver({ "dual.test-hooks.dev": ["127.0.0.1", "::ffff:127.0.0.1"], "bad.test-hooks.dev": ["169.254.169.254"] }),
    createAddressPolicy({ allowCidrs: ["127.0.0.1/32"] }),
  );
  const call = (host: string, options: Parameters<typeof lookup>[1]) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) =>
      lookup(host, options, (err, address, family) => resolve({ err, address, family })),
    );

  it("When Node asks with { all: true }, Then every vetted answer comes back as an array", async () => {
    const { err, address } = await call("dual.test-hooks.dev", { all: true });
    expect(err).toBeNull();
    expect(address).toEqual([
      { address: "127.0.0.1", family: 4 },
      { address: "::ffff:127.0.0.1", family: 6 },
    ]);
  });

  it("When Node asks for a single address, Then the first vetted answer comes back with its family", async () => {
    expect(await call("dual.test-hooks.dev", {})).toEqual({ err: null, address: "127.0.0.1", family: 4 });
    expect(await call("dual.test-hooks.dev", { family: 6 })).toEqual({ err: null, address: "::ffff:127.0.0.1", family: 6 });
  });

  it("When an answer is refused, Then the callback gets a blocked error in both forms", async () => {
    for (const options of [{ all: true }, {}]) {
      const { err } = await call("bad.test-hooks.dev", options);
      expect(err?.code).toBe("ERR_DESTINATION_BLOCKED");
    }
  });
});

afterAll(() => {
  expect(cleanup).toHaveLength(0);
});
