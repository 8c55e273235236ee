// The dispatcher itself: woken at once by new work (the poll is a minute here, so anything
// prompt was woken), concurrency limits, the endpoint check at send time, auto-disable of an
// endpoint that keeps failing, and a graceful stop.
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { RecordedRequest } from "@audit-review/test-kit/receiver";
import type { TestOrg } from "../harness/server.js";
import { closedPort } from "@audit-review/test-kit/receiver";
import { RECEIVER_HOST, deliveriesOf, endpointFor, gate, ingestQuestionSetFor, msBetween, onlyDelivery, publish, readEndpoint, useDeliveryServer } from "./support.js";

const RETRY_MS = 300;
const FAILING_DISABLE_AFTER_MS = 700;
const h = await useDeliveryServer({
  pollIntervalMs: 60_000,
  concurrency: 3,
  perEndpointConcurrency: 2,
  scheduleMs: [0, RETRY_MS, RETRY_MS, RETRY_MS, RETRY_MS],
  minBackoffMs: RETRY_MS,
  failingDisableAfterMs: FAILING_DISABLE_AFTER_MS,
  // long enough that the isolation test never sees a rest run out
  unreachableRestMs: 60_000,
  // the held receivers here test the shared limits, never the slow lane (slow-receivers.test.ts)
  slowAttemptMs: 60_000,
});

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

/** A handler that holds every request until the gate opens, tracking how many are open at once. */
function held() {
  const g = gate();
  let open = 0;
  const stats = { max: 0 };
  const handler = async (_req: RecordedRequest, res: ServerResponse) => {
    stats.max = Math.max(stats.max, ++open);
    await g.promise;
    open -= 1;
    res.writeHead(200).end();
  };
  return { handler, stats, release: g.open };
}

/**
 * Proving that something does not happen needs a window: the dispatcher is woken by every
 * publish and by every finished attempt, so a few hundred milliseconds without a new request,
 * after the last wake-up, shows the limit holding.
 */
const quietWindow = () => new Promise((resolve) => setTimeout(resolve, 300));

/** Waits until the dispatcher has claimed (leased) the delivery of this event. */
async function claimed(eventId: string): Promise<void> {
  await vi.waitUntil(async () => {
    const [row] = await h.server.server.db.query<{ lease_owner: string | null }>(
      "SELECT lease_owner FROM webhook_deliveries WHERE event_id = $1", [eventId]);
    return row?.lease_owner != null;
  }, { timeout: 10_000, interval: 5 });
}

describe("waking up", () => {
  it("When an event is published, Then the delivery goes out at once although the poll interval is a minute", async () => {
    const r = await h.receiver();
    await endpointFor(org.api, r.url);
    const publishedAt = Date.now();
    await publish(org.api);
    const req = await r.nextRequest({ timeoutMs: 10_000 });
    expect(req.receivedAt.getTime() - publishedAt).toBeLessThan(10_000);
    await h.server.drain();
  });

  it("When retries are due at different times before the next poll, Then each is sent on time by the dispatcher's own timers", async () => {
    // `slow` fails 200 ms after `fast`, so its retry is scheduled while fast's timer is pending
    // and falls due after fast's retry is done: only its own timer can send it before the poll.
    // Not drain(): it would tick the dispatcher itself and hide a missed wake-up.
    const fast = await h.receiver({ status: 500 });
    const slow = await h.receiver({
      handler: (_req, res) => void setTimeout(() => res.writeHead(slow.requests.length > 1 ? 200 : 500).end(), slow.requests.length > 1 ? 0 : 200),
    });
    await endpointFor(org.api, fast.url);
    await endpointFor(org.api, slow.url);
    await publish(org.api);
    await fast.nextRequest();
    await slow.nextRequest();
    fast.setStatus(200);
    const [again, slowAgain] = [await fast.nextRequest({ timeoutMs: 5_000 }), await slow.nextRequest({ timeoutMs: 5_000 })];
    expect(again.headers["webhook-id"]).toBe(slowAgain.headers["webhook-id"]);
    await h.server.drain();
  });
});

