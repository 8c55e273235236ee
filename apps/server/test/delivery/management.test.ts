// Webhook management seen from a real HTTPS receiver (docs/api-decisions.md#webhook-endpoints): attempt history, manual
// retry, test events, rotation grace, disable and recovery.
import { beforeEach, describe, expect, it } from "vitest";
import { problemOf } from "../harness/factories.js";
import type { TestOrg } from "../harness/server.js";
import { endpointFor, onlyDelivery, publish, useDeliveryServer, verifyWebhook } from "./support.js";

const h = await useDeliveryServer({ scheduleMs: [0, 60_000] });

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

const attemptsOf = async (deliveryId: string) =>
  (await org.api.GET("/v2/webhook_deliveries/{delivery_id}/attempts", { params: { path: { delivery_id: deliveryId }, query: { limit: 100 } } })).data!.data;

describe("attempt history and manual retry", () => {
  it("When a failed delivery is retried, Then one manual attempt reaches the receiver and the attempts list shows both, newest first", async () => {
    const r = await h.receiver({ status: 410 });
    r.setHandler((_req, res) => {
      res.writeHead(410, { "content-type": "text/plain" });
      res.end("gone for now " + "x".repeat(2000));
    });
    const ep = await endpointFor(org.api, r.url);
    await publish(org.api);
    await r.nextRequest();
    await h.server.drain();
    const failed = await onlyDelivery(org.api, ep.id);
    expect(failed.status).toBe("failed");

    // 410 disabled the endpoint: a retry is refused until it is enabled again
    problemOf(await org.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: failed.id } } }), {
      status: 409,
      code: "ENDPOINT_DISABLED",
    });
    await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { status: "enabled" } });
    r.setHandler(null);
    r.setStatus(200);
    const retried = await org.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: failed.id } } });
    expect(retried.response.status).toBe(202);
    expect(retried.data!.status).toBe("pending");
    const resent = await r.nextRequest();
    verifyWebhook({ secret: ep.secret, headers: resent.headers, body: resent.body });
    await h.server.drain();

    const delivery = (await org.api.GET("/v2/webhook_deliveries/{delivery_id}", { params: { path: { delivery_id: failed.id } } })).data!;
    expect(delivery).toMatchObject({ status: "succeeded", attempt_count: 2, last_response_status: 200 });
    const attempts = await attemptsOf(failed.id);
    expect(attempts.map((a) => [a.attempt_number, a.trigger, a.response_status])).toEqual([
      [2, "manual", 200],
      [1, "scheduled", 410],
    ]);
    expect(attempts[1]!.response_body).toMatch(/^gone for now x+$/);
    expect(Buffer.byteLength(attempts[1]!.response_body!)).toBe(1024);
    expect(attempts[1]!.error).toEqual({ code: "unexpected_status", message: "receiver answered 410" });
    expect(attempts[0]!).toMatchObject({ url: r.url, endpoint_id: ep.id, delivery_id: failed.id, error: null });
  });

  it("When a delivery is still pending or retrying, Then retry answers 409 DELIVERY_IN_PROGRESS", async () => {
    const r = await h.receiver({ status: 500 });
    const ep = await endpointFor(org.api, r.url);
    await publish(org.api);
    await r.nextRequest();
    await h.server.drain();
    const retrying = await onlyDelivery(org.api, ep.id);
    expect(retrying.status).toBe("retrying");
    problemOf(await org.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: retrying.id } } }), {
      status: 409,
      code: "DELIVERY_IN_PROGRESS",
    });
  });
});

