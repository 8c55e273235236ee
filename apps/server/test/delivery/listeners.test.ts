// Webhook listeners end to end through the real server: a listener registered, its stream held
// open with fetch, deliveries signed and shaped as for HTTPS endpoints coming down the stream,
// answers posted back and recorded as attempts; a dropped stream, the grace period, the limits.
// What a listener may not do to the service is in listener-safety.test.ts.
import type { paths } from "@audit-review/api-types/internal";
import { testServerOptions } from "@audit-review/test-kit/server-options";
import createClient from "openapi-fetch";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/lib/logger.js";
import { startServer } from "../../src/server.js";
import { onPostgres } from "../harness/db.js";
import { createEndpoint, ingestQuestionSet, problemOf, publishEvent, rawProblem, unknownId } from "../harness/factories.js";
import { answer, attemptsOf, createListener, deliveryOf, openStream, until, type Delivered } from "./listener-streams.js";
import { RECEIVER_HOST, useDeliveryServer, verifyWebhook } from "./support.js";

// The lease outlasts the clock jumps below (a connected listener stays connected through them);
// the grace period is passed by moving the engine's clock, never waited for.
const GRACE_MS = 30_000;
const { server, clock } = await useDeliveryServer(
  { totalTimeoutMs: 1_500, scheduleMs: [0, 60_000, 60_000] },
  { listenerGraceMs: GRACE_MS, listenerLeaseMs: 120_000 },
);

describe("POST /v2/webhook_listeners", () => {
  it("when a listener is created, then it is an endpoint with a listener: URL and the create's defaults, and its secret is the token's (the same on every run)", async () => {
    const { api, orgId } = await server.newOrg();
    const first = await createListener(api);
    const again = await createListener(api, { filters: { audit_results: "failed" } });
    const otherToken = server.client(await server.token(orgId, ["webhooks:write", "webhooks:read"]));
    const other = await createListener(otherToken);

    expect(first).toMatchObject({
      object: "webhook_endpoint",
      url: `listener:${first.id}`,
      status: "enabled",
      event_types: ["audit.completed"],
      filters: { question_set_ids: [], audit_results: "all" },
      authentication: { type: "none" },
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    expect(again.secret).toBe(first.secret);
    expect(again.filters.audit_results).toBe("failed");
    expect(other.secret).not.toBe(first.secret);
    expect((await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: first.id } } })).data?.url).toBe(`listener:${first.id}`);
  });

  it("when a listener is updated, then its filters and payload change like any endpoint's, but url and authentication are refused (it has no receiver to move or authenticate to)", async () => {
    const { api } = await server.newOrg();
    const listener = await createListener(api);
    const path = { params: { path: { endpoint_id: listener.id } } };

    const ok = await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { ...path, body: { filters: { audit_results: "passed" }, payload: { result_format: "raw" } } });
    const refused = await api.PATCH("/v2/webhook_endpoints/{endpoint_id}", {
      ...path,
      body: { url: `https://${RECEIVER_HOST}/moved`, authentication: { type: "basic", username: "u", password: "p4ssw0rd-listener" } },
    });

    expect(ok.data).toMatchObject({ url: `listener:${listener.id}`, filters: { audit_results: "passed" }, payload: { result_format: "raw" } });
    const problem = problemOf(refused, { status: 400, code: "VALIDATION_ERROR" });
    expect(problem.errors!.map((e) => e.name)).toEqual(["url", "authentication"]);
  });

  it("when the filters name another org's question set, then 400 names it, as on create", async () => {
    const { api } = await server.newOrg();

    problemOf(await api.POST("/v2/webhook_listeners", { body: { filters: { question_set_ids: [unknownId()] } } }), { status: 400, code: "VALIDATION_ERROR", name: "filters.question_set_ids" });
  });
});