describe("concurrency limits", () => {
  it("When one endpoint has a backlog, Then at most perEndpointConcurrency of its deliveries are in flight", async () => {
    const { handler, stats, release } = held();
    const r = await h.receiver({ handler });
    const ep = await endpointFor(org.api, r.url);
    for (let i = 0; i < 5; i++) await publish(org.api);
    await r.nextRequest();
    await r.nextRequest();
    await quietWindow();
    expect(r.requests).toHaveLength(2);
    release();
    await h.server.drain();
    expect(r.requests).toHaveLength(5);
    expect(stats.max).toBe(2);
    expect((await deliveriesOf(org.api, ep.id)).map((d) => d.status)).toEqual(Array(5).fill("succeeded"));
  });

  it("When one endpoint has a backlog, Then up to three times perEndpointConcurrency of its deliveries are claimed ahead, and no more", async () => {
    const { handler, release } = held();
    const r = await h.receiver({ handler });
    const ep = await endpointFor(org.api, r.url);
    for (let i = 0; i < 10; i++) await publish(org.api);
    await r.nextRequest();
    await r.nextRequest();
    const leased = async () =>
      (await h.server.server.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND lease_owner IS NOT NULL", [ep.id]))[0]!.n;
    // Two sending and four waiting for a slot: a freed slot never waits for a claim's round trip.
    const wake = () => h.server.server.deps.signal.notify();
    await expect.poll(async () => (wake(), leased()), { timeout: 5_000, interval: 20 }).toBe(6);
    wake();
    await quietWindow();
    expect(await leased()).toBe(6);
    expect(r.requests).toHaveLength(2);
    release();
    await h.server.drain();
    expect(r.requests).toHaveLength(10);
  });

  it("When several endpoints have work, Then at most `concurrency` attempts are in flight in total", async () => {
    const { handler, stats, release } = held();
    const r = await h.receiver({ handler });
    for (let i = 0; i < 3; i++) await endpointFor(org.api, `${r.url}/${i}`);
    await publish(org.api);
    await publish(org.api);
    for (let i = 0; i < 3; i++) await r.nextRequest();
    await quietWindow();
    expect(r.requests).toHaveLength(3);
    release();
    await h.server.drain();
    expect(r.requests).toHaveLength(6);
    expect(stats.max).toBe(3);
  });
});

describe("isolation between receivers", () => {
  it("When one endpoint refuses connections, Then it rests for a moment: its other due deliveries wait while another endpoint's go out", async () => {
    const ok = await h.receiver();
    const good = await endpointFor(org.api, `${ok.url}/good`);
    const dead = await endpointFor(org.api, `https://${RECEIVER_HOST}:${await closedPort()}/dead`);
    const attemptsAt = async (endpointId: string) =>
      (await h.server.server.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE endpoint_id = $1", [endpointId]))[0]!.n;
    // the first refusal, then a backlog for both endpoints
    await publish(org.api);
    await ok.nextRequest();
    await expect.poll(() => attemptsAt(dead.id)).toBe(1);
    for (let i = 0; i < 4; i++) await publish(org.api);
    for (let i = 0; i < 4; i++) await ok.nextRequest();
    // Four more were due for the dead endpoint (and a retry of the first), yet none was tried
    // while it rested: the healthy endpoint's deliveries did not queue behind them.
    const triedWhileResting = await attemptsAt(dead.id);
    // deleting it fails what waits for it, so nothing stays due for the tests after this one
    await org.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: dead.id } } });
    expect(triedWhileResting).toBe(1);
    await h.server.drain();
    expect((await deliveriesOf(org.api, good.id)).map((d) => d.status)).toEqual(Array(5).fill("succeeded"));
  });
});

