import { createHash } from "node:crypto";
import type { CreateWebhookEndpointRequest } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { createEndpoint, expectNoCredentialsLogged, ingestQuestionSet, PUBLIC_HOST, publishEvent, remember, uniq, useApiServer } from "../harness/factories.js";
import type { Api } from "../harness/server.js";

const server = await useApiServer();

/** Credentials unique to this test, so a match can only come from this test's requests. */
const creds = () => ({ password: `pw-${uniq()}-${uniq()}`, header: `hv-${uniq()}-${uniq()}`, client: `cs-${uniq()}-${uniq()}` });

/** Every read the API offers, as text. */
async function everyRead(api: Api, endpointId: string): Promise<string> {
  const path = { params: { path: { endpoint_id: endpointId } } };
  const reads = [
    await api.GET("/v2/webhook_endpoints", { params: { query: { limit: 100 } } }),
    await api.GET("/v2/webhook_endpoints", { params: { query: { limit: 100, status: "disabled" } } }),
    await api.GET("/v2/webhook_deliveries", { params: { query: { limit: 100 } } }),
    await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...path, body: { status: "disabled" } }),
    await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...path, body: { status: "enabled" } }),
    await api.POST("/v2/webhook_endpoints/{endpoint_id}/test", path),
  ];
  for (const r of reads) expect(r.response.status, JSON.stringify(r.error)).toBeLessThan(300);
  return JSON.stringify(reads.map((r) => r.data));
}

/** The ways a value could be written down: as is, base64'd, hex'd. */
const spellings = (value: string) => [value, Buffer.from(value).toString("base64"), Buffer.from(value).toString("hex")];

describe("secrets", () => {
  it("when an endpoint is created, then its signing secret appears in the creation response only", async () => {
    const { api } = await server.newOrg();
    const created = await createEndpoint(api);
    await publishEvent(api);
    const key = created.secret.slice("whsec_".length);

    const text = await everyRead(api, created.id);

    expect(created.secret).toMatch(/^whsec_/);
    expect(text).not.toContain(created.secret);
    expect(text).not.toContain(key);
    expect(text).not.toContain('"secret"');
    expect(text).toContain(created.signing.secret_hint);
  });

  it("when a secret is rotated, then only the rotation response shows the new one and reads show its hint", async () => {
    const { api } = await server.newOrg();
    const created = await createEndpoint(api);

    const rotated = await api.POST("/v2/webhook_endpoints/{endpoint_id}/rotate_secret", { params: { path: { endpoint_id: created.id } } });
    remember(rotated.data?.secret);

    expect(rotated.data!.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.data!.secret).not.toBe(created.secret);
    expect(rotated.data!.signing).toMatchObject({ secret_hint: `whsec_…${rotated.data!.secret.slice(-4)}`, previous_secret_expires_at: expect.any(String) });
    const text = await everyRead(api, created.id);
    expect(text).not.toContain(rotated.data!.secret);
    expect(text).not.toContain(created.secret);
  });

  it.each<[string, (c: ReturnType<typeof creds>) => CreateWebhookEndpointRequest["authentication"]]>([
    ["headers", (c) => ({ type: "headers", headers: { "X-Api-Key": c.header } })],
    ["basic", (c) => ({ type: "basic", username: "audit-review", password: c.password })],
    ["oauth2_client_credentials", (c) => ({ type: "oauth2_client_credentials", token_url: "https://auth.acme-receiver.com/token", client_id: "cid", client_secret: c.client })],
  ])("when %s receiver credentials are stored, then no response and no column shows them in clear", async (_type, auth) => {
    const { api } = await server.newOrg();
    const c = creds();
    const created = await createEndpoint(api, { authentication: auth(c) });
    const secretValues = [c.password, c.header, c.client, created.secret, created.secret.slice("whsec_".length)];

    const text = JSON.stringify(created) + (await everyRead(api, created.id));
    const [row] = await server.server.db.query<{ row: string }>("SELECT row_to_json(w)::text AS row FROM webhook_endpoints w WHERE id = $1", [created.id]);

    for (const value of [c.password, c.header, c.client]) expect(text).not.toContain(value);
    expect(row!.row).toContain(created.id);
    for (const value of secretValues) for (const spelling of spellings(value)) expect(row!.row).not.toContain(spelling);
  });

  it("when requests carry tokens, secrets and credentials, including failing ones, then no log line holds any of them", async () => {
    const { api, token, orgId } = await server.newOrg();
    const c = creds();
    remember(c.password, c.header, c.client);
    const created = await createEndpoint(api, { authentication: { type: "basic", username: "u", password: c.password } });
    const set = await ingestQuestionSet(api);
    await publishEvent(api, { data: { question_set_id: set.id } });
    const revoked = await server.token(orgId, ["webhooks:read"]);
    const row = await server.server.db.prisma.apiToken.findUniqueOrThrow({ where: { token_hash: createHash("sha256").update(revoked).digest("hex") } });
    await server.server.services.tokens.revoke(row.id);
    const json = { "content-type": "application/json" };
    const bad = `ars_${"A".repeat(43)}`;
    remember(bad);

    const attempts = [
      server.raw("/v2/webhook_endpoints", { token: revoked }),
      server.raw("/v2/webhook_endpoints", { headers: { authorization: `Bearer ${bad}` } }),
      server.raw("/v2/webhook_endpoints", { headers: { authorization: `Basic ${Buffer.from(`u:${c.password}`).toString("base64")}` } }),
      server.raw(`/v2/webhook_endpoints?token=${token}`, { token }),
      server.raw(`/v2/webhook_deliveries?starting_after=${created.id}&secret=${created.secret}`, { token }),
      server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: `{"url": "https://${PUBLIC_HOST}/x", "authentication": {"type": "basic", "password": "${c.password}"` }),
      server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: JSON.stringify({ url: "https://127.0.0.1/x", authentication: { type: "basic", username: "u", password: c.password } }) }),
      server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: JSON.stringify({ url: `https://u:${c.password}@${PUBLIC_HOST}/x` }) }),
      server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: JSON.stringify({ url: `https://${PUBLIC_HOST}/x`, authentication: { type: "headers", headers: { Host: c.header } } }) }),
      server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: JSON.stringify({ url: `https://${PUBLIC_HOST}/x`, authentication: { type: "oauth2_client_credentials", token_url: "http://auth.acme-receiver.com/t", client_id: "x", client_secret: c.client } }) }),
      server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: json, body: JSON.stringify({ url: `https://${PUBLIC_HOST}/x`, secret: created.secret }) }),
      server.raw("/v2/internal/question_sets", { token, method: "POST", headers: { "content-type": "text/plain" }, body: c.password }),
    ];
    const responses = await Promise.all(attempts);

    expect(responses.map((r) => r.status)).toEqual([401, 401, 401, 400, 400, 400, 400, 400, 400, 400, 400, 415]);
    const bodies = await Promise.all(responses.map((r) => r.text()));
    for (const body of bodies) for (const value of [token, revoked, bad, c.password, c.header, c.client, created.secret]) expect(body).not.toContain(value);
    expectNoCredentialsLogged(server);
  });
});
