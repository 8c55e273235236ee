import { createHash, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { loadContract } from "../../src/contract/contract.js";
import { SPEC_PATH } from "../../src/lib/paths.js";
import { ALL_SCOPES } from "../../src/services/tokens.service.js";
import { createBody, createEndpoint, documentedStatuses, ingestQuestionSet, PUBLIC_HOST, questionSetBody, rawProblem, useApiServer } from "../harness/factories.js";

const server = await useApiServer();

const INVALID_TOKEN = 'Bearer error="invalid_token"';

interface Operation {
  operationId: string;
  method: string;
  /** `{id}` is replaced by a real or random uuid */
  path: string;
  scope: string;
  body?: () => unknown;
  /** the status when the token holds exactly the scope and the target id is unknown */
  okStatus: number;
}

const OPERATIONS: Operation[] = [
  { operationId: "listQuestionSets", method: "GET", path: "/v2/question_sets", scope: "question_sets:read", okStatus: 200 },
  { operationId: "listCodingEvaluations", method: "GET", path: "/v2/coding_evaluations", scope: "coding_evaluations:read", okStatus: 200 },
  { operationId: "listWebhookEndpoints", method: "GET", path: "/v2/webhook_endpoints", scope: "webhooks:read", okStatus: 200 },
  {
    operationId: "createWebhookEndpoint",
    method: "POST",
    path: "/v2/webhook_endpoints",
    scope: "webhooks:write",
    body: () => ({ url: `https://${PUBLIC_HOST}/auth/${randomUUID()}` }),
    okStatus: 201,
  },
  { operationId: "listWebhookDeliveries", method: "GET", path: "/v2/webhook_deliveries", scope: "webhooks:read", okStatus: 200 },
  { operationId: "ingestQuestionSet", method: "POST", path: "/v2/internal/question_sets", scope: "internal:ingest", body: () => ({ set_name: "S", set_code: "S" }), okStatus: 201 },
  { operationId: "ingestCodingEvaluation", method: "POST", path: "/v2/internal/coding_evaluations", scope: "internal:ingest", body: () => ({}), okStatus: 201 },
  { operationId: "upsertQuestionSet", method: "PUT", path: "/v2/internal/question_sets/{id}", scope: "internal:ingest", body: () => ({ set_name: "S", set_code: "S" }), okStatus: 201 },
  { operationId: "deleteQuestionSet", method: "DELETE", path: "/v2/internal/question_sets/{id}", scope: "internal:ingest", okStatus: 404 },
  { operationId: "upsertCodingEvaluation", method: "PUT", path: "/v2/internal/coding_evaluations/{id}", scope: "internal:ingest", body: () => ({}), okStatus: 201 },
  {
    operationId: "publishEvent",
    method: "POST",
    path: "/v2/internal/events",
    scope: "internal:ingest",
    body: () => ({ id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: randomUUID(), result: "passed" } }),
    okStatus: 400, // the set is unknown: reached the service
  },
  {
    operationId: "publishEvents",
    method: "POST",
    path: "/v2/internal/event_batches",
    scope: "internal:ingest",
    body: () => ({ events: [{ id: randomUUID(), type: "audit.completed", data: { audit_id: randomUUID(), question_set_id: randomUUID(), result: "passed" } }] }),
    okStatus: 400, // the set is unknown: reached the service
  },
  { operationId: "getWebhookEndpoint", method: "GET", path: "/v2/webhook_endpoints/{id}", scope: "webhooks:read", okStatus: 404 },
  { operationId: "updateWebhookEndpoint", method: "PATCH", path: "/v2/webhook_endpoints/{id}", scope: "webhooks:write", body: () => ({ description: "d" }), okStatus: 404 },
  { operationId: "deleteWebhookEndpoint", method: "DELETE", path: "/v2/webhook_endpoints/{id}", scope: "webhooks:write", okStatus: 404 },
  { operationId: "rotateWebhookEndpointSecret", method: "POST", path: "/v2/webhook_endpoints/{id}/rotate_secret", scope: "webhooks:write", okStatus: 404 },
  { operationId: "sendTestWebhookEvent", method: "POST", path: "/v2/webhook_endpoints/{id}/test", scope: "webhooks:write", okStatus: 404 },
  {
    operationId: "recoverWebhookDeliveries",
    method: "POST",
    path: "/v2/webhook_endpoints/{id}/recover",
    scope: "webhooks:write",
    body: () => ({ since: new Date(Date.now() - 60_000).toISOString() }),
    okStatus: 404,
  },
  { operationId: "getWebhookDelivery", method: "GET", path: "/v2/webhook_deliveries/{id}", scope: "webhooks:read", okStatus: 404 },
  { operationId: "listWebhookDeliveryAttempts", method: "GET", path: "/v2/webhook_deliveries/{id}/attempts", scope: "webhooks:read", okStatus: 404 },
  { operationId: "retryWebhookDelivery", method: "POST", path: "/v2/webhook_deliveries/{id}/retry", scope: "webhooks:write", okStatus: 404 },
  { operationId: "listEvents", method: "GET", path: "/v2/events", scope: "events:read", okStatus: 200 },
  { operationId: "createWebhookListener", method: "POST", path: "/v2/webhook_listeners", scope: "webhooks:write", body: () => ({}), okStatus: 201 },
  { operationId: "streamWebhookListener", method: "GET", path: "/v2/webhook_listeners/{id}/stream", scope: "webhooks:write", okStatus: 404 },
  {
    operationId: "answerWebhookListenerRequest",
    method: "POST",
    path: "/v2/webhook_listeners/{id}/answers",
    scope: "webhooks:write",
    body: () => ({ request_id: randomUUID(), status: 200, duration_ms: 1 }),
    okStatus: 404,
  },
  { operationId: "getEvent", method: "GET", path: "/v2/events/{id}", scope: "events:read", okStatus: 404 },
  { operationId: "createPortalSession", method: "POST", path: "/v2/portal_sessions", scope: "webhooks:write", body: () => ({ read_only: true }), okStatus: 201 },
];