describe("GET /v2/webhook_listeners/{listener_id}/stream", () => {
  it("when a listener is connected and an event is published, then the delivery comes down the stream signed like an HTTPS one, and the answer is recorded as its attempt", async () => {
    const { api, token } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const listener = await createListener(api);
    const stream = await openStream(server, token, listener.id);
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(await stream.next("ready")).toEqual({ listener_id: listener.id });

    const { request } = await publishEvent(api, { data: { question_set_id: set.id } });
    const req = (await stream.next("delivery")) as Delivered;

    expect(req.headers).toMatchObject({ "content-type": "application/json", "webhook-id": request.id, "user-agent": expect.stringContaining("AuditReviewService") });
    const verified = verifyWebhook({ secret: listener.secret, headers: req.headers, body: req.body });
    expect(JSON.parse(verified.body)).toMatchObject({ type: "audit.completed", data: { auditId: request.data.audit_id, questionSetId: set.id } });
    const answered = await answer(api, listener.id, { request_id: req.request_id, status: 200, body: "thanks", duration_ms: 7 });
    expect(answered.response.status).toBe(204);

    const delivery = await until(server, () => deliveryOf(api, request.id, listener.id), (d) => d?.status === "succeeded");
    const [attempt] = await attemptsOf(api, delivery.id);
    expect(attempt).toMatchObject({ attempt_number: 1, trigger: "scheduled", url: `listener:${listener.id}`, response_status: 200, response_body: "thanks", error: null });
  });

  it("when the local receiver answers 500, cannot be reached, or nobody answers in time, then the attempt fails as it would over HTTPS and is retried", async () => {
    const { api, token } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const listener = await createListener(api);
    const stream = await openStream(server, token, listener.id);
    await stream.next("ready");

    const e1 = await publishEvent(api, { data: { question_set_id: set.id } });
    const r1 = (await stream.next("delivery")) as Delivered;
    await answer(api, listener.id, { request_id: r1.request_id, status: 500, body: "boom", duration_ms: 3 });
    const e2 = await publishEvent(api, { data: { question_set_id: set.id } });
    const r2 = (await stream.next("delivery")) as Delivered;
    await answer(api, listener.id, { request_id: r2.request_id, error: { code: "connection_error", message: "connect ECONNREFUSED 127.0.0.1:4242" }, duration_ms: 1 });
    const e3 = await publishEvent(api, { data: { question_set_id: set.id } });
    await stream.next("delivery"); // never answered

    const d1 = await until(server, () => deliveryOf(api, e1.request.id, listener.id), (d) => d?.status === "retrying");
    const d2 = await until(server, () => deliveryOf(api, e2.request.id, listener.id), (d) => d?.status === "retrying");
    const d3 = await until(server, () => deliveryOf(api, e3.request.id, listener.id), (d) => d?.status === "retrying");
    expect(d1).toMatchObject({ last_response_status: 500, last_error: { code: "unexpected_status" } });
    expect(d2).toMatchObject({ last_response_status: null, last_error: { code: "connection_error", message: expect.stringContaining("ECONNREFUSED") } });
    expect(d3).toMatchObject({ last_response_status: null, last_error: { code: "timeout" } });
    expect((await attemptsOf(api, d1.id))[0]).toMatchObject({ response_status: 500, response_body: "boom" });
    // a developer's listener failing is nobody's operational notification (docs/delivery.md#operational-notifications)
    const failing = await api.GET("/v2/events", { params: { query: { type: "webhook_endpoint.failing" } } });
    expect(failing.data!.data).toEqual([]);
    expect((await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: listener.id } } })).data!.failing_since).not.toBeNull();
  });

  it("when another token of the org, another org or an HTTPS endpoint's id asks for the stream, then 409 LISTENER_IN_USE or 404", async () => {
    const { api, token, orgId } = await server.newOrg();
    const other = await server.newOrg();
    const listener = await createListener(api);
    const https = await createEndpoint(api, { url: `https://${RECEIVER_HOST}/https` });
    await (await openStream(server, token, listener.id)).next("ready");

    const secondToken = await server.token(orgId, ["webhooks:write"]);
    await rawProblem((await openStream(server, secondToken, listener.id)).response, { status: 409, code: "LISTENER_IN_USE" });
    await rawProblem((await openStream(server, other.token, listener.id)).response, { status: 404, code: "NOT_FOUND" });
    await rawProblem((await openStream(server, token, https.id)).response, { status: 404, code: "NOT_FOUND" });
    problemOf(await answer(other.api, listener.id, { request_id: unknownId(), status: 200, duration_ms: 1 }), { status: 404, code: "NOT_FOUND" });
  });

  it("when an answer has both status and error, neither, or an error with a body, then 400 names every field at fault", async () => {
    const { api } = await server.newOrg();
    const listener = await createListener(api);
    const error = { code: "timeout" as const, message: "x" };

    for (const [body, names] of [
      [{ request_id: unknownId(), status: 200, error, duration_ms: 1 }, ["error"]],
      [{ request_id: unknownId(), duration_ms: 1 }, ["error", "status"]],
      [{ request_id: unknownId(), error, body: "what the receiver said", duration_ms: 1 }, ["body"]],
      [{ request_id: unknownId(), status: 200, error, body: "both", duration_ms: 1 }, ["body", "error"]],
    ] as const) {
      const problem = problemOf(await answer(api, listener.id, body), { status: 400, code: "VALIDATION_ERROR" });
      expect(problem.errors!.map((e) => e.name).sort()).toEqual([...names]);
    }
  });
});

