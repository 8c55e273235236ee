// A receiver that echoes everything it got must not turn the stored attempt into a way to read
// write-only credentials: neither the API (`GET /v2/webhook_deliveries/{id}/attempts`) nor the
// database row may hold a secret the sender put on the request, in any spelling.
import type { ServerResponse } from "node:http";
import type { RecordedRequest } from "@audit-review/test-kit/receiver";
import { beforeEach, describe, expect, it } from "vitest";
import type { TestOrg } from "../harness/server.js";
import { AUTH_HOST, endpointFor, onlyDelivery, publish, rememberCredential, useDeliveryServer } from "./support.js";

const h = await useDeliveryServer({ scheduleMs: [0, 600_000] });
let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});
const unique = () => Math.random().toString(36).slice(2, 10);

/** Answers 500 with every header it got, the Basic pair decoded and re-encoded, anything extra, then the body. */
function echo(extra: Record<string, string> = {}) {
  return (req: RecordedRequest, res: ServerResponse) => {
    const auth = String(req.headers.authorization ?? "");
    const basic = auth.startsWith("Basic ") ? Buffer.from(auth.slice(6), "base64").toString("utf8") : "";
    const echoed = { headers: req.headers, basic_pair: basic, basic_pair_url: encodeURIComponent(basic), ...extra, body: req.body };
    res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify(echoed));
  };
}

/** What the API and the database keep of the endpoint's one attempt, after the engine recorded it. */
async function storedAttempt(endpointId: string) {
  await h.server.drain();
  const delivery = await onlyDelivery(org.api, endpointId);
  const { data } = await org.api.GET("/v2/webhook_deliveries/{delivery_id}/attempts", { params: { path: { delivery_id: delivery.id } } });
  const rows = await h.server.server.db.query<{ response_body: string | null }>("SELECT response_body FROM webhook_delivery_attempts WHERE delivery_id = $1", [delivery.id]);
  expect(data!.data).toHaveLength(1);
  expect(rows).toHaveLength(1);
  return { api: JSON.stringify(data), row: rows[0]!.response_body! };
}

function expectNone(stored: { api: string; row: string }, secrets: string[]) {
  expect(stored.row).toContain("[REDACTED]");
  expect(stored.row).toContain("webhook-id"); // the rest of the echo is kept
  for (const secret of secrets) {
    expect(stored.api.includes(secret), `the API shows ${secret}`).toBe(false);
    expect(stored.row.includes(secret), `the row holds ${secret}`).toBe(false);
  }
}

describe("an echoing receiver", () => {
  it("When the endpoint sends custom headers, Then no header value is stored or shown", async () => {
    const r = await h.receiver({ handler: echo() });
    const key = `k3y-${unique()}`;
    const quoted = `q"uo\\te-${unique()}`;
    [key, quoted].forEach(rememberCredential);
    const ep = await endpointFor(org.api, r.url, { authentication: { type: "headers", headers: { "X-Api-Key": key, "X-Other": quoted } } });
    await publish(org.api);
    expect((await r.nextRequest()).headers["x-api-key"]).toBe(key);
    expectNone(await storedAttempt(ep.id), [key, quoted, JSON.stringify(quoted).slice(1, -1)]);
  });

  it("When the endpoint uses Basic, Then neither the password nor the pair, raw, base64 or URL-encoded, is stored or shown", async () => {
    const r = await h.receiver({ handler: echo() });
    const password = `pw:${unique()} /+é`;
    rememberCredential(password);
    const ep = await endpointFor(org.api, r.url, { authentication: { type: "basic", username: "audit-review", password } });
    await publish(org.api);
    await r.nextRequest();
    const pair = `audit-review:${password}`;
    expectNone(await storedAttempt(ep.id), [password, pair, Buffer.from(pair).toString("base64"), encodeURIComponent(pair), encodeURIComponent(password)]);
  });

  it("When the endpoint uses OAuth2, Then neither the bearer token nor the client secret is stored or shown", async () => {
    const clientSecret = `cs-${unique()}`;
    rememberCredential(clientSecret);
    const token = `tok-${unique()}`;
    rememberCredential(token);
    const tokens = await h.receiver({
      hostname: AUTH_HOST,
      handler: (_req, res) => void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: token, token_type: "Bearer", expires_in: 3600 })),
    });
    // a receiver that knows the client secret too (the same service issues and checks tokens)
    const r = await h.receiver({ handler: echo({ client_secret: clientSecret, form: new URLSearchParams({ client_secret: clientSecret }).toString() }) });
    const ep = await endpointFor(org.api, r.url, {
      authentication: { type: "oauth2_client_credentials", token_url: `https://${AUTH_HOST}:${tokens.port}/oauth/token`, client_id: "audit-review", client_secret: clientSecret },
    });
    await publish(org.api);
    expect((await r.nextRequest()).headers.authorization).toBe(`Bearer ${token}`);
    expectNone(await storedAttempt(ep.id), [token, clientSecret]);
  });

  it("When a secret straddles the 1 KiB the preview keeps, Then its first part is not stored either", async () => {
    const key = `k3y-${unique()}${unique()}`;
    rememberCredential(key);
    const r = await h.receiver({
      handler: (_req, res) => void res.writeHead(500, { "content-type": "text/plain" }).end(`webhook-id ${"x".repeat(1024 - 11 - 6)}${key}`),
    });
    const ep = await endpointFor(org.api, r.url, { authentication: { type: "headers", headers: { "X-Api-Key": key } } });
    await publish(org.api);
    await r.nextRequest();
    const stored = await storedAttempt(ep.id);
    expect(stored.row.endsWith("[REDACTED]")).toBe(true);
    expect(stored.row).not.toContain(key.slice(0, 6));
  });
});