function send(op: Operation, headers: Record<string, string>, id = randomUUID()) {
  const body = op.body?.();
  return server.raw(op.path.replace("{id}", id), {
    method: op.method,
    headers: { ...headers, ...(body !== undefined && { "content-type": "application/json" }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

describe("authentication and scopes", () => {
  it("when the contract is read, then every operation is in this file's table with its scope", () => {
    const all = loadContract(SPEC_PATH).operations;
    // security: [] operations (health, docs, spec) are tokenless: test/api/docs.test.ts
    expect(all.filter((o) => o.public).map((o) => o.path).sort()).toEqual(["/docs", "/healthz", "/openapi.json", "/openapi.yaml", "/readyz"]);
    const fromContract = all.filter((o) => !o.public).map((o) => [o.operationId, o.method, o.requiredScopes]);
    const tested = OPERATIONS.map((o) => [o.operationId, o.method, [o.scope]]);
    expect(tested.sort()).toEqual(fromContract.sort());
  });

  describe.each(OPERATIONS)("$method $path", (op) => {
    it("when no Authorization header is sent, then 401 with the invalid_token challenge", async () => {
      const res = await send(op, {});
      expect(documentedStatuses(op.operationId)).toContain(401);
      expect(res.headers.get("www-authenticate")).toBe(INVALID_TOKEN);
      await rawProblem(res, { status: 401, code: "UNAUTHENTICATED" });
    });

    it("when the token is malformed, unknown or revoked, then 401 with the invalid_token challenge", async () => {
      const { orgId, token } = await server.newOrg(ALL_SCOPES);
      const revoked = await server.token(orgId, ALL_SCOPES);
      const row = await server.server.db.prisma.apiToken.findUniqueOrThrow({ where: { token_hash: createHash("sha256").update(revoked).digest("hex") } });
      expect(await server.server.services.tokens.revoke(row.id)).toBe(true);
      const unknown = `ars_${Buffer.alloc(32, 7).toString("base64url")}`;

      for (const authorization of [
        "Bearer",
        "Bearer ",
        `Basic ${Buffer.from(`x:${token}`).toString("base64")}`,
        `Token ${token}`,
        `Bearer ${token}x`,
        `Bearer ${token.slice(0, -1)}`,
        `Bearer ${token} ${token}`,
        "Bearer ars_short",
        `Bearer ${unknown}`,
        `Bearer ${revoked}`,
      ]) {
        const res = await send(op, { authorization });
        expect(res.headers.get("www-authenticate"), authorization).toBe(INVALID_TOKEN);
        await rawProblem(res, { status: 401, code: "UNAUTHENTICATED" });
      }
    });

    it("when the token lacks the operation's scope, then 403 naming the scope in the challenge", async () => {
      const { token } = await server.newOrg(ALL_SCOPES.filter((s) => s !== op.scope));
      const res = await send(op, { authorization: `Bearer ${token}` });
      expect(documentedStatuses(op.operationId)).toContain(403);
      expect(res.headers.get("www-authenticate")).toBe(`Bearer error="insufficient_scope", scope="${op.scope}"`);
      const problem = await rawProblem(res, { status: 403, code: "INSUFFICIENT_SCOPE" });
      expect(problem.detail).toContain(op.scope);
    });

    it("when the token holds only the operation's scope, then the operation runs", async () => {
      const { token } = await server.newOrg([op.scope]);
      const res = await send(op, { authorization: `Bearer ${token}` });
      expect(res.status, await res.clone().text()).toBe(op.okStatus);
      expect(documentedStatuses(op.operationId)).toContain(op.okStatus);
      expect(res.headers.get("www-authenticate")).toBeNull();
    });
  });

  it("when the scheme is written in another case or followed by several spaces, then the token is accepted (RFC 7235)", async () => {
    const { token } = await server.newOrg(["question_sets:read"]);
    for (const authorization of [`bearer ${token}`, `BEARER ${token}`, `Bearer  ${token}`]) {
      const res = await server.raw("/v2/question_sets", { headers: { authorization } });
      expect(res.status, authorization).toBe(200);
    }
  });

  it("when a request is both unauthenticated and invalid, then 401 comes first", async () => {
    const res = await server.raw("/v2/question_sets?limit=0&bogus=1&starting_after=nope");
    await rawProblem(res, { status: 401, code: "UNAUTHENTICATED" });
    const post = await server.raw("/v2/webhook_endpoints", { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
    await rawProblem(post, { status: 401, code: "UNAUTHENTICATED" });
  });

  it("when a request lacks the scope and is invalid, then 403 comes first and nothing is created", async () => {
    const { token, api } = await server.newOrg(ALL_SCOPES.filter((s) => s !== "webhooks:write"));

    const bad = await server.raw("/v2/webhook_endpoints", { token, method: "POST", headers: { "content-type": "text/plain" }, body: "x" });
    const good = await server.raw("/v2/webhook_endpoints", {
      token,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `https://${PUBLIC_HOST}/x` }),
    });

    await rawProblem(bad, { status: 403, code: "INSUFFICIENT_SCOPE" });
    await rawProblem(good, { status: 403, code: "INSUFFICIENT_SCOPE" });
    expect((await api.GET("/v2/webhook_endpoints")).data!.data).toEqual([]);
  });

  it("when a read-only token is used on a write, then its org's data is untouched", async () => {
    const { orgId, api } = await server.newOrg();
    const readOnly = server.client(await server.token(orgId, ["webhooks:read", "question_sets:read"]));
    await ingestQuestionSet(api);
    const endpoint = await createEndpoint(api);

    const writes = [
      await readOnly.POST("/v2/webhook_endpoints", { body: createBody({ url: `https://${PUBLIC_HOST}/x` }) }),
      await readOnly.POST("/v2/internal/question_sets", { body: questionSetBody({ set_name: "S", set_code: "S" }) }),
      await readOnly.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: endpoint.id } } }),
    ];

    expect(writes.map((w) => w.response.status)).toEqual([403, 403, 403]);
    expect((await api.GET("/v2/webhook_endpoints")).data!.data.map((e) => e.id)).toEqual([endpoint.id]);
    expect((await api.GET("/v2/question_sets")).data!.data).toHaveLength(1);
  });

  it("when a token is minted, then only its SHA-256 is stored", async () => {
    const { token } = await server.newOrg();
    const hash = createHash("sha256").update(token).digest("hex");

    const rows = await server.server.db.query<Record<string, unknown>>("SELECT * FROM api_tokens WHERE token_hash = $1", [hash]);

    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(JSON.stringify(rows)).not.toContain(token.slice(4));
  });
});
