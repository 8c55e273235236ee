// The webhook portal's sessions, end to end against the real server: minting links, opening them
// once, the cookie's flags, expiry and revocation, the Origin check, the CSP, read-only sessions
// and org isolation. Every test runs on PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
import { describe, expect, it } from "vitest";
import { createEndpoint, problemOf, publishEvent, rawProblem, unknownId, useApiServer } from "../harness/factories.js";
import { expectNoInlineCode, linkHash, mintLink, openLink, portalCall, startSession, tokenId } from "./support.js";

const server = await useApiServer();
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const WRITE_SCOPES = ["webhooks:read", "webhooks:write", "events:read", "question_sets:read"];

const metric = async (name: string, labels: Record<string, string> = {}) => {
  const m = (await server.server.deps.metrics!.registry.getMetricsAsJSON()).find((x) => x.name === name);
  const value = m?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return Number(value?.value ?? NaN);
};
const logsSaying = (msg: string) => server.logs.filter((l) => l.includes(`"msg":"${msg}"`));

describe("POST /v2/portal_sessions", () => {
  it("When a token with webhooks:write mints a link, Then 201 with a single-use URL of its org's portal, expiring in 5 minutes by default", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const before = Date.now();
    const link = await mintLink(server, token);
    expect(link).toMatchObject({ object: "portal_session", read_only: false, session_duration: 3600 });
    expect(link.url).toMatch(new RegExp(`^${server.url}/portal/${orgId}/start\\?link=pl_[A-Za-z0-9_-]{43}$`));
    const expires = new Date(link.expires_at).getTime();
    expect(expires).toBeGreaterThan(before + 290_000);
    expect(expires).toBeLessThan(Date.now() + 310_000);
    const short = await mintLink(server, token, { expires_in: 60, read_only: true });
    expect(short.read_only).toBe(true);
    expect(new Date(short.expires_at).getTime()).toBeLessThan(Date.now() + 61_000);
  });

  it("When the body is wrong, Then 400 naming every offending field; without webhooks:write, 403", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const res = await server.raw("/v2/portal_sessions", { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ read_only: "yes", expires_in: 901, scope: "all" }) });
    const problem = await rawProblem(res, { status: 400, code: "VALIDATION_ERROR" });
    expect(problem.errors!.map((i) => i.name).sort()).toEqual(["expires_in", "read_only", "scope"]);
    await rawProblem(await server.raw("/v2/portal_sessions", { method: "POST", token, headers: { "content-type": "application/json" }, body: JSON.stringify({ expires_in: 0 }) }), { status: 400, code: "VALIDATION_ERROR", name: "expires_in" });
    const reader = await server.token(orgId, ["webhooks:read", "events:read"]);
    problemOf(await server.client(reader).POST("/v2/portal_sessions", { body: {} }), { status: 403, code: "INSUFFICIENT_SCOPE" });
  });

  it("When a request repeats its Idempotency-Key, Then the same link is answered, not a second one", async () => {
    const { api } = await server.newOrg(WRITE_SCOPES);
    const first = await api.POST("/v2/portal_sessions", { params: { header: { "Idempotency-Key": "portal-1" } }, body: { read_only: true } });
    const again = await api.POST("/v2/portal_sessions", { params: { header: { "Idempotency-Key": "portal-1" } }, body: { read_only: true } });
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    expect(again.data!.url).toBe(first.data!.url);
  });
});