describe("isolation between receivers, with a backlog", () => {
  it("When an endpoint with several due deliveries refuses connections, Then only the attempts already started are made, and the rest wait for its rest to end", async () => {
    const ok = await h.receiver();
    await endpointFor(org.api, `${ok.url}/good`);
    const dead = await endpointFor(org.api, `https://${RECEIVER_HOST}:${await closedPort()}/dead`);
    const set = await ingestQuestionSetFor(org.api);
    const events = Array.from({ length: 6 }, () => ({
      id: randomUUID(), type: "audit.completed" as const, data: { audit_id: randomUUID(), question_set_id: set.id, result: "passed" as const },
    }));
    // all due at once: the first claims take the dead endpoint's rows ahead, two per claim
    const { error } = await org.api.POST("/v2/internal/event_batches", { body: { events } });
    expect(error).toBeUndefined();
    for (let i = 0; i < 6; i++) await ok.nextRequest();
    await quietWindow();
    const [{ n: tried }] = await h.server.server.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE endpoint_id = $1", [dead.id]) as [{ n: number }];
    const [{ n: leased }] = await h.server.server.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND lease_owner IS NOT NULL", [dead.id]) as [{ n: number }];
    await org.api.DELETE("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: dead.id } } });
    // at most the first claim's two, sent together before the first refusal came back
    expect(tried).toBeLessThanOrEqual(2);
    // nothing of it is held while it rests
    expect(leased).toBe(0);
    await h.server.drain();
  });
});

describe("the endpoint at send time", () => {
  it.each([
    ["deleted", "UPDATE webhook_endpoints SET deleted_at = now() WHERE id = $1", "endpoint_deleted"],
    ["disabled", "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'manual', disabled_at = now() WHERE id = $1", "endpoint_disabled"],
  ])("When the endpoint was %s after its delivery was queued, Then the delivery fails with that code and is not sent", async (_what, sql, code) => {
    const { handler, release } = held();
    const r = await h.receiver({ handler });
    const ep = await endpointFor(org.api, r.url);
    const first = await publish(org.api);
    const second = await publish(org.api);
    await r.nextRequest();
    await r.nextRequest();
    // The third and fourth are claimed, each by its own claim that read the endpoint, and wait
    // for a slot (per-endpoint limit 2). The change lands directly in the table after both reads,
    // as a disable/delete racing the claims would: the queued rows are still pending.
    const third = await publish(org.api);
    await claimed(third.id);
    const fourth = await publish(org.api);
    await claimed(fourth.id);
    await h.server.server.db.query(sql, [ep.id]);
    release();
    await h.server.drain();

    expect(r.requests).toHaveLength(2);
    const rows = await deliveriesOf(org.api, ep.id);
    const byEvent = (id: string) => rows.find((d) => d.event_id === id)!;
    expect(byEvent(first.id)).toMatchObject({ status: "succeeded", attempt_count: 1 });
    expect(byEvent(second.id)).toMatchObject({ status: "succeeded", attempt_count: 1 });
    for (const waited of [third, fourth]) {
      expect(byEvent(waited.id)).toMatchObject({
        status: "failed",
        attempt_count: 0,
        last_response_status: null,
        last_error: { code },
        delivered_at: null,
      });
    }
  });
});

describe("endpoint health", () => {
  it("When an endpoint keeps failing for longer than the limit, Then it is disabled as failing and gets no new deliveries", async () => {
    const r = await h.receiver({ status: 500 });
    const ep = await endpointFor(org.api, r.url);
    await publish(org.api);
    await h.server.drain({ untilSettled: true });

    const delivery = await onlyDelivery(org.api, ep.id);
    const endpoint = await readEndpoint(org.api, ep.id);
    expect(endpoint).toMatchObject({ status: "disabled", disabled_reason: "failing" });
    expect(msBetween(endpoint.failing_since!, endpoint.disabled_at!)).toBeGreaterThan(FAILING_DISABLE_AFTER_MS);
    // The attempt that found the streak too long ends the delivery with its own error,
    // before the schedule (5 attempts) ran out.
    expect(delivery).toMatchObject({ status: "failed", last_response_status: 500, last_error: { code: "unexpected_status" } });
    expect(delivery.attempt_count).toBeGreaterThanOrEqual(3);
    expect(delivery.attempt_count).toBeLessThan(5);
    expect(msBetween(endpoint.failing_since!, endpoint.disabled_at!)).toBeLessThan(FAILING_DISABLE_AFTER_MS + 5 * RETRY_MS);
    expect(delivery.updated_at).toBe(endpoint.disabled_at);
    expect(r.requests).toHaveLength(delivery.attempt_count);

    expect((await publish(org.api)).deliveriesCreated).toBe(0);
  });
});

describe("stopping", () => {
  // Last in the file: the server's dispatcher stays stopped.
  it("When the dispatcher stops mid-attempt, Then the attempt finishes and is recorded, and nothing new is claimed", async () => {
    const { handler, release } = held();
    const r = await h.receiver({ handler });
    const ep = await endpointFor(org.api, r.url);
    const inFlight = await publish(org.api);
    await r.nextRequest();

    const { dispatcher } = h.server.server;
    let stopped = false;
    const stopping = dispatcher.stop().then(() => (stopped = true));
    const queued = await publish(org.api);
    expect(queued.deliveriesCreated).toBe(1);
    await quietWindow();
    expect(stopped).toBe(false);
    release();
    await stopping;

    expect(r.requests).toHaveLength(1);
    const rows = await deliveriesOf(org.api, ep.id);
    expect(rows.find((d) => d.event_id === inFlight.id)).toMatchObject({ status: "succeeded", attempt_count: 1 });
    expect(rows.find((d) => d.event_id === queued.id)).toMatchObject({ status: "pending", attempt_count: 0 });
    const [lease] = await h.server.server.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND lease_owner IS NOT NULL",
      [ep.id],
    );
    expect(lease!.n).toBe(0);
  });
});
