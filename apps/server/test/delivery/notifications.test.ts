// Operational notifications (docs/delivery.md#operational-notifications): an audit endpoint that
// starts failing, is disabled and recovers makes exactly one notification of each, delivered by
// the engine to the org's operational endpoints (real HTTPS receivers, signatures verified with
// the Standard Webhooks library behind verifyWebhook) and listed by the Events API; an
// operational endpoint's own troubles notify nobody.
import type { OperationalEventPayload } from "@audit-review/api-types/internal";
import type { RecordedRequest } from "@audit-review/test-kit/receiver";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Api, TestOrg } from "../harness/server.js";
import { deliveriesOf, endpointFor, publish, readEndpoint, useDeliveryServer, verifyWebhook } from "./support.js";

const RETRY_MS = 300;
const FAILING_DISABLE_AFTER_MS = 700;
const h = await useDeliveryServer({
  pollIntervalMs: 60_000,
  scheduleMs: [0, RETRY_MS, RETRY_MS, RETRY_MS, RETRY_MS],
  minBackoffMs: RETRY_MS,
  failingDisableAfterMs: FAILING_DISABLE_AFTER_MS,
  unreachableRestMs: 0,
});

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

/** A receiver whose answer the test switches: 500 until `healthy` is set. */
async function switchable() {
  const state = { healthy: false };
  const r = await h.receiver({ handler: (_req, res) => void res.writeHead(state.healthy ? 204 : 500).end() });
  return { r, state };
}

/** An operational endpoint and its receiver; `verified` checks each request's signature and parses it. */
async function operationalReceiver(status = 204) {
  const r = await h.receiver({ status });
  const ep = await endpointFor(org.api, r.url, { kind: "operational" });
  const verified = (req: RecordedRequest) => {
    const { id, body } = verifyWebhook({ secret: ep.secret, headers: req.headers, body: req.rawBody });
    return { id, body: JSON.parse(body) as OperationalEventPayload };
  };
  return { r, ep, verified };
}

/** Waits for at least `n` requests, then a quiet window that proves no more come. */
async function settle(r: { requests: RecordedRequest[] }, n: number): Promise<void> {
  await vi.waitUntil(() => r.requests.length >= n, { timeout: 15_000, interval: 20 });
  await h.server.drain({ untilSettled: true });
  await new Promise((resolve) => setTimeout(resolve, 300));
}

async function eventsOfType(api: Api, type: OperationalEventPayload["type"]) {
  const { data } = await api.GET("/v2/events", { params: { query: { type, limit: 100 } } });
  return data!.data;
}

describe("an audit endpoint that fails until disabled, then recovers", () => {
  it("When it starts failing and is disabled, Then exactly one failing and one disabled arrive, signed, and the Events API lists them; recovering it sends one recovered", async () => {
    const ops = await operationalReceiver();
    const { r, state } = await switchable();
    const audit = await endpointFor(org.api, r.url);

    await publish(org.api);
    await h.server.drain({ untilSettled: true });
    const disabled = await readEndpoint(org.api, audit.id);
    expect(disabled).toMatchObject({ status: "disabled", disabled_reason: "failing" });
    await settle(ops.r, 2);

    const received = ops.r.requests.map(ops.verified);
    expect(received.map((x) => x.body.type)).toEqual(["webhook_endpoint.failing", "webhook_endpoint.disabled"]);
    const [failing, off] = received.map((x) => x.body);
    expect(failing!.data).toEqual({ endpointId: audit.id, endpointUrl: r.url, failingSince: disabled.failing_since, disabledReason: null, delivery: null });
    expect(off!.data).toEqual({ endpointId: audit.id, endpointUrl: r.url, failingSince: disabled.failing_since, disabledReason: "failing", delivery: null });
    expect(off!.timestamp).toBe(disabled.disabled_at);
    expect(received.every((x) => x.body.isTest === false)).toBe(true);

    // the Events API lists each once, under the id the receiver got as webhook-id, filtered by type
    const listedFailing = await eventsOfType(org.api, "webhook_endpoint.failing");
    const listedDisabled = await eventsOfType(org.api, "webhook_endpoint.disabled");
    expect(listedFailing.map((e) => e.id)).toEqual([received[0]!.id]);
    expect(listedDisabled.map((e) => e.id)).toEqual([received[1]!.id]);
    expect(listedDisabled[0]).toMatchObject({
      type: "webhook_endpoint.disabled",
      is_test: false,
      data: null,
      notification: { endpoint_id: audit.id, endpoint_url: r.url, failing_since: disabled.failing_since, disabled_reason: "failing", delivery: null },
    });
    // the notifications' deliveries are listed like any: succeeded, to the operational endpoint
    expect((await deliveriesOf(org.api, ops.ep.id)).map((d) => [d.event_type, d.status]).sort()).toEqual([
      ["webhook_endpoint.disabled", "succeeded"],
      ["webhook_endpoint.failing", "succeeded"],
    ]);

    // Recovery: the receiver is fixed, the endpoint enabled, its failed deliveries re-sent.
    state.healthy = true;
    expect((await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: audit.id } }, body: { status: "enabled" } })).response.status).toBe(200);
    const since = new Date(Date.now() - 60 * 60_000).toISOString();
    const recovered = await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/recover", { params: { path: { endpoint_id: audit.id } }, body: { since } });
    expect(recovered.data?.queued).toBe(1);
    await publish(org.api);
    await settle(ops.r, 3);

    const after = ops.r.requests.slice(2).map(ops.verified);
    expect(after.map((x) => x.body.type)).toEqual(["webhook_endpoint.recovered"]);
    expect(after[0]!.body.data).toMatchObject({ endpointId: audit.id, failingSince: disabled.failing_since, disabledReason: null });
    expect((await eventsOfType(org.api, "webhook_endpoint.recovered")).map((e) => e.id)).toEqual([after[0]!.id]);
    expect(await readEndpoint(org.api, audit.id)).toMatchObject({ status: "enabled", failing_since: null });
  });

  it("When an endpoint answers 410, Then one disabled (gone) arrives and no failing: the streak never began", async () => {
    const ops = await operationalReceiver();
    const gone = await h.receiver({ status: 410 });
    const audit = await endpointFor(org.api, gone.url);
    await publish(org.api);
    await settle(ops.r, 1);
    expect(ops.r.requests.map((q) => ops.verified(q).body)).toEqual([
      expect.objectContaining({ type: "webhook_endpoint.disabled", data: expect.objectContaining({ endpointId: audit.id, disabledReason: "gone", failingSince: null }) }),
    ]);
  });

  it("When an endpoint is disabled by hand, Then one disabled (manual) arrives, and disabling it again sends none", async () => {
    const ops = await operationalReceiver();
    const audit = await endpointFor(org.api, (await h.receiver()).url);
    const disable = () => org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: audit.id } }, body: { status: "disabled" } });
    expect((await disable()).response.status).toBe(200);
    expect((await disable()).response.status).toBe(200);
    await settle(ops.r, 1);
    expect(ops.r.requests.map((q) => ops.verified(q).body.type)).toEqual(["webhook_endpoint.disabled"]);
    expect(ops.verified(ops.r.requests[0]!).body.data).toMatchObject({ endpointId: audit.id, disabledReason: "manual" });
  });
});

