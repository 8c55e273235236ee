import type { CreateWebhookEndpointRequest } from "@audit-review/api-types/internal";
import { describe, expect, it } from "vitest";
import { createBody, createEndpoint, ingestQuestionSet, PUBLIC_HOST, problemOf, rawProblem, rememberAuthentication, uniq, unknownId, useApiServer } from "../harness/factories.js";

const server = await useApiServer();

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const url = () => `https://${PUBLIC_HOST}/hooks/${uniq()}`;

/** A create that must fail; the body is typed loosely on purpose (invalid bodies are the point). */
async function refused(body: unknown) {
  const { api } = await server.newOrg();
  rememberAuthentication(body as Partial<CreateWebhookEndpointRequest>);
  const result = await api.POST("/v2/webhook_endpoints", { body: body as CreateWebhookEndpointRequest });
  const listed = await api.GET("/v2/webhook_endpoints", { params: { query: { include_total: "true" } } });
  expect(listed.data!.total_count, "a refused create stores nothing").toBe(0);
  return result;
}

describe("POST /v2/webhook_endpoints", () => {
  it("when only a url is given, then 201 with every default, Location and the secret", async () => {
    const { api, orgId } = await server.newOrg();
    const target = url();

    const { data, response } = await api.POST("/v2/webhook_endpoints", { body: createBody({ url: target }) });

    expect(response.status).toBe(201);
    expect(response.headers.get("location")).toBe(`/v2/webhook_endpoints/${data!.id}`);
    expect(data).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      object: "webhook_endpoint",
      org_id: orgId,
      url: target,
      description: null,
      status: "enabled",
      disabled_reason: null,
      disabled_at: null,
      event_types: ["audit.completed"],
      filters: { question_set_ids: [], audit_results: "all" },
      payload: {
        format: "standard_v1",
        fields: ["data.documentId", "data.result", "responses", "responses.query", "responses.answer", "responses.context"],
        result_format: "normalized",
        responses_filter: "all",
        include_informational_questions: false,
      },
      authentication: { type: "none" },
      signing: { secret_hint: expect.any(String), legacy_signature: false, previous_secret_expires_at: null },
      rate_limit: null,
      delivery_order: "unordered",
      kind: "audit",
      failing_since: null,
      created_at: expect.stringMatching(ISO_MS),
      updated_at: expect.stringMatching(ISO_MS),
      secret: expect.any(String),
    });
  });

  it("when an endpoint is created, then its secret is whsec_ plus base64 of 32 bytes and the hint shows its last 4 characters", async () => {
    const { api } = await server.newOrg();

    const a = await createEndpoint(api);
    const b = await createEndpoint(api);

    for (const e of [a, b]) {
      expect(e.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(e.secret.slice("whsec_".length), "base64")).toHaveLength(32);
      expect(e.signing.secret_hint).toBe(`whsec_…${e.secret.slice(-4)}`);
    }
    expect(a.secret).not.toBe(b.secret);
  });

  it("when every setting is given, then each is stored as given", async () => {
    const { api } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const body: CreateWebhookEndpointRequest = {
      url: url(),
      description: "d".repeat(500),
      event_types: ["audit.completed"],
      filters: { question_set_ids: [set.id], audit_results: "failed" },
      payload: { format: "standard_v1", fields: ["data.result", "responses", "responses.answer"], result_format: "raw", responses_filter: "failed", include_informational_questions: true },
      signing: { legacy_signature: true },
    };

    const created = await createEndpoint(api, body);

    expect(created).toMatchObject({
      url: body.url,
      description: body.description,
      event_types: ["audit.completed"],
      filters: body.filters,
      payload: body.payload,
      signing: { legacy_signature: true },
    });
  });

  it.each([
    ["audit_results", { filters: { audit_results: "passed" } }, { filters: { question_set_ids: [], audit_results: "passed" } }],
    ["question_set_ids empty", { filters: { question_set_ids: [] } }, { filters: { question_set_ids: [], audit_results: "all" } }],
    ["a description of null", { description: null }, { description: null }],
    ["only result_format", { payload: { result_format: "raw" } }, { payload: { result_format: "raw", responses_filter: "all", include_informational_questions: false, format: "standard_v1" } }],
    ["only fields", { payload: { fields: ["data.documentId"] } }, { payload: { fields: ["data.documentId"], result_format: "normalized" } }],
    ["an empty payload", { payload: {} }, { payload: { fields: ["data.documentId", "data.result", "responses", "responses.query", "responses.answer", "responses.context"] } }],
    ["an empty signing", { signing: {} }, { signing: { legacy_signature: false } }],
  ] as const)("when %s is given, then the other settings keep their defaults", async (_label, overrides, expected) => {
    const { api } = await server.newOrg();
    const created = await createEndpoint(api, overrides as Partial<CreateWebhookEndpointRequest>);
    expect(created).toMatchObject(expected);
  });

  it("when a rate_limit is given, then it is stored and shown; outside 1..1000 or not an integer, then 400 naming it", async () => {
    const { api } = await server.newOrg();
    const { data, response } = await api.POST("/v2/webhook_endpoints", { body: createBody({ url: url(), rate_limit: 1000 }) });
    expect(response.status).toBe(201);
    expect(data!.rate_limit).toBe(1000);
    const read = await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: data!.id } } });
    expect(read.data!.rate_limit).toBe(1000);
    for (const rate_limit of [0, 1001, 2.5]) {
      problemOf(await api.POST("/v2/webhook_endpoints", { body: createBody({ url: url(), rate_limit }) }), {
        status: 400,
        code: "VALIDATION_ERROR",
        name: "rate_limit",
      });
    }
  });

  it("when delivery_order ordered is given, then it is stored and shown; an unknown order is 400 naming it", async () => {
    const { api } = await server.newOrg();
    const { data, response } = await api.POST("/v2/webhook_endpoints", { body: createBody({ url: url(), delivery_order: "ordered" }) });
    expect(response.status).toBe(201);
    expect(data!.delivery_order).toBe("ordered");
    const refused = await api.POST("/v2/webhook_endpoints", { body: createBody({ url: url(), delivery_order: "fifo" as "ordered" }) });
    problemOf(refused, { status: 400, code: "VALIDATION_ERROR", name: "delivery_order" });
  });

  it("when a url of exactly 2048 characters is given, then it is accepted", async () => {
    const { api } = await server.newOrg();
    const base = `https://${PUBLIC_HOST}/`;
    const long = base + "a".repeat(2048 - base.length);

    const created = await createEndpoint(api, { url: long });

    expect(created.url).toBe(long);
  });

  it("when the host has only public IPv6 addresses, then it is accepted", async () => {
    const { api } = await server.newOrg();
    expect((await createEndpoint(api, { url: "https://v6.acme-receiver.com/x" })).url).toBe("https://v6.acme-receiver.com/x");
  });

  describe("receiver authentication", () => {
    it("when headers are given, then reads show their names, never their values", async () => {
      const { api } = await server.newOrg();
      const created = await createEndpoint(api, { authentication: { type: "headers", headers: { "X-Api-Key": "hdr-value-91f3", "X-Tenant": "hdr-value-22aa" } } });

      expect(created.authentication).toEqual({ type: "headers", header_names: ["X-Api-Key", "X-Tenant"] });
      const listed = await api.GET("/v2/webhook_endpoints");
      expect(listed.data!.data[0]!.authentication).toEqual({ type: "headers", header_names: ["X-Api-Key", "X-Tenant"] });
      expect(JSON.stringify([created, listed.data])).not.toMatch(/hdr-value/);
    });

    it("when basic credentials are given, then reads show the username, never the password", async () => {
      const { api } = await server.newOrg();
      const created = await createEndpoint(api, { authentication: { type: "basic", username: "audit-review", password: "basic-pw-7c1e" } });

      expect(created.authentication).toEqual({ type: "basic", username: "audit-review" });
      const listed = await api.GET("/v2/webhook_endpoints");
      expect(listed.data!.data[0]!.authentication).toEqual({ type: "basic", username: "audit-review" });
      expect(JSON.stringify([created, listed.data])).not.toContain("basic-pw-7c1e");
    });

    it("when OAuth2 client credentials are given, then reads show token_url, client_id, scope and audience, never the client secret", async () => {
      const { api } = await server.newOrg();
      const full = await createEndpoint(api, {
        authentication: {
          type: "oauth2_client_credentials",
          token_url: "https://auth.acme-receiver.com/oauth/token",
          client_id: "audit-review",
          client_secret: "client-secret-5d0b",
          scope: "webhooks.write",
          audience: "https://hooks.acme-receiver.com",
        },
      });
      const minimal = await createEndpoint(api, {
        authentication: { type: "oauth2_client_credentials", token_url: "https://auth.acme-receiver.com/t", client_id: "c2", client_secret: "client-secret-88aa" },
      });

      expect(full.authentication).toEqual({
        type: "oauth2_client_credentials",
        token_url: "https://auth.acme-receiver.com/oauth/token",
        client_id: "audit-review",
        scope: "webhooks.write",
        audience: "https://hooks.acme-receiver.com",
      });
      expect(minimal.authentication).toEqual({ type: "oauth2_client_credentials", token_url: "https://auth.acme-receiver.com/t", client_id: "c2", scope: null, audience: null });
      const listed = await api.GET("/v2/webhook_endpoints");
      expect(listed.data!.data.map((e) => e.authentication)).toEqual([minimal.authentication, full.authentication]);
      expect(JSON.stringify([full, minimal, listed.data])).not.toMatch(/client-secret-/);
    });

    it("when type none is given explicitly, then it is stored like the default", async () => {
      const { api } = await server.newOrg();
      expect((await createEndpoint(api, { authentication: { type: "none" } })).authentication).toEqual({ type: "none" });
    });

    it.each([
      ["Host"],
      ["content-type"],
      ["Content-Length"],
      ["Transfer-Encoding"],
      ["connection"],
      ["User-Agent"],
      ["webhook-id"],
      ["Webhook-Signature"],
      ["webhook-anything"],
    ])("when the reserved header %s is given, then 400 names authentication.headers", async (name) => {
      problemOf(await refused({ url: url(), authentication: { type: "headers", headers: { [name]: "v" } } }), {
        status: 400,
        code: "VALIDATION_ERROR",
        name: "authentication.headers",
      });
    });

    it.each([["X Api Key"], ["X-Api-Key:"], ["(x)"], ["X-Ä"], [""]])("when the invalid header name %j is given, then 400 names authentication.headers", async (name) => {
      const result = await refused({ url: url(), authentication: { type: "headers", headers: { [name]: "v" } } });
      problemOf(result, { status: 400, code: "VALIDATION_ERROR" });
      expect(JSON.stringify(result.error)).toContain("authentication.headers");
    });

    it("when two header names differ only in case, then 400 names authentication.headers", async () => {
      problemOf(await refused({ url: url(), authentication: { type: "headers", headers: { "X-Api-Key": "a", "x-api-key": "b" } } }), {
        status: 400,
        code: "VALIDATION_ERROR",
        name: "authentication.headers",
      });
    });

    it("when a header value holds a line break, then 400 names authentication.headers", async () => {
      problemOf(await refused({ url: url(), authentication: { type: "headers", headers: { "X-Api-Key": "a\r\nX-Injected: 1" } } }), {
        status: 400,
        code: "VALIDATION_ERROR",
        name: "authentication.headers",
      });
    });

    it.each([
      ["no headers", "authentication.headers", { type: "headers", headers: {} }],
      ["11 headers", "authentication.headers", { type: "headers", headers: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, "v"])) }],
      ["headers without a map", "authentication.headers", { type: "headers" }],
      ["basic without password", "authentication.password", { type: "basic", username: "u" }],
      ["basic with a colon in the username", "authentication.username", { type: "basic", username: "a:b", password: "p" }],
      ["oauth2 without client_secret", "authentication.client_secret", { type: "oauth2_client_credentials", token_url: "https://auth.acme-receiver.com/t", client_id: "c" }],
      ["oauth2 without token_url", "authentication.token_url", { type: "oauth2_client_credentials", client_id: "c", client_secret: "s" }],
      ["none with extra fields", "authentication", { type: "none", username: "u" }],
      ["an unknown type", "authentication", { type: "digest" }],
      ["no type", "authentication", { username: "u", password: "p" }],
    ])("when %s is given, then 400 names %s", async (_label, name, authentication) => {
      const result = await refused({ url: url(), authentication });
      const problem = problemOf(result, { status: 400, code: "VALIDATION_ERROR" });
      expect(problem.errors!.map((e) => e.name).some((n) => n.startsWith(name)), JSON.stringify(problem)).toBe(true);
    });

    it.each([
      ["http://auth.acme-receiver.com/t"],
      ["https://10.0.0.1/t"],
      ["https://localhost/t"],
      ["https://metadata.evil-receiver.com/t"],
    ])("when the OAuth2 token_url is %s, then 400 INVALID_WEBHOOK_URL names authentication.token_url", async (tokenUrl) => {
      problemOf(await refused({ url: url(), authentication: { type: "oauth2_client_credentials", token_url: tokenUrl, client_id: "c", client_secret: "oauth-secret-x1" } }), {
        status: 400,
        code: "INVALID_WEBHOOK_URL",
        name: "authentication.token_url",
      });
    });
  });

  describe("question set filter", () => {
    it("when question_set_ids name sets of the org, including a deleted one, then they are stored", async () => {
      const { api } = await server.newOrg();
      const a = await ingestQuestionSet(api);
      const b = await ingestQuestionSet(api);
      const created = await createEndpoint(api, { filters: { question_set_ids: [b.id, a.id] } });
      expect(created.filters.question_set_ids).toEqual([b.id, a.id]);
    });

    it("when question_set_ids holds an unknown or a foreign set, then 400 names filters.question_set_ids", async () => {
      const { api } = await server.newOrg();
      const other = await server.newOrg();
      const mine = await ingestQuestionSet(api);
      const foreign = await ingestQuestionSet(other.api);

      for (const id of [unknownId(), foreign.id]) {
        const result = await api.POST("/v2/webhook_endpoints", { body: createBody({ url: url(), filters: { question_set_ids: [mine.id, id] } }) });
        problemOf(result, { status: 400, code: "VALIDATION_ERROR", name: "filters.question_set_ids" });
      }
      expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
    });

    it("when question_set_ids repeats an id or is not uuids, then 400 names filters.question_set_ids", async () => {
      const { api } = await server.newOrg();
      const set = await ingestQuestionSet(api);
      const dup = await refused({ url: url(), filters: { question_set_ids: [set.id, set.id] } });
      const bad = await refused({ url: url(), filters: { question_set_ids: ["nope"] } });
      problemOf(dup, { status: 400, code: "VALIDATION_ERROR", name: "filters.question_set_ids" });
      const problem = problemOf(bad, { status: 400, code: "VALIDATION_ERROR" });
      expect(problem.errors![0]!.name).toMatch(/^filters\.question_set_ids/);
    });
  });

  it.each([
    ["no url", { url: undefined }, "url"],
    ["an empty url", { url: "" }, "url"],
    ["a url of 2049 characters", { url: `https://${PUBLIC_HOST}/${"a".repeat(2049 - `https://${PUBLIC_HOST}/`.length)}` }, "url"],
    ["a description of 501 characters", { description: "d".repeat(501) }, "description"],
    ["a numeric description", { description: 5 }, "description"],
    ["an unknown event type", { event_types: ["audit.started"] }, "event_types.0"],
    ["no event types", { event_types: [] }, "event_types"],
    ["a repeated event type", { event_types: ["audit.completed", "audit.completed"] }, "event_types"],
    ["an unknown audit_results", { filters: { audit_results: "some" } }, "filters.audit_results"],
    ["an unknown filter", { filters: { result: "all" } }, "filters.result"],
    ["an unknown payload field", { payload: { fields: ["data.secret"] } }, "payload.fields.0"],
    ["a repeated payload field", { payload: { fields: ["data.result", "data.result"] } }, "payload.fields"],
    ["responses.* without responses", { payload: { fields: ["responses.answer"] } }, "payload.fields"],
    ["an unknown payload format", { payload: { format: "standard_v2" } }, "payload.format"],
    ["an unknown result_format", { payload: { result_format: "verbose" } }, "payload.result_format"],
    ["an unknown responses_filter", { payload: { responses_filter: "passed" } }, "payload.responses_filter"],
    ["a string legacy_signature", { signing: { legacy_signature: "yes" } }, "signing.legacy_signature"],
    ["an unknown signing field", { signing: { secret: "whsec_mine" } }, "signing.secret"],
    ["an unknown top-level field", { status: "disabled" }, "status"],
    ["a caller-chosen secret", { secret: "whsec_abc" }, "secret"],
  ])("when the body has %s, then 400 VALIDATION_ERROR names %s", async (_label, overrides, name) => {
    problemOf(await refused({ url: url(), ...overrides }), { status: 400, code: "VALIDATION_ERROR", name, location: "body" });
  });

  it("when the query string has a parameter, then 400 names it and nothing is created", async () => {
    const { token, api } = await server.newOrg();
    const res = await server.raw("/v2/webhook_endpoints?dry_run=true", { token, method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ url: url() }) });
    await rawProblem(res, { status: 400, code: "VALIDATION_ERROR", name: "dry_run", location: "query" });
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
  });

  describe("INVALID_WEBHOOK_URL", () => {
    it.each([
      // not https
      ["http://hooks.acme-receiver.com/x"],
      ["HTTP://hooks.acme-receiver.com/x"],
      ["ftp://hooks.acme-receiver.com/x"],
      ["wss://hooks.acme-receiver.com/x"],
      ["//hooks.acme-receiver.com/x"],
      ["hooks.acme-receiver.com/x"],
      ["https:hooks.acme-receiver.com/x"],
      // userinfo and fragments
      ["https://user:pass@hooks.acme-receiver.com/x"],
      ["https://user@hooks.acme-receiver.com/x"],
      ["https://:pw@hooks.acme-receiver.com/x"],
      ["https://hooks.acme-receiver.com/x#frag"],
      // IP literals in every spelling
      ["https://127.0.0.1/x"],
      ["https://93.184.216.34/x"],
      ["https://2130706433/x"],
      ["https://0x7f000001/x"],
      ["https://0x7f.1/x"],
      ["https://0177.0.0.1/x"],
      ["https://017700000001/x"],
      ["https://127.1/x"],
      ["https://169.254.169.254/latest/meta-data"],
      ["https://[::1]/x"],
      ["https://[2606:4700:4700::1111]/x"],
      ["https://[::ffff:127.0.0.1]/x"],
      ["https://[::ffff:7f00:1]/x"],
      ["https://[0:0:0:0:0:ffff:a9fe:a9fe]/x"],
      ["https://[fe80::1%25eth0]/x"],
      ["https://127.0.0.1.:443/x"],
      ["https://%31%32%37.0.0.1/x"],
      // single-label, local and reserved names
      ["https://intranet/x"],
      ["https://hooks/x"],
      ["https://localhost/x"],
      ["https://LOCALHOST:8443/x"],
      ["https://api.localhost/x"],
      ["https://printer.local/x"],
      ["https://svc.internal/x"],
      ["https://router.home.arpa/x"],
      ["https://hooks.test/x"],
      ["https://hooks.invalid/x"],
      ["https://hooks.example/x"],
      ["https://nas.lan/x"],
      ["https://erp.corp/x"],
      ["https://wiki.intranet/x"],
      // names resolving to non-public addresses, or not at all
      ["https://rfc1918.evil-receiver.com/x"],
      ["https://metadata.evil-receiver.com/x"],
      ["https://loopback6.evil-receiver.com/x"],
      ["https://ula.evil-receiver.com/x"],
      ["https://cgnat.evil-receiver.com/x"],
      ["https://loopback.evil-receiver.com/x"],
      ["https://mixed.evil-receiver.com/x"],
      ["https://mapped.evil-receiver.com/x"],
      ["https://nat64.evil-receiver.com/x"],
      ["https://sixtofour.evil-receiver.com/x"],
      ["https://linklocal6.evil-receiver.com/x"],
      ["https://docs.evil-receiver.com/x"],
      ["https://bench.evil-receiver.com/x"],
      ["https://multicast.evil-receiver.com/x"],
      ["https://unspecified.evil-receiver.com/x"],
      ["https://does-not-resolve.acme-receiver.com/x"],
      // odd syntax
      ["https:// hooks.acme-receiver.com/x"],
      ["https://hooks.acme-receiver.com\\@evil.com/x"],
    ])("when the url is %s, then 400 INVALID_WEBHOOK_URL names url", async (target) => {
      const problem = problemOf(await refused({ url: target }), { status: 400, code: "INVALID_WEBHOOK_URL", name: "url", location: "body" });
      if (target.includes("pass@")) expect(JSON.stringify(problem)).not.toContain("pass");
    });
  });
});
