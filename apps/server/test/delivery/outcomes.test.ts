// One attempt against a real HTTPS receiver, and the exact delivery row docs/delivery.md#states says it
// leaves, read through GET /v2/webhook_deliveries (validated against the contract). Retries are
// scheduled minutes away here so every row is seen right after its first attempt; retries.test.ts
// runs schedules to their end.
import { beforeEach, describe, expect, it } from "vitest";
import { createTestCa } from "@audit-review/test-kit/ca";
import { closedPort } from "@audit-review/test-kit/receiver";
import type { TestOrg } from "../harness/server.js";
import {
  PUBLIC_ADDRESS,
  RECEIVER_HOST,
  deliveriesOf,
  endpointFor,
  msBetween,
  onlyDelivery,
  publish,
  readEndpoint,
  retryingAfterOne,
  useDeliveryServer,
  verifyWebhook,
} from "./support.js";

const RETRY_MS = 300_000;
const MIN_BACKOFF_MS = 420_000;
const TOTAL_TIMEOUT_MS = 1_500;

const h = await useDeliveryServer({
  scheduleMs: [0, RETRY_MS, RETRY_MS],
  minBackoffMs: MIN_BACKOFF_MS,
  connectTimeoutMs: TOTAL_TIMEOUT_MS,
  totalTimeoutMs: TOTAL_TIMEOUT_MS,
});

// An org per test: an event fans out to every matching endpoint of its org.
let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

/** Publishes one event to a fresh endpoint at `url`, lets the dispatcher finish, returns the row. */
async function deliverOnce(url: string) {
  const ep = await endpointFor(org.api, url);
  const event = await publish(org.api);
  expect(event.deliveriesCreated).toBe(1);
  await h.server.drain();
  return { ep, event, delivery: await onlyDelivery(org.api, ep.id) };
}

