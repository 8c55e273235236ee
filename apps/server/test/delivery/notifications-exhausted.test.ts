// webhook_delivery.exhausted (docs/delivery.md#operational-notifications): a delivery whose
// scheduled attempts run out while its endpoint stays enabled makes exactly one notification,
// delivered signed to the org's operational endpoints; a manual retry that fails again makes none.
import type { OperationalEventPayload } from "@audit-review/api-types/internal";
import { expect, it, vi } from "vitest";
import { endpointFor, onlyDelivery, publish, readEndpoint, useDeliveryServer, verifyWebhook } from "./support.js";

const RETRY_MS = 150;
const h = await useDeliveryServer({
  pollIntervalMs: 60_000,
  scheduleMs: [0, RETRY_MS, RETRY_MS],
  minBackoffMs: RETRY_MS,
  // far beyond the schedule: the endpoint stays enabled while its delivery runs out of attempts
  failingDisableAfterMs: 60_000,
  unreachableRestMs: 0,
});

it("When a delivery's attempts run out, Then one exhausted arrives naming it, after the one failing; a failed manual retry adds none", async () => {
  const org = await h.server.newOrg();
  const opsReceiver = await h.receiver();
  const ops = await endpointFor(org.api, opsReceiver.url, { kind: "operational" });
  const failing = await h.receiver({ status: 503 });
  const audit = await endpointFor(org.api, failing.url);

  const event = await publish(org.api);
  await h.server.drain({ untilSettled: true });
  const delivery = await onlyDelivery(org.api, audit.id);
  expect(delivery).toMatchObject({ status: "failed", attempt_count: 3, last_response_status: 503 });
  expect(await readEndpoint(org.api, audit.id)).toMatchObject({ status: "enabled" });

  await vi.waitUntil(() => opsReceiver.requests.length >= 2, { timeout: 10_000, interval: 20 });
  const retried = await org.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: delivery.id } } });
  expect(retried.response.status).toBe(202);
  await h.server.drain({ untilSettled: true });
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(failing.requests).toHaveLength(4);

  const bodies = opsReceiver.requests.map((q) => JSON.parse(verifyWebhook({ secret: ops.secret, headers: q.headers, body: q.rawBody }).body) as OperationalEventPayload);
  expect(bodies.map((b) => b.type)).toEqual(["webhook_endpoint.failing", "webhook_delivery.exhausted"]);
  const endpoint = await readEndpoint(org.api, audit.id);
  expect(bodies[1]!.data).toEqual({
    endpointId: audit.id,
    endpointUrl: failing.url,
    failingSince: endpoint.failing_since,
    disabledReason: null,
    delivery: {
      id: delivery.id,
      eventId: event.id,
      eventType: "audit.completed",
      attemptCount: 3,
      lastResponseStatus: 503,
      lastError: { code: "unexpected_status", message: delivery.last_error!.message },
    },
  });
  const { data } = await org.api.GET("/v2/events", { params: { query: { type: "webhook_delivery.exhausted" } } });
  expect(data!.data).toHaveLength(1);
  expect(data!.data[0]).toMatchObject({ type: "webhook_delivery.exhausted", data: null, notification: { delivery: { id: delivery.id, attempt_count: 3 } } });
});
