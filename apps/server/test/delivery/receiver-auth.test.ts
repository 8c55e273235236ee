// Receiver authentication end to end: custom headers, HTTP Basic, and OAuth2 client credentials
// against a real loopback HTTPS token server. Every credential handed to the server is
// remembered; none may appear in an API read (checked here) or a log line (checked after the file).
import type { ServerResponse } from "node:http";
import { beforeEach, describe, expect, it } from "vitest";
import { credentials } from "../harness/factories.js";
import type { RecordedRequest } from "@audit-review/test-kit/receiver";
import type { Api, TestOrg } from "../harness/server.js";
import { startWorker } from "../../src/worker.js";
import { AUTH_HOST, PUBLIC_ADDRESS, endpointFor, onlyDelivery, publish, readEndpoint, rememberCredential, retryingAfterOne, useDeliveryServer, workerOptions } from "./support.js";

const h = await useDeliveryServer({ scheduleMs: [0, 600_000] });

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

const unique = () => Math.random().toString(36).slice(2, 10);

/** Nothing any test handed over as a credential appears in what the API shows. */
async function expectNoCredentialsInReads(api: Api) {
  const endpoints = JSON.stringify((await api.GET("/v2/webhook_endpoints", { params: { query: { limit: 100 } } })).data);
  const deliveries = JSON.stringify((await api.GET("/v2/webhook_deliveries", { params: { query: { limit: 100 } } })).data);
  for (const secret of credentials) {
    expect(endpoints.includes(secret), "an endpoint read shows a credential").toBe(false);
    expect(deliveries.includes(secret), "a delivery read shows a credential").toBe(false);
  }
}

interface TokenServerOptions {
  expiresIn?: number;
  status?: number;
}

/** A loopback HTTPS OAuth2 token endpoint issuing `tok-<n>-<suffix>` (client_secret_post). */
async function tokenServer({ expiresIn = 3600, status = 200 }: TokenServerOptions = {}) {
  const suffix = unique();
  let issued = 0;
  const server = await h.receiver({
    hostname: AUTH_HOST,
    handler: (_req: RecordedRequest, res: ServerResponse) => {
      if (status !== 200) return void res.writeHead(status, { "content-type": "application/json" }).end('{"error":"server_error"}');
      const token = `tok-${++issued}-${suffix}`;
      rememberCredential(token);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: token, token_type: "Bearer", expires_in: expiresIn }));
    },
  });
  return { server, token: (n: number) => `tok-${n}-${suffix}`, url: `https://${AUTH_HOST}:${server.port}/oauth/token` };
}

function oauth(tokenUrl: string, clientSecret = `cs-${unique()}`) {
  return {
    authentication: { type: "oauth2_client_credentials" as const, token_url: tokenUrl, client_id: "audit-review", client_secret: clientSecret, scope: "hooks.write" },
  };
}

describe("custom headers and Basic", () => {
  it("When the endpoint uses custom headers, Then every delivery carries them and reads show only their names", async () => {
    const r = await h.receiver();
    const key = `k3y-${unique()}`;
    const ep = await endpointFor(org.api, r.url, { authentication: { type: "headers", headers: { "X-Api-Key": key, "X-Tenant": "acme" } } });
    expect(ep.authentication).toEqual({ type: "headers", header_names: ["X-Api-Key", "X-Tenant"] });
    await publish(org.api);
    const req = await r.nextRequest();
    expect(req.headers["x-api-key"]).toBe(key);
    expect(req.headers["x-tenant"]).toBe("acme");
    await h.server.drain();
    expect(await onlyDelivery(org.api, ep.id)).toMatchObject({ status: "succeeded" });
    await expectNoCredentialsInReads(org.api);
  });

  it("When the endpoint uses Basic, Then Authorization carries the credentials and reads show only the username", async () => {
    const r = await h.receiver();
    const password = `pw-${unique()}`;
    const ep = await endpointFor(org.api, r.url, { authentication: { type: "basic", username: "audit-review", password } });
    expect((await readEndpoint(org.api, ep.id)).authentication).toEqual({ type: "basic", username: "audit-review" });
    await publish(org.api);
    const req = await r.nextRequest();
    expect(req.headers.authorization).toBe(`Basic ${Buffer.from(`audit-review:${password}`).toString("base64")}`);
    await h.server.drain();
    await expectNoCredentialsInReads(org.api);
  });
});