describe("a listener's lifecycle", () => {
  it("when its client reconnects with the same token while the old stream still looks open (it died unseen), then the new stream takes over at once and the old one is ended", async () => {
    const { api, token } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const listener = await createListener(api);
    const old = await openStream(server, token, listener.id);
    await old.next("ready");
    const fresh = await openStream(server, token, listener.id);
    expect(fresh.response.status).toBe(200);
    await fresh.next("ready");
    expect(await old.next("closed")).toEqual({ reason: "a newer stream of the same token took the listener over" });
    const { request } = await publishEvent(api, { data: { question_set_id: set.id } });
    const req = (await fresh.next("delivery")) as Delivered;
    expect(req.headers["webhook-id"]).toBe(request.id);
    await answer(api, listener.id, { request_id: req.request_id, status: 200, duration_ms: 1 });
    await until(server, () => deliveryOf(api, request.id, listener.id), (d) => d?.status === "succeeded");
  });

  it("when the stream drops, then its queued deliveries wait unattempted, events meanwhile skip it, and a reconnect within the grace period sends what waited", async () => {
    const { api, token } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const listener = await createListener(api);
    const first = await openStream(server, token, listener.id);
    await first.next("ready");
    // one delivery on the stream, unanswered, when the stream drops
    const { request } = await publishEvent(api, { data: { question_set_id: set.id } });
    await first.next("delivery");
    first.close();
    const failed = await until(server, () => deliveryOf(api, request.id, listener.id), (d) => d?.status === "retrying");
    expect(failed.last_error?.code).toBe("connection_error");
    expect(failed.last_error?.message).toContain("stream ended before it answered");

    // disconnected: an event now creates no delivery for it, and its retry, once due, is not attempted
    const meanwhile = await publishEvent(api, { data: { question_set_id: set.id } });
    expect(meanwhile.event.deliveries_created).toBe(0);
    // (due now, by the database's rows: the retry schedule's minute is longer than the grace period)
    await server.server.db.query("UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = $1", [failed.id, clock.now()]);
    server.server.deps.signal.notify();
    await new Promise((r) => setTimeout(r, 300));
    expect(await deliveryOf(api, request.id, listener.id)).toMatchObject({ status: "retrying", attempt_count: 1 });

    // back within the grace period: the retry comes down the new stream
    const second = await openStream(server, token, listener.id);
    await second.next("ready");
    const req = (await second.next("delivery")) as Delivered;
    expect(req.headers["webhook-id"]).toBe(request.id);
    await answer(api, listener.id, { request_id: req.request_id, status: 204, duration_ms: 2 });
    const done = await until(server, () => deliveryOf(api, request.id, listener.id), (d) => d?.status === "succeeded");
    expect(done.attempt_count).toBe(2);
  });

  it("when no stream has been connected for the grace period, then the listener is deleted, its queued deliveries fail and new events skip it", async () => {
    const { api, token } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const listener = await createListener(api);
    const s = await openStream(server, token, listener.id);
    await s.next("ready");
    const { request } = await publishEvent(api, { data: { question_set_id: set.id } });
    await s.next("delivery");
    s.close();
    await until(server, () => deliveryOf(api, request.id, listener.id), (d) => d?.status === "retrying");

    clock.advance(GRACE_MS + 1_000);
    const gone = await until(server, () => deliveryOf(api, request.id, listener.id), (d) => d?.status === "failed");

    expect(gone.last_error?.code).toBe("endpoint_deleted");
    problemOf(await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: listener.id } } }), { status: 404, code: "NOT_FOUND" });
    await rawProblem((await openStream(server, token, listener.id)).response, { status: 404, code: "NOT_FOUND" });
    const later = await publishEvent(api, { data: { question_set_id: set.id } });
    expect(later.event.deliveries_created).toBe(0);
  });

  it("when listeners are created, then each counts toward the org's 20 endpoints from its creation, connected or not, and an org has at most 5", async () => {
    const { api } = await server.newOrg();
    for (let i = 0; i < 19; i++) await createEndpoint(api, { url: `https://${RECEIVER_HOST}/${i}` });
    const unconnected = await createListener(api);
    problemOf(await api.POST("/v2/webhook_endpoints", { body: { url: `https://${RECEIVER_HOST}/one-more` } }), { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
    problemOf(await api.POST("/v2/webhook_listeners", { body: {} }), { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
    await api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: unconnected.id } } });
    expect((await api.POST("/v2/webhook_endpoints", { body: { url: `https://${RECEIVER_HOST}/twentieth` } })).response.status).toBe(201);

    const other = await server.newOrg();
    const five = [];
    for (let i = 0; i < 5; i++) five.push(await createListener(other.api));
    const sixth = problemOf(await other.api.POST("/v2/webhook_listeners", { body: {} }), { status: 409, code: "LISTENER_LIMIT_REACHED" });
    expect(sixth.detail).toContain("at most 5");
    await other.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: five[0]!.id } } });
    await createListener(other.api);
  });
});

