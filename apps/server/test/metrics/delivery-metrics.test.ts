// The engine's metrics move when the engine does: each outcome, attempt, first attempt, recorder
// batch and auto-disable, against real HTTPS receivers, read from the metrics listener as
// Prometheus reads it. The queue gauges come from the database at scrape time.
import { beforeEach, describe, expect, it } from "vitest";
import { moved, scrape, valueOf } from "../harness/metrics.js";
import type { TestOrg } from "../harness/server.js";
import { endpointFor, publish, useDeliveryServer } from "../delivery/support.js";

const h = await useDeliveryServer({ scheduleMs: [0, 300_000, 300_000], minBackoffMs: 0 });
const metricsUrl = h.server.server.deps.metrics!.listener.url;

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

describe("delivery metrics", () => {
  it("When a receiver answers 200, Then a succeeded outcome, an attempt, a first-attempt delay and a recorder batch are counted", async () => {
    const r = await h.receiver();
    await endpointFor(org.api, r.url);
    const before = await scrape(metricsUrl);
    await publish(org.api);
    await h.server.drain();
    const after = await scrape(metricsUrl);
    expect(moved(before, after, "ars_delivery_outcomes_total", { outcome: "succeeded", error_code: "none" })).toBe(1);
    expect(moved(before, after, "ars_delivery_attempt_duration_seconds_count")).toBe(1);
    expect(moved(before, after, "ars_delivery_attempt_duration_seconds_sum")).toBeGreaterThan(0);
    expect(moved(before, after, "ars_delivery_first_attempt_delay_seconds_count")).toBe(1);
    expect(moved(before, after, "ars_delivery_record_batch_size_count")).toBeGreaterThanOrEqual(1);
    expect(moved(before, after, "ars_delivery_record_batch_size_sum")).toBe(1);
  });

  it("When a receiver answers 500, Then a retrying outcome with unexpected_status is counted, and no second first-attempt delay on its retry", async () => {
    const r = await h.receiver({ status: 500 });
    await endpointFor(org.api, r.url);
    const before = await scrape(metricsUrl);
    await publish(org.api);
    await h.server.drain();
    const mid = await scrape(metricsUrl);
    expect(moved(before, mid, "ars_delivery_outcomes_total", { outcome: "retrying", error_code: "unexpected_status" })).toBe(1);
    expect(moved(before, mid, "ars_delivery_first_attempt_delay_seconds_count")).toBe(1);
    // the retry is due in 5 minutes: the queue shows no due row, then one once its time has come
    expect(valueOf(mid, "ars_delivery_queue_due_rows")).toBe(0);
    h.clock.advance(300_000);
    await h.server.drain();
    const after = await scrape(metricsUrl);
    expect(moved(mid, after, "ars_delivery_outcomes_total", { outcome: "retrying", error_code: "unexpected_status" })).toBe(1);
    expect(moved(mid, after, "ars_delivery_attempt_duration_seconds_count")).toBe(1);
    expect(moved(mid, after, "ars_delivery_first_attempt_delay_seconds_count")).toBe(0);
  });

  it("When a receiver answers 410, Then the delivery fails, the endpoint is auto-disabled (gone), and the disabled gauge counts it", async () => {
    const r = await h.receiver({ status: 410 });
    await endpointFor(org.api, r.url);
    const before = await scrape(metricsUrl);
    await publish(org.api);
    await h.server.drain();
    const after = await scrape(metricsUrl);
    expect(moved(before, after, "ars_delivery_outcomes_total", { outcome: "failed", error_code: "unexpected_status" })).toBe(1);
    expect(moved(before, after, "ars_webhook_endpoints_auto_disabled_total", { reason: "gone" })).toBe(1);
    expect(moved(before, after, "ars_webhook_endpoints_disabled", { reason: "gone" })).toBe(1);
    expect(valueOf(after, "ars_webhook_endpoints_disabled", { reason: "failing" })).toBe(0);
  });

  it("When an endpoint is disabled by hand, Then the disabled gauge counts it under manual, and no longer once it is deleted", async () => {
    const ep = await endpointFor(org.api, (await h.receiver()).url);
    const before = await scrape(metricsUrl);
    const patched = await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } }, body: { status: "disabled" } });
    expect(patched.response.status).toBe(200);
    const disabled = await scrape(metricsUrl);
    expect(moved(before, disabled, "ars_webhook_endpoints_disabled", { reason: "manual" })).toBe(1);
    const deleted = await org.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: ep.id } } });
    expect(deleted.response.ok).toBe(true);
    expect(moved(before, await scrape(metricsUrl), "ars_webhook_endpoints_disabled", { reason: "manual" })).toBe(0);
  });

  it("When deliveries are queued and not yet sent, Then the due-row count and the oldest due row's age say so; once sent, both are 0", async () => {
    // a receiver that holds its answers: the deliveries stay due (being attempted) until it answers
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const r = await h.receiver({ handler: async (_req, res) => { await held; res.writeHead(200).end(); } });
    await endpointFor(org.api, r.url);
    await publish(org.api);
    await publish(org.api);
    await r.nextRequest();
    h.clock.advance(90_000);
    const queued = await scrape(metricsUrl);
    expect(valueOf(queued, "ars_delivery_queue_due_rows")).toBe(2);
    expect(valueOf(queued, "ars_delivery_queue_oldest_due_age_seconds")).toBeGreaterThanOrEqual(90);
    release();
    await h.server.drain();
    const drained = await scrape(metricsUrl);
    expect(valueOf(drained, "ars_delivery_queue_due_rows")).toBe(0);
    expect(valueOf(drained, "ars_delivery_queue_oldest_due_age_seconds")).toBe(0);
  });

  it("When a delivery is on the wire to a slow receiver, Then the held-rows gauge counts it as sending, under the exported limit; once recorded, the engine holds nothing", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const r = await h.receiver({ handler: async (_req, res) => { await held; res.writeHead(200).end(); } });
    await endpointFor(org.api, r.url);
    await publish(org.api);
    await r.nextRequest();
    const sending = await scrape(metricsUrl);
    expect(valueOf(sending, "ars_delivery_rows_held", { state: "sending" })).toBe(1);
    expect(valueOf(sending, "ars_delivery_rows_held", { state: "recording" })).toBe(0);
    const { maxHeld } = h.server.server.deps.dispatcher!.stats();
    expect(valueOf(sending, "ars_delivery_rows_held_limit")).toBe(maxHeld);
    release();
    await h.server.drain();
    const drained = await scrape(metricsUrl);
    for (const state of ["waiting", "sending", "recording"]) expect(valueOf(drained, "ars_delivery_rows_held", { state }), state).toBe(0);
  });
});