describe("opening a link", () => {
  it("When a link is opened, Then a session starts: an HttpOnly, SameSite=Strict cookie for the org's portal paths, and a page that moves on without script", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const started = await metric("ars_portal_sessions_started_total", { access: "read_write" });
    const link = await mintLink(server, token);
    const opened = await openLink(link.url);
    expect(opened.response.status).toBe(200);
    const attributes = opened.setCookie!.split(";").map((a) => a.trim());
    expect(attributes[0]).toMatch(/^ars_portal=ps_[A-Za-z0-9_-]{43}$/);
    expect(attributes.slice(1).sort()).toEqual(["HttpOnly", "Max-Age=3600", `Path=/portal/${orgId}`, "SameSite=Strict"].sort());
    expect(opened.response.headers.get("content-security-policy")).toBe(CSP);
    expect(opened.response.headers.get("referrer-policy")).toBe("same-origin");
    expect(opened.html).toContain(`<meta http-equiv="refresh" content="0; url=/portal/${orgId}/">`);
    expectNoInlineCode(opened.html);
    expect(await metric("ars_portal_sessions_started_total", { access: "read_write" })).toBe(started + 1);
    expect(logsSaying("portal session started").some((l) => l.includes(orgId))).toBe(true);
  });

  it("When a link is opened twice, Then the second time is refused with a plain page (410), and no second session starts", async () => {
    const { token } = await server.newOrg(WRITE_SCOPES);
    const link = await mintLink(server, token);
    await openLink(link.url);
    const again = await openLink(link.url);
    expect(again.response.status).toBe(410);
    expect(again.setCookie).toBeNull();
    expect(again.response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(again.html).toContain("This link has already been used");
    expectNoInlineCode(again.html);
  });

  it("When two browsers open one link at once, Then exactly one session starts", async () => {
    const { token } = await server.newOrg(WRITE_SCOPES);
    const link = await mintLink(server, token);
    const opens = await Promise.all(Array.from({ length: 5 }, () => openLink(link.url)));
    expect(opens.map((o) => o.response.status).sort()).toEqual([200, 410, 410, 410, 410]);
  });

  it("When a link has expired, is unknown, malformed, or opened under another org's path, Then a plain page says so and sets no cookie", async () => {
    const { token } = await server.newOrg(WRITE_SCOPES);
    const other = await server.newOrg(WRITE_SCOPES);
    const expired = await mintLink(server, token);
    await server.server.db.query("UPDATE portal_sessions SET expires_at = now() - interval '1 second' WHERE link_hash = $1", [linkHash(expired.url)]);
    const refused = await metric("ars_portal_links_refused_total", { reason: "expired" });
    const e = await openLink(expired.url);
    expect([e.response.status, e.setCookie]).toEqual([410, null]);
    expect(e.html).toContain("This link has expired");
    expect(await metric("ars_portal_links_refused_total", { reason: "expired" })).toBe(refused + 1);

    const valid = await mintLink(server, token);
    const foreign = await openLink(valid.url.replace(/\/portal\/[^/]+\//, `/portal/${other.orgId}/`));
    expect([foreign.response.status, foreign.setCookie]).toEqual([404, null]);
    expect(foreign.html).toContain("This link is not valid");
    // the link was not spent by the foreign attempt
    expect((await openLink(valid.url)).response.status).toBe(200);

    for (const bad of ["pl_" + "A".repeat(43), "nonsense", "", "pl_%00"]) {
      const page = await openLink(`${server.url}/portal/${other.orgId}/start?link=${bad}`);
      expect([page.response.status, page.setCookie], bad).toEqual([404, null]);
      expectNoInlineCode(page.html);
    }
  });

  it("When the token that minted a link is revoked before it is opened, Then the link is refused", async () => {
    const { orgId } = await server.newOrg(WRITE_SCOPES);
    const minter = await server.token(orgId, WRITE_SCOPES);
    const link = await mintLink(server, minter);
    await server.server.services.tokens.revoke(await tokenId(server, minter));
    const page = await openLink(link.url);
    expect([page.response.status, page.setCookie]).toEqual([410, null]);
    expect(page.html).toContain("This link is no longer valid");
  });
});

describe("the portal's page", () => {
  it("When a session opens its page (any of its paths), Then the page with its session's description, under a strict CSP; without a session, a plain 401 page", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const { cookie } = await startSession(server, token, { read_only: true });
    for (const path of ["/", "", "/endpoints/new", "/deliveries/0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5fb0"]) {
      const res = await fetch(`${server.url}/portal/${orgId}${path}`, { headers: { cookie } });
      const html = await res.text();
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-security-policy")).toBe(CSP);
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(html).toContain(`&#34;org_id&#34;:&#34;${orgId}&#34;`);
      expect(html).toContain("&#34;read_only&#34;:true");
      expect(html).not.toContain("ars_");
      expectNoInlineCode(html);
    }
    const none = await fetch(`${server.url}/portal/${orgId}/`);
    expect(none.status).toBe(401);
    expect(await none.text()).toContain("Your portal session has ended");
    const bare = await fetch(`${server.url}/portal`);
    expect(bare.status).toBe(404);
    expectNoInlineCode(await bare.text());
  });

  it("When the page asks for its script and stylesheet, Then they come from this server, compressed, cached for a year", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const { cookie } = await startSession(server, token);
    const html = await (await fetch(`${server.url}/portal/${orgId}/`, { headers: { cookie } })).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/portal\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toHaveLength(2);
    for (const path of assets) {
      const res = await fetch(`${server.url}${path}`, { headers: { "accept-encoding": "br" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-encoding")).toBe("br");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect((await fetch(`${server.url}${path}`, { headers: { "if-none-match": res.headers.get("etag")! } })).status).toBe(304);
    }
    expect((await fetch(`${server.url}/portal/assets/nothing.js`)).status).toBe(404);
  });
});

describe("the portal's API", () => {
  it("When the page calls the API with its cookie, Then the org's webhooks answer; a write needs this server's Origin (403 ORIGIN_NOT_ALLOWED otherwise)", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const { cookie } = await startSession(server, token);
    const list = await portalCall(server, orgId, cookie, "/v2/webhook_endpoints");
    expect(list.status).toBe(200);
    expect(list.headers.get("cache-control")).toBe("no-store");
    const body = { url: "https://hooks.acme-receiver.com/portal" };
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/webhook_endpoints", { method: "POST", body, origin: null }), { status: 403, code: "ORIGIN_NOT_ALLOWED" });
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/webhook_endpoints", { method: "POST", body, origin: "https://evil.example" }), { status: 403, code: "ORIGIN_NOT_ALLOWED" });
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/webhook_endpoints", { method: "POST", body, origin: server.url.replace("127.0.0.1", "localhost") }), { status: 403, code: "ORIGIN_NOT_ALLOWED" });
    expect((await portalCall(server, orgId, cookie, "/v2/webhook_endpoints")).status).toBe(200);
    const created = await portalCall(server, orgId, cookie, "/v2/webhook_endpoints", { method: "POST", body });
    expect(created.status).toBe(201);
    const endpoint = (await created.json()) as { id: string; secret: string };
    expect(endpoint.secret).toMatch(/^whsec_/);
    const patched = await portalCall(server, orgId, cookie, `/v2/webhook_endpoints/${endpoint.id}`, { method: "PATCH", body: { description: "from the portal" } });
    expect(patched.status).toBe(200);
    await rawProblem(await portalCall(server, orgId, cookie, `/v2/webhook_endpoints/${endpoint.id}`, { method: "DELETE", origin: null }), { status: 403, code: "ORIGIN_NOT_ALLOWED" });
    expect((await portalCall(server, orgId, cookie, `/v2/webhook_endpoints/${endpoint.id}`, { method: "DELETE" })).status).toBe(204);
  });

  it("When the API problem names fields, Then the portal gets the same problem, errors[] included", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const { cookie } = await startSession(server, token);
    const res = await portalCall(server, orgId, cookie, "/v2/webhook_endpoints", { method: "POST", body: { url: "http://hooks.acme-receiver.com/x", filters: { audit_results: "sometimes" } } });
    const problem = await rawProblem(res, { status: 400, code: "VALIDATION_ERROR", name: "filters.audit_results" });
    expect(problem.errors!.length).toBeGreaterThanOrEqual(1);
  });

  it("When the cookie or the token is used where the other belongs, Then neither authenticates: no bearer token on the portal's paths, no cookie on /v2", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const { cookie } = await startSession(server, token);
    await rawProblem(await portalCall(server, orgId, undefined, "/v2/webhook_endpoints", { headers: { authorization: `Bearer ${token}` } }), { status: 401, code: "UNAUTHENTICATED" });
    await rawProblem(await fetch(`${server.url}/v2/webhook_endpoints`, { headers: { cookie } }), { status: 401, code: "UNAUTHENTICATED" });
  });

  it("When the page asks for an operation that is not the portal's, Then 404: no coding evaluations, no listeners, no minting links", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES.concat("coding_evaluations:read"));
    const { cookie } = await startSession(server, token);
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/coding_evaluations"), { status: 404, code: "NOT_FOUND" });
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/portal_sessions", { method: "POST", body: {} }), { status: 404, code: "NOT_FOUND" });
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/webhook_listeners", { method: "POST", body: {} }), { status: 404, code: "NOT_FOUND" });
    await rawProblem(await portalCall(server, orgId, cookie, "/healthz"), { status: 404, code: "NOT_FOUND" });
  });

  it("When a session is read-only, Then it reads everything and every write answers 403 INSUFFICIENT_SCOPE, changing nothing", async () => {
    const { orgId, token, api } = await server.newOrg(WRITE_SCOPES);
    const endpoint = await createEndpoint(api);
    const { cookie } = await startSession(server, token, { read_only: true });
    expect((await portalCall(server, orgId, cookie, `/v2/webhook_endpoints/${endpoint.id}`)).status).toBe(200);
    expect((await portalCall(server, orgId, cookie, "/v2/webhook_deliveries")).status).toBe(200);
    expect((await portalCall(server, orgId, cookie, "/v2/events")).status).toBe(200);
    const writes: Array<[string, string, unknown]> = [
      ["POST", "/v2/webhook_endpoints", { url: "https://hooks.acme-receiver.com/ro" }],
      ["PATCH", `/v2/webhook_endpoints/${endpoint.id}`, { status: "disabled" }],
      ["DELETE", `/v2/webhook_endpoints/${endpoint.id}`, undefined],
      ["POST", `/v2/webhook_endpoints/${endpoint.id}/rotate_secret`, {}],
      ["POST", `/v2/webhook_endpoints/${endpoint.id}/test`, undefined],
      ["POST", `/v2/webhook_endpoints/${endpoint.id}/recover`, { since: new Date(Date.now() - 3600_000).toISOString() }],
      ["POST", `/v2/webhook_deliveries/${unknownId()}/retry`, undefined],
    ];
    for (const [method, path, body] of writes) {
      await rawProblem(await portalCall(server, orgId, cookie, path, { method, body }), { status: 403, code: "INSUFFICIENT_SCOPE" });
    }
    const after = await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: endpoint.id } } });
    expect(after.data).toMatchObject({ status: "enabled", updated_at: endpoint.updated_at });
  });

  it("When a session of org A names org B's endpoints, deliveries and events, Then 404 as the API answers, and A's cookie opens nothing of B's portal", async () => {
    const a = await server.newOrg(WRITE_SCOPES.concat("internal:ingest"));
    const b = await server.newOrg(WRITE_SCOPES.concat("internal:ingest"));
    const theirs = await createEndpoint(b.api);
    const { event } = await publishEvent(b.api);
    const [delivery] = (await b.api.GET("/v2/webhook_deliveries", { params: { query: { endpoint_id: theirs.id } } })).data!.data;
    const { cookie } = await startSession(server, a.token);
    for (const [method, path, body] of [
      ["GET", `/v2/webhook_endpoints/${theirs.id}`, undefined],
      ["PATCH", `/v2/webhook_endpoints/${theirs.id}`, { status: "disabled" }],
      ["DELETE", `/v2/webhook_endpoints/${theirs.id}`, undefined],
      ["POST", `/v2/webhook_endpoints/${theirs.id}/rotate_secret`, {}],
      ["GET", `/v2/webhook_deliveries/${delivery!.id}`, undefined],
      ["GET", `/v2/webhook_deliveries/${delivery!.id}/attempts`, undefined],
      ["POST", `/v2/webhook_deliveries/${delivery!.id}/retry`, undefined],
      ["GET", `/v2/events/${event.id}`, undefined],
    ] as const) {
      await rawProblem(await portalCall(server, a.orgId, cookie, path, { method, body }), { status: 404, code: "NOT_FOUND" });
    }
    const list = (await (await portalCall(server, a.orgId, cookie, "/v2/webhook_deliveries")).json()) as { data: unknown[] };
    expect(list.data).toEqual([]);
    await rawProblem(await portalCall(server, b.orgId, cookie, "/v2/webhook_endpoints"), { status: 401, code: "UNAUTHENTICATED" });
    expect((await fetch(`${server.url}/portal/${b.orgId}/`, { headers: { cookie } })).status).toBe(401);
    const still = await b.api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: theirs.id } } });
    expect(still.data!.status).toBe("enabled");
  });
});