describe("subscriptions", () => {
  it("When an operational endpoint itself fails until disabled, Then nothing is made about it: no loop, and the others still get theirs", async () => {
    const broken = await operationalReceiver(500);
    const working = await operationalReceiver();
    const gone = await h.receiver({ status: 410 });
    const audit = await endpointFor(org.api, gone.url);
    await publish(org.api);
    await settle(working.r, 1);
    const brokenStatus = async () => (await org.api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: broken.ep.id } } })).data?.status;
    await vi.waitUntil(async () => (await brokenStatus()) === "disabled", { timeout: 15_000, interval: 50 });
    await settle(working.r, 1);

    // the broken one was tried, failed, and was disabled like any endpoint: no notification says so
    expect(broken.r.requests.length).toBeGreaterThanOrEqual(2);
    expect(working.r.requests.map((q) => working.verified(q).body)).toEqual([
      expect.objectContaining({ type: "webhook_endpoint.disabled", data: expect.objectContaining({ endpointId: audit.id }) }),
    ]);
    const { data } = await org.api.GET("/v2/events", { params: { query: { limit: 100 } } });
    const about = data!.data.flatMap((e) => (e.notification ? [e.notification.endpoint_id] : []));
    expect(about).toEqual([audit.id]);
  });

  it("When an operational endpoint subscribes to some types only, Then it gets only those; an audit endpoint gets none", async () => {
    const onlyDisabled = await operationalReceiver();
    await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: onlyDisabled.ep.id } }, body: { event_types: ["webhook_endpoint.recovered"] } });
    const auditReceiver = await h.receiver();
    await endpointFor(org.api, auditReceiver.url);
    const gone = await h.receiver({ status: 410 });
    await endpointFor(org.api, gone.url);
    await publish(org.api);
    await h.server.drain({ untilSettled: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(onlyDisabled.r.requests).toHaveLength(0);
    expect(auditReceiver.requests.map((q) => (JSON.parse(q.body) as { type: string }).type)).toEqual(["audit.completed"]);
  });

  it("When an endpoint mixes kinds, Then 400 names every offending field; kind cannot change", async () => {
    const r = await h.receiver();
    const mixed = await org.api.POST("/v2/webhook_endpoints", {
      body: { url: r.url, kind: "operational", event_types: ["audit.completed"], filters: { audit_results: "failed" } },
    });
    expect(mixed.response.status).toBe(400);
    expect((mixed.error as { errors: { name: string }[] }).errors.map((e) => e.name).sort()).toEqual(["event_types", "filters"]);
    const audit = await org.api.POST("/v2/webhook_endpoints", { body: { url: r.url, event_types: ["webhook_endpoint.disabled"] } });
    expect(audit.response.status).toBe(400);
    const ops = await endpointFor(org.api, r.url, { kind: "operational" });
    expect(ops).toMatchObject({ kind: "operational", event_types: ["webhook_endpoint.failing", "webhook_endpoint.disabled", "webhook_endpoint.recovered", "webhook_delivery.exhausted"] });
    // kind is not a field of the update: the contract's additionalProperties: false refuses it
    const change = await h.server.raw(`/v2/webhook_endpoints/${ops.id}`, {
      method: "PATCH",
      token: org.token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "audit" }),
    });
    expect(change.status).toBe(400);
    const listed = await org.api.GET("/v2/webhook_endpoints", { params: { query: { kind: "operational" } } });
    expect(listed.data!.data.map((e) => e.id)).toEqual([ops.id]);
  });

  it("When a test event is sent to an operational endpoint, Then it gets a sample notification about itself, flagged isTest", async () => {
    const ops = await operationalReceiver();
    const sent = await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/test", { params: { path: { endpoint_id: ops.ep.id } } });
    expect(sent.response.status).toBe(201);
    await settle(ops.r, 1);
    const { body } = ops.verified(ops.r.requests[0]!);
    expect(body).toMatchObject({ type: "webhook_endpoint.failing", isTest: true, data: { endpointId: ops.ep.id, endpointUrl: ops.r.url } });
  });
});