describe("OAuth2 client credentials", () => {
  it("When two deliveries need a token, Then it is fetched once with client_secret_post and sent as a Bearer token", async () => {
    const tokens = await tokenServer();
    const r = await h.receiver();
    const clientSecret = `cs-${unique()}`;
    const ep = await endpointFor(org.api, r.url, oauth(tokens.url, clientSecret));
    expect(ep.authentication).toEqual({ type: "oauth2_client_credentials", token_url: tokens.url, client_id: "audit-review", scope: "hooks.write", audience: null });

    await publish(org.api);
    await publish(org.api);
    const reqs = [await r.nextRequest(), await r.nextRequest()];
    expect(reqs.map((q) => q.headers.authorization)).toEqual([`Bearer ${tokens.token(1)}`, `Bearer ${tokens.token(1)}`]);

    expect(tokens.server.requests).toHaveLength(1);
    const tokenRequest = tokens.server.requests[0]!;
    expect(tokenRequest.method).toBe("POST");
    expect(tokenRequest.path).toBe("/oauth/token");
    expect(tokenRequest.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(tokenRequest.headers.authorization).toBeUndefined();
    expect(Object.fromEntries(new URLSearchParams(tokenRequest.body))).toEqual({
      grant_type: "client_credentials",
      client_id: "audit-review",
      client_secret: clientSecret,
      scope: "hooks.write",
    });
    await h.server.drain();
    await expectNoCredentialsInReads(org.api);
  });

  it("When the cached token nears its expiry, Then the next delivery fetches a new one", async () => {
    const tokens = await tokenServer({ expiresIn: 1 });
    const r = await h.receiver();
    await endpointFor(org.api, r.url, oauth(tokens.url));
    await publish(org.api);
    expect((await r.nextRequest()).headers.authorization).toBe(`Bearer ${tokens.token(1)}`);
    // A 1 s token is used until 100 ms (10 %) before it expires; its lifetime passes on the engine's clock.
    h.clock.advance(1_000);
    await publish(org.api);
    expect((await r.nextRequest()).headers.authorization).toBe(`Bearer ${tokens.token(2)}`);
    expect(tokens.server.requests).toHaveLength(2);
    await h.server.drain();
  });

  it("When the receiver refuses the token with 401, Then one new token is fetched and the request is sent again within the same attempt", async () => {
    const tokens = await tokenServer();
    const r = await h.receiver({
      handler: (req, res) => void res.writeHead(req.headers.authorization === `Bearer ${tokens.token(1)}` ? 401 : 200).end(),
    });
    const ep = await endpointFor(org.api, r.url, oauth(tokens.url));
    await publish(org.api);
    await h.server.drain();
    expect(r.requests.map((q) => q.headers.authorization)).toEqual([`Bearer ${tokens.token(1)}`, `Bearer ${tokens.token(2)}`]);
    expect(tokens.server.requests).toHaveLength(2);
    expect(await onlyDelivery(org.api, ep.id)).toMatchObject({ status: "succeeded", attempt_count: 1, last_response_status: 200, last_error: null });
  });

  it("When the receiver answers 401 to the new token as well, Then there is no second refetch and the attempt failed with 401", async () => {
    const tokens = await tokenServer();
    const r = await h.receiver({ status: 401 });
    const ep = await endpointFor(org.api, r.url, oauth(tokens.url));
    await publish(org.api);
    await h.server.drain();
    expect(r.requests).toHaveLength(2);
    expect(tokens.server.requests).toHaveLength(2);
    expect(await onlyDelivery(org.api, ep.id)).toMatchObject(retryingAfterOne(401, { code: "unexpected_status", message: "receiver answered 401" }));
  });

  it("When the endpoint's authentication is updated (same token URL and client id, a new secret), Then the cached token is dropped at once and the next delivery fetches one with the new secret", async () => {
    const tokens = await tokenServer();
    const r = await h.receiver();
    const ep = await endpointFor(org.api, r.url, oauth(tokens.url));
    await publish(org.api);
    expect((await r.nextRequest()).headers.authorization).toBe(`Bearer ${tokens.token(1)}`);
    await h.server.drain();
    const rotated = `cs-${unique()}`;
    rememberCredential(rotated);
    await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: oauth(tokens.url, rotated) });
    await publish(org.api);
    expect((await r.nextRequest()).headers.authorization).toBe(`Bearer ${tokens.token(2)}`);
    expect(tokens.server.requests).toHaveLength(2);
    expect(new URLSearchParams(tokens.server.requests[1]!.body).get("client_secret")).toBe(rotated);
    await h.server.drain();
  });

  it("When the token server fails, Then the attempt is an auth_error, the receiver is not called, and the secret is nowhere", async () => {
    const tokens = await tokenServer({ status: 500 });
    const r = await h.receiver();
    const ep = await endpointFor(org.api, r.url, oauth(tokens.url));
    await publish(org.api);
    await h.server.drain();
    expect(r.requests).toHaveLength(0);
    expect(tokens.server.requests).toHaveLength(1);
    expect(await onlyDelivery(org.api, ep.id)).toMatchObject(retryingAfterOne(null, { code: "auth_error", message: `token endpoint ${AUTH_HOST}:${tokens.server.port} answered 500` }));
    await expectNoCredentialsInReads(org.api);
  });

  it("When the token URL's name resolves to a private address at send time, Then it is an auth_error and the token server is never contacted", async () => {
    const host = "auth-rebind.test-hooks.dev";
    const tokens = await h.receiver({ hostname: host, listenAddress: "127.0.0.2" });
    const r = await h.receiver();
    h.hosts.set(host, [PUBLIC_ADDRESS]);
    const ep = await endpointFor(org.api, r.url, oauth(`https://${host}:${tokens.port}/token`));
    h.hosts.set(host, ["10.0.0.9"]);
    await publish(org.api);
    await h.server.drain();
    expect(tokens.connections).toBe(0);
    expect(r.requests).toHaveLength(0);
    expect(await onlyDelivery(org.api, ep.id)).toMatchObject(retryingAfterOne(null, { code: "auth_error", message: `token request to ${host}:${tokens.port} failed: ${host} resolves to 10.0.0.9, which is not an allowed destination` }));
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)("another process's caches (PostgreSQL only: LISTEN/NOTIFY)", () => {
  // Last in the file: the server's own dispatcher stays stopped, so the worker sends everything.
  it("When an endpoint is updated through the API, Then a worker in another process drops its cached token too", async () => {
    await h.server.server.dispatcher.stop();
    const worker = await startWorker(workerOptions(h, {}));
    try {
      const tokens = await tokenServer();
      const r = await h.receiver();
      const ep = await endpointFor(org.api, r.url, oauth(tokens.url));
      await publish(org.api);
      expect((await r.nextRequest({ timeoutMs: 15_000 })).headers.authorization).toBe(`Bearer ${tokens.token(1)}`);
      const rotated = `cs-${unique()}`;
      rememberCredential(rotated);
      await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: oauth(tokens.url, rotated) });
      await publish(org.api);
      expect((await r.nextRequest({ timeoutMs: 15_000 })).headers.authorization).toBe(`Bearer ${tokens.token(2)}`);
    } finally {
      await worker.close();
    }
  });
});