describe("a delivery attempt against a real receiver", () => {
  it("When the receiver answers 200, Then it got a verifiable Standard Webhooks POST and the delivery is succeeded", async () => {
    const r = await h.receiver();
    const { ep, event, delivery } = await deliverOnce(r.url);

    const req = await r.nextRequest();
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/hook");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["user-agent"]).toMatch(/^AuditReviewService-Webhooks\//);
    expect(req.headers["x-signature-256"]).toBeUndefined();
    const verified = verifyWebhook({ secret: ep.secret, headers: req.headers, body: req.body });
    expect(verified.id).toBe(event.id);
    expect(Math.abs(verified.timestamp.getTime() - Date.now())).toBeLessThan(60_000);

    expect(delivery).toMatchObject({
      object: "webhook_delivery",
      endpoint_id: ep.id,
      event_id: event.id,
      event_type: "audit.completed",
      audit_id: event.data.audit_id,
      is_test: false,
      status: "succeeded",
      attempt_count: 1,
      last_response_status: 200,
      last_error: null,
    });
    // next_attempt_at keeps the time the attempt was due: the fan-out's "now".
    expect(delivery.next_attempt_at).toBe(delivery.created_at);
    expect(delivery.delivered_at).toBe(delivery.updated_at);
    expect(msBetween(delivery.created_at, delivery.delivered_at!)).toBeGreaterThanOrEqual(0);
    expect((await readEndpoint(org.api, ep.id)).failing_since).toBeNull();
  });

  it("When the receiver answers 500, Then the delivery is retrying at the schedule's next delay and the endpoint starts failing", async () => {
    const r = await h.receiver({ status: 500 });
    const { ep, delivery } = await deliverOnce(r.url);
    expect(delivery).toMatchObject(retryingAfterOne(500, { code: "unexpected_status", message: "receiver answered 500" }));
    expect(msBetween(delivery.updated_at, delivery.next_attempt_at)).toBe(RETRY_MS);
    expect((await readEndpoint(org.api, ep.id)).failing_since).toBe(delivery.updated_at);
  });

  it("When the receiver never answers, Then the attempt is a timeout and the next delay is at least the minimum backoff", async () => {
    const r = await h.receiver({ handler: () => new Promise(() => {}) });
    const { delivery } = await deliverOnce(r.url);
    expect(r.requests).toHaveLength(1);
    expect(delivery).toMatchObject(retryingAfterOne(null, { code: "timeout", message: `${RECEIVER_HOST} did not answer within ${TOTAL_TIMEOUT_MS} ms` }));
    expect(msBetween(delivery.updated_at, delivery.next_attempt_at)).toBe(MIN_BACKOFF_MS);
  });

  it("When nothing listens on the port, Then the attempt is a connection_error", async () => {
    const { delivery } = await deliverOnce(`https://${RECEIVER_HOST}:${await closedPort()}/hook`);
    expect(delivery).toMatchObject(retryingAfterOne(null, { code: "connection_error", message: `connection to ${RECEIVER_HOST} failed (ECONNREFUSED)` }));
    expect(msBetween(delivery.updated_at, delivery.next_attempt_at)).toBe(RETRY_MS);
  });

  it("When the receiver's certificate comes from an untrusted CA, Then the attempt is a tls_error and no request is made", async () => {
    const r = await h.receiver({ ca: createTestCa({ fresh: true }) });
    const { delivery } = await deliverOnce(r.url);
    expect(r.requests).toHaveLength(0);
    expect(delivery).toMatchObject(retryingAfterOne(null));
    expect(delivery.last_error).toMatchObject({ code: "tls_error", message: expect.stringMatching(new RegExp(`^TLS with ${RECEIVER_HOST} failed \\(`)) });
  });

  it("When the receiver answers 302, Then the redirect is not followed and the attempt failed with its status", async () => {
    const r = await h.receiver();
    r.setStatus(302, { location: `https://${RECEIVER_HOST}:${r.port}/elsewhere` });
    const { delivery } = await deliverOnce(r.url);
    expect(r.requests.map((q) => q.path)).toEqual(["/hook"]);
    expect(delivery).toMatchObject(retryingAfterOne(302, { code: "unexpected_status", message: "receiver answered 302" }));
  });

  it("When a 503 carries Retry-After, Then the next attempt is when the receiver asked, clamped to [delay, 2×delay]", async () => {
    const r = await h.receiver();
    r.setStatus(503, { "retry-after": "450" });
    const first = await deliverOnce(r.url);
    expect(first.delivery).toMatchObject({ status: "retrying", attempt_count: 1, last_response_status: 503 });
    expect(msBetween(first.delivery.updated_at, first.delivery.next_attempt_at)).toBe(450_000);

    r.setStatus(503, { "retry-after": "86400" });
    org = await h.server.newOrg();
    const second = await deliverOnce(r.url);
    expect(msBetween(second.delivery.updated_at, second.delivery.next_attempt_at)).toBe(2 * RETRY_MS);
  });

  it("When a 429 asks for less than the minimum backoff, Then the minimum backoff wins", async () => {
    const r = await h.receiver();
    r.setStatus(429, { "retry-after": "1" });
    const { delivery } = await deliverOnce(r.url);
    expect(delivery).toMatchObject(retryingAfterOne(429, { code: "unexpected_status", message: "receiver answered 429" }));
    expect(msBetween(delivery.updated_at, delivery.next_attempt_at)).toBe(MIN_BACKOFF_MS);
  });

  it("When the receiver answers 410, Then the delivery fails, the endpoint is disabled as gone, its queued deliveries fail and it gets no new ones", async () => {
    const r = await h.receiver({ status: 500 });
    const { ep, delivery: earlier } = await deliverOnce(r.url);
    expect(earlier.status).toBe("retrying");

    r.setStatus(410);
    const event = await publish(org.api);
    await h.server.drain();
    const rows = await deliveriesOf(org.api, ep.id);
    const gone = rows.find((d) => d.event_id === event.id)!;
    expect(gone).toMatchObject({
      status: "failed",
      attempt_count: 1,
      last_response_status: 410,
      last_error: { code: "unexpected_status", message: "receiver answered 410" },
      delivered_at: null,
    });
    expect(gone.next_attempt_at).toBe(gone.created_at);
    expect(rows.find((d) => d.id === earlier.id)).toMatchObject({
      status: "failed",
      attempt_count: 1,
      last_response_status: 500,
      last_error: { code: "endpoint_disabled", message: "the endpoint was disabled: its receiver answered 410 Gone" },
    });
    const endpoint = await readEndpoint(org.api, ep.id);
    expect(endpoint).toMatchObject({ status: "disabled", disabled_reason: "gone" });
    expect(endpoint.disabled_at).toBe(gone.updated_at);

    const later = await publish(org.api);
    expect(later.deliveriesCreated).toBe(0);
    expect(r.requests).toHaveLength(2);
  });

  it("When the name no longer resolves at send time, Then the attempt is a dns_error", async () => {
    const host = "vanishing.test-hooks.dev";
    h.hosts.set(host, ["127.0.0.1"]);
    const r = await h.receiver({ hostname: host });
    const ep = await endpointFor(org.api, r.url);
    h.hosts.delete(host);
    await publish(org.api);
    await h.server.drain();
    expect(await onlyDelivery(org.api, ep.id)).toMatchObject(retryingAfterOne(null, { code: "dns_error", message: `could not resolve ${host} (ENOTFOUND)` }));
    expect(r.connections).toBe(0);
  });

  it.each([
    ["a private address", ["127.0.0.2"], "127.0.0.2"],
    ["a mix of an allowed and a private address", ["127.0.0.1", "10.0.0.8"], "10.0.0.8"],
  ])(
    "When a name that was public at creation resolves to %s at send time, Then it is destination_blocked and never connected to",
    async (_what, atSend, blocked) => {
      const host = `rebind-${blocked.replaceAll(".", "-")}.test-hooks.dev`;
      const r = await h.receiver({ hostname: host, listenAddress: "127.0.0.2" });
      h.hosts.set(host, [PUBLIC_ADDRESS]);
      const ep = await endpointFor(org.api, r.url);
      h.hosts.set(host, atSend);
      await publish(org.api);
      await h.server.drain();
      expect(await onlyDelivery(org.api, ep.id)).toMatchObject(retryingAfterOne(null, { code: "destination_blocked", message: `${host} resolves to ${blocked}, which is not an allowed destination` }));
      expect(r.connections).toBe(0);
      expect(r.requests).toHaveLength(0);
    },
  );
});

