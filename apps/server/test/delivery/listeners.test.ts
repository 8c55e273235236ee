// Webhook listeners end to end through the real server: a listener registered, its stream held
// open with fetch, deliveries signed and shaped as for HTTPS endpoints coming down the stream,
// answers posted back and recorded as attempts; a dropped stream, the grace period, the limit.
import type { CreatedWebhookEndpoint, paths, WebhookDelivery, WebhookDeliveryAttempt } from "@audit-review/api-types/internal";
import { testServerOptions } from "@audit-review/test-kit/server-options";
import createClient from "openapi-fetch";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/lib/logger.js";
import { startServer } from "../../src/server.js";
import { onPostgres } from "../harness/db.js";
import { createEndpoint, ingestQuestionSet, problemOf, publishEvent, rawProblem, remember, unknownId } from "../harness/factories.js";
import type { Api, TestServer } from "../harness/server.js";
import { RECEIVER_HOST, useDeliveryServer, verifyWebhook } from "./support.js";

// The lease outlasts the clock jumps below (a connected listener stays connected through them);
// the grace period is passed by moving the engine's clock, never waited for.
const GRACE_MS = 30_000;
const { server, clock } = await useDeliveryServer(
  { totalTimeoutMs: 1_500, scheduleMs: [0, 60_000, 60_000] },
  { listenerGraceMs: GRACE_MS, listenerLeaseMs: 120_000 },
);

interface Delivered {
  request_id: string;
  headers: Record<string, string>;
  body: string;
}

/** An open stream of a listener: its events in order, read as they arrive. */
interface Stream {
  response: Response;
  next(name: string, timeoutMs?: number): Promise<unknown>;
  close(): void;
}

const streams: Stream[] = [];
afterEach(() => {
  for (const s of streams.splice(0)) s.close();
});

async function openStream(srv: TestServer, token: string, listenerId: string): Promise<Stream> {
  const controller = new AbortController();
  const response = await fetch(`${srv.url}/v2/webhook_listeners/${listenerId}/stream`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  const events: Array<{ name: string; data: unknown }> = [];
  const waiters: Array<() => void> = [];
  if (response.ok && response.body) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const name = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (name && data) events.push({ name, data: JSON.parse(data) });
            for (const w of waiters.splice(0)) w();
          }
        }
      } catch {
        // aborted by close()
      }
    })();
  }
  const stream: Stream = {
    response,
    async next(name, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const i = events.findIndex((e) => e.name === name);
        if (i >= 0) return events.splice(i, 1)[0]!.data;
        if (Date.now() > deadline) throw new Error(`no ${name} event within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    close: () => controller.abort(),
  };
  streams.push(stream);
  return stream;
}

async function createListener(api: Api, body: object = {}): Promise<CreatedWebhookEndpoint> {
  const { data, response, error } = await api.POST("/v2/webhook_listeners", { body });
  if (!data) throw new Error(`createWebhookListener answered ${response.status}: ${JSON.stringify(error)}`);
  remember(data.secret);
  return data;
}

const answer = (api: Api, listenerId: string, body: { request_id: string; status?: number; body?: string; duration_ms: number; error?: { code: "connection_error" | "timeout"; message: string } }) =>
  api.POST("/v2/webhook_listeners/{listener_id}/answers", { params: { path: { listener_id: listenerId } }, body });

async function deliveryOf(api: Api, eventId: string, endpointId: string): Promise<WebhookDelivery> {
  const { data } = await api.GET("/v2/webhook_deliveries", { params: { query: { endpoint_id: endpointId, limit: 100 } } });
  return data!.data.find((d) => d.event_id === eventId)!;
}

async function attemptsOf(api: Api, deliveryId: string): Promise<WebhookDeliveryAttempt[]> {
  const { data } = await api.GET("/v2/webhook_deliveries/{delivery_id}/attempts", { params: { path: { delivery_id: deliveryId } } });
  return data!.data;
}

/** Waits until `check` holds (the engine records asynchronously), failing after `timeoutMs`. */
async function until<T>(read: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (check(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await server.server.deps.signal.notify();
    await new Promise((r) => setTimeout(r, 50));
  }
}

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

    const delivery = await until(() => deliveryOf(api, request.id, listener.id), (d) => d?.status === "succeeded");
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

    const d1 = await until(() => deliveryOf(api, e1.request.id, listener.id), (d) => d?.status === "retrying");
    const d2 = await until(() => deliveryOf(api, e2.request.id, listener.id), (d) => d?.status === "retrying");
    const d3 = await until(() => deliveryOf(api, e3.request.id, listener.id), (d) => d?.status === "retrying");
    expect(d1).toMatchObject({ last_response_status: 500, last_error: { code: "unexpected_status" } });
    expect(d2).toMatchObject({ last_response_status: null, last_error: { code: "connection_error", message: expect.stringContaining("ECONNREFUSED") } });
    expect(d3).toMatchObject({ last_response_status: null, last_error: { code: "timeout" } });
    expect((await attemptsOf(api, d1.id))[0]).toMatchObject({ response_status: 500, response_body: "boom" });
  });

  it("when a second stream, another org or an HTTPS endpoint's id asks for the stream, then 409 LISTENER_IN_USE or 404", async () => {
    const { api, token } = await server.newOrg();
    const other = await server.newOrg();
    const listener = await createListener(api);
    const https = await createEndpoint(api, { url: `https://${RECEIVER_HOST}/https` });
    await (await openStream(server, token, listener.id)).next("ready");

    await rawProblem((await openStream(server, token, listener.id)).response, { status: 409, code: "LISTENER_IN_USE" });
    await rawProblem((await openStream(server, other.token, listener.id)).response, { status: 404, code: "NOT_FOUND" });
    await rawProblem((await openStream(server, token, https.id)).response, { status: 404, code: "NOT_FOUND" });
    problemOf(await answer(other.api, listener.id, { request_id: unknownId(), status: 200, duration_ms: 1 }), { status: 404, code: "NOT_FOUND" });
  });

  it("when an answer has both status and error, or neither, then 400 names both", async () => {
    const { api } = await server.newOrg();
    const listener = await createListener(api);

    for (const body of [
      { request_id: unknownId(), status: 200, error: { code: "timeout" as const, message: "x" }, duration_ms: 1 },
      { request_id: unknownId(), duration_ms: 1 },
    ]) {
      const problem = problemOf(await answer(api, listener.id, body), { status: 400, code: "VALIDATION_ERROR" });
      expect(problem.errors!.map((e) => e.name).sort()).toEqual(["error", "status"]);
    }
  });
});