describe("the end of a session", () => {
  it("When the token that minted the link is revoked, Then the session ends at its next request, logged once", async () => {
    const { orgId } = await server.newOrg(WRITE_SCOPES);
    const minter = await server.token(orgId, WRITE_SCOPES);
    const { cookie } = await startSession(server, minter);
    expect((await portalCall(server, orgId, cookie, "/v2/webhook_endpoints")).status).toBe(200);
    const ended = await metric("ars_portal_sessions_ended_total", { reason: "revoked" });
    await server.server.services.tokens.revoke(await tokenId(server, minter));
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/webhook_endpoints"), { status: 401, code: "UNAUTHENTICATED" });
    expect((await fetch(`${server.url}/portal/${orgId}/`, { headers: { cookie } })).status).toBe(401);
    const lines = logsSaying("portal session ended").filter((l) => l.includes(orgId));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('"reason":"revoked"');
    expect(await metric("ars_portal_sessions_ended_total", { reason: "revoked" })).toBe(ended + 1);
  });

  it("When a session's hour is over, Then its cookie opens nothing more (the database's clock decides)", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const { cookie } = await startSession(server, token);
    const sessionHash = (await import("node:crypto")).createHash("sha256").update(cookie.split("=")[1]!).digest("hex");
    await server.server.db.query("UPDATE portal_sessions SET expires_at = now() - interval '1 millisecond' WHERE session_hash = $1", [sessionHash]);
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/webhook_endpoints"), { status: 401, code: "UNAUTHENTICATED" });
    const line = logsSaying("portal session ended").find((l) => l.includes(orgId));
    expect(line).toContain('"reason":"expired"');
  });

  it("When the page signs out, Then the session ends and the cookie is cleared; a sign-out from another origin is refused", async () => {
    const { orgId, token } = await server.newOrg(WRITE_SCOPES);
    const { cookie } = await startSession(server, token);
    const forged = await fetch(`${server.url}/portal/${orgId}/sign-out`, { method: "POST", headers: { cookie, origin: "https://evil.example" } });
    expect(forged.status).toBe(403);
    expect((await portalCall(server, orgId, cookie, "/v2/webhook_endpoints")).status).toBe(200);
    const out = await fetch(`${server.url}/portal/${orgId}/sign-out`, { method: "POST", headers: { cookie, origin: server.url } });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(new RegExp(`^ars_portal=; Path=/portal/${orgId}; Max-Age=0; HttpOnly; SameSite=Strict$`));
    expectNoInlineCode(await out.text());
    await rawProblem(await portalCall(server, orgId, cookie, "/v2/webhook_endpoints"), { status: 401, code: "UNAUTHENTICATED" });
    expect(logsSaying("portal session ended").find((l) => l.includes(orgId))).toContain('"reason":"signed_out"');
  });

  it("When sessions start and end, Then the active gauge counts the open ones from the database", async () => {
    const { token } = await server.newOrg(WRITE_SCOPES);
    const before = await metric("ars_portal_sessions_active");
    const { cookie, link } = await startSession(server, token);
    expect(await metric("ars_portal_sessions_active")).toBe(before + 1);
    const orgId = new URL(link.url).pathname.split("/")[2]!;
    await fetch(`${server.url}/portal/${orgId}/sign-out`, { method: "POST", headers: { cookie, origin: server.url } });
    expect(await metric("ars_portal_sessions_active")).toBe(before);
  });
});