describe.skipIf(!onPostgres)("two API processes on one PostgreSQL (skipped unless TEST_DATABASE_URL is set)", () => {
  it("when process A holds the stream and process B runs a dispatcher and takes the answers, then B claims none of the listener's rows and the answers reach A's attempts", async () => {
    const a = server.server.deps.config;
    const b = await startServer({
      ...testServerOptions(),
      databaseUrl: a.databaseUrl,
      encryptionKey: a.encryptionKey,
      dispatcher: true,
      delivery: { pollIntervalMs: 20, jitter: 0 },
      logger: createLogger({ level: "silent" }),
    });
    try {
      const { api, token } = await server.newOrg();
      const viaB = createClient<paths>({ baseUrl: b.url, headers: { authorization: `Bearer ${token}` } });
      const set = await ingestQuestionSet(api);
      const listener = await createListener(api);
      const stream = await openStream(server, token, listener.id);
      await stream.next("ready");

      const published = [];
      for (let i = 0; i < 5; i++) {
        published.push((await publishEvent(api, { data: { question_set_id: set.id } })).request);
        const req = (await stream.next("delivery")) as Delivered;
        expect(req.headers["webhook-id"]).toBe(published[i]!.id);
        expect((await answer(viaB, listener.id, { request_id: req.request_id, status: 200, duration_ms: 1 })).response.status).toBe(204);
      }

      for (const e of published) {
        const d = await until(server, () => deliveryOf(api, e.id, listener.id), (x) => x?.status === "succeeded");
        expect(d.attempt_count).toBe(1);
      }
    } finally {
      await b.close();
    }
  });
});