describe("a listener's lifecycle", () => {
  it("when the stream drops, then due deliveries fail to connect and are retried (the server contacts nothing), and a reconnect within the grace period resumes them", async () => {
    const { api, token } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const listener = await createListener(api);
    const first = await openStream(server, token, listener.id);
    await first.next("ready");
    first.close();
    await until(async () => (await server.server.db.query<{ until: Date }>("SELECT listener_connected_until AS until FROM webhook_endpoints WHERE id = $1", [listener.id]))[0]!.until, (u) => u.getTime() <= clock.now().getTime());

    const { request } = await publishEvent(api, { data: { question_set_id: set.id } });
    const failed = await until(() => deliveryOf(api, request.id, listener.id), (d) => d?.status === "retrying");
    expect(failed.last_error).toEqual({ code: "connection_error", message: "the webhook listener is not connected" });
    expect((await attemptsOf(api, failed.id))[0]).toMatchObject({ url: `listener:${listener.id}`, error: { code: "connection_error" } });

    // back within the grace period: the retry comes down the new stream once due
    const second = await openStream(server, token, listener.id);
    await second.next("ready");
    clock.advance(61_000);
    const req = (await second.next("delivery")) as Delivered;
    expect(req.headers["webhook-id"]).toBe(request.id);
    await answer(api, listener.id, { request_id: req.request_id, status: 204, duration_ms: 2 });
    await until(() => deliveryOf(api, request.id, listener.id), (d) => d?.status === "succeeded");
  });

  it("when no stream has been connected for the grace period, then the listener is deleted, its queued deliveries fail and new events skip it", async () => {
    const { api, token } = await server.newOrg();
    const set = await ingestQuestionSet(api);
    const listener = await createListener(api);
    const s = await openStream(server, token, listener.id);
    await s.next("ready");
    s.close();
    const { request } = await publishEvent(api, { data: { question_set_id: set.id } });
    await until(() => deliveryOf(api, request.id, listener.id), (d) => d?.status === "retrying");

    clock.advance(GRACE_MS + 1_000);
    const gone = await until(() => deliveryOf(api, request.id, listener.id), (d) => d?.status === "failed");

    expect(gone.last_error?.code).toBe("endpoint_deleted");
    problemOf(await api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: listener.id } } }), { status: 404, code: "NOT_FOUND" });
    await rawProblem((await openStream(server, token, listener.id)).response, { status: 404, code: "NOT_FOUND" });
    const later = await publishEvent(api, { data: { question_set_id: set.id } });
    expect(later.event.deliveries_created).toBe(0);
  });

  it("when the org has 20 endpoints, then a listener can be created but not connected; a connected listener counts toward the 20 and a disconnected one does not", async () => {
    const { api, token } = await server.newOrg();
    const https = [];
    for (let i = 0; i < 19; i++) https.push(await createEndpoint(api, { url: `https://${RECEIVER_HOST}/${i}` }));
    const listener = await createListener(api);
    const stream = await openStream(server, token, listener.id);
    await stream.next("ready");

    problemOf(await api.POST("/v2/webhook_endpoints", { body: { url: `https://${RECEIVER_HOST}/one-more` } }), { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
    stream.close();
    await until(async () => (await api.POST("/v2/webhook_endpoints", { body: { url: `https://${RECEIVER_HOST}/twentieth` } })).response.status, (status) => status === 201);
    const unconnected = await createListener(api);
    await rawProblem((await openStream(server, token, unconnected.id)).response, { status: 409, code: "ENDPOINT_LIMIT_REACHED" });
    expect(https).toHaveLength(19);
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
        const d = await until(() => deliveryOf(api, e.id, listener.id), (x) => x?.status === "succeeded");
        expect(d.attempt_count).toBe(1);
      }
    } finally {
      await b.close();
    }
  });
});