describe("disable, delete and recovery", () => {
  it("When an endpoint with a queued delivery is disabled, Then the delivery fails with endpoint_disabled and a recovery after enabling sends it", async () => {
    const r = await h.receiver({ status: 500 });
    const ep = await endpointFor(org.api, r.url);
    await publish(org.api);
    await r.nextRequest();
    await h.server.drain();
    expect((await onlyDelivery(org.api, ep.id)).status).toBe("retrying");

    const disabled = await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { status: "disabled" } });
    expect(disabled.data).toMatchObject({ status: "disabled", disabled_reason: "manual" });
    expect(disabled.data!.disabled_at).not.toBeNull();
    const failed = await onlyDelivery(org.api, ep.id);
    expect(failed).toMatchObject({ status: "failed", last_error: { code: "endpoint_disabled" } });

    const since = new Date(Date.now() - 60 * 60 * 1000).toISOString();
    const path = { params: { path: { endpoint_id: ep.id } }, body: { since } };
    problemOf(await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/recover", path), { status: 409, code: "ENDPOINT_DISABLED" });
    const enabled = await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { status: "enabled" } });
    expect(enabled.data).toMatchObject({ status: "enabled", disabled_reason: null, disabled_at: null, failing_since: null });

    r.setStatus(200);
    const recovered = await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/recover", path);
    expect(recovered.response.status).toBe(202);
    expect(recovered.data).toEqual({ object: "recovery", queued: 1 });
    await r.nextRequest();
    await h.server.drain();
    expect((await onlyDelivery(org.api, ep.id)).status).toBe("succeeded");
    expect((await attemptsOf(failed.id)).map((a) => a.trigger)).toEqual(["manual", "scheduled"]);
  });

  it("When recover reaches back more than 14 days or until precedes since, Then 400 names each field", async () => {
    const ep = await endpointFor(org.api, (await h.receiver()).url);
    const since = new Date(Date.now() - 15 * 24 * 60 * 60 * 1000).toISOString();
    const problem = problemOf(
      await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/recover", {
        params: { path: { endpoint_id: ep.id } },
        body: { since, until: new Date(Date.parse(since) - 1000).toISOString() },
      }),
      { status: 400, code: "VALIDATION_ERROR" },
    );
    expect(problem.errors!.map((e) => e.name).sort()).toEqual(["since", "until"]);
  });

  it("When an endpoint with a queued delivery is deleted, Then the delivery fails with endpoint_deleted and stays readable, and retry answers 404", async () => {
    const r = await h.receiver({ status: 500 });
    const ep = await endpointFor(org.api, r.url);
    await publish(org.api);
    await r.nextRequest();
    await h.server.drain();
    const deleted = await org.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } });
    expect(deleted.response.status).toBe(204);
    const delivery = await onlyDelivery(org.api, ep.id);
    expect(delivery).toMatchObject({ status: "failed", last_error: { code: "endpoint_deleted" } });
    const read = await org.api.GET("/v2/webhook_deliveries/{delivery_id}", { params: { path: { delivery_id: delivery.id } } });
    expect(read.data!.id).toBe(delivery.id);
    expect(await attemptsOf(delivery.id)).toHaveLength(1);
    problemOf(await org.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: delivery.id } } }), { status: 404, code: "NOT_FOUND" });
    problemOf(await org.api.GET("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } }), { status: 404, code: "NOT_FOUND" });
  });
});

describe("test events and rotation", () => {
  it("When a test event is sent, Then an is_test delivery shaped by the payload settings arrives and its attempt is a test", async () => {
    const r = await h.receiver();
    const ep = await endpointFor(org.api, r.url, { payload: { fields: ["data.result"] }, filters: { audit_results: "failed" } });
    const sent = await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/test", { params: { path: { endpoint_id: ep.id } } });
    expect(sent.response.status).toBe(201);
    expect(sent.response.headers.get("location")).toBe(`/v2/webhook_deliveries/${sent.data!.id}`);
    expect(sent.data).toMatchObject({ is_test: true, endpoint_id: ep.id, event_type: "audit.completed" });
    const req = await r.nextRequest();
    const body = JSON.parse(verifyWebhook({ secret: ep.secret, headers: req.headers, body: req.body }).body) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["data", "isTest", "timestamp", "type"]);
    expect(body.isTest).toBe(true);
    expect(Object.keys(body.data as object).sort()).toEqual(["auditId", "questionSetId", "result"]);
    await h.server.drain();
    expect((await attemptsOf(sent.data!.id)).map((a) => a.trigger)).toEqual(["test"]);

    await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { status: "disabled" } });
    problemOf(await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/test", { params: { path: { endpoint_id: ep.id } } }), {
      status: 409,
      code: "ENDPOINT_DISABLED",
    });
  });

  it("When the secret is rotated with expires_in, Then old and new both verify during the grace period and only the new one after", async () => {
    const r = await h.receiver();
    const ep = await endpointFor(org.api, r.url);
    const before = h.clock.now().getTime();
    const rotated = await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/rotate_secret", {
      params: { path: { endpoint_id: ep.id } },
      body: { expires_in: 2 },
    });
    const fresh = rotated.data!.secret;
    // two seconds from when the server rotated it, on its clock (however long the request took)
    const expiresAt = Date.parse(rotated.data!.signing.previous_secret_expires_at!);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 2000);
    expect(expiresAt).toBeLessThanOrEqual(h.clock.now().getTime() + 2000);

    await publish(org.api);
    const during = await r.nextRequest();
    verifyWebhook({ secret: fresh, headers: during.headers, body: during.body });
    verifyWebhook({ secret: ep.secret, headers: during.headers, body: during.body });
    await h.server.drain();

    // The grace period ends on the engine's clock, not by waiting for it.
    h.clock.advance(Math.max(0, expiresAt - h.clock.now().getTime()) + 50);
    await publish(org.api);
    const after = await r.nextRequest();
    verifyWebhook({ secret: fresh, headers: after.headers, body: after.body });
    expect(() => verifyWebhook({ secret: ep.secret, headers: after.headers, body: after.body })).toThrow();
    await h.server.drain();

    const immediate = await org.api.POST("/v2/webhook_endpoints/{endpoint_id}/rotate_secret", { params: { path: { endpoint_id: ep.id } }, body: { expires_in: 0 } });
    expect(immediate.data!.signing.previous_secret_expires_at).toBeNull();
    await publish(org.api);
    const now = await r.nextRequest();
    expect(String(now.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    verifyWebhook({ secret: immediate.data!.secret, headers: now.headers, body: now.body });
    await h.server.drain();
  });
});