describe("endpoints disabled or deleted while deliveries are queued", () => {
  it("When the endpoint is disabled, Then its retrying delivery fails with endpoint_disabled, no new event reaches it, and enabling resumes deliveries", async () => {
    const r = await h.receiver({ status: 500 });
    const { ep, delivery } = await deliverOnce(r.url);
    const disabled = await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { status: "disabled" } });
    expect(disabled.data).toMatchObject({ status: "disabled", disabled_reason: "manual" });

    expect(await onlyDelivery(org.api, ep.id)).toMatchObject({
      id: delivery.id,
      status: "failed",
      attempt_count: 1,
      last_response_status: 500,
      last_error: { code: "endpoint_disabled" },
      next_attempt_at: delivery.next_attempt_at,
    });
    expect((await publish(org.api)).deliveriesCreated).toBe(0);

    await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { status: "enabled" } });
    r.setStatus(200);
    const resumed = await publish(org.api);
    expect(resumed.deliveriesCreated).toBe(1);
    await h.server.drain();
    expect((await deliveriesOf(org.api, ep.id)).find((d) => d.event_id === resumed.id)).toMatchObject({ status: "succeeded", attempt_count: 1 });
  });

  it("When the endpoint is deleted, Then its retrying delivery fails with endpoint_deleted and stays listed", async () => {
    const r = await h.receiver({ status: 500 });
    const { ep, delivery } = await deliverOnce(r.url);
    const res = await org.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } });
    expect(res.response.status).toBe(204);
    expect(await onlyDelivery(org.api, ep.id)).toMatchObject({
      id: delivery.id,
      status: "failed",
      attempt_count: 1,
      last_response_status: 500,
      last_error: { code: "endpoint_deleted" },
    });
    expect((await publish(org.api)).deliveriesCreated).toBe(0);
  });
});
