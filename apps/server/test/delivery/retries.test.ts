// Schedules run to their end, in milliseconds: a failure then a success, exhaustion to `failed`,
// and the endpoint's failure streak. Each intermediate row is read from inside the receiver's
// handler, while the next attempt is on the wire, so nothing is sampled by timing.
import type { ServerResponse } from "node:http";
import type { WebhookDelivery, WebhookEndpoint } from "@audit-review/api-types/internal";
import { beforeEach, describe, expect, it } from "vitest";
import type { RecordedRequest } from "@audit-review/test-kit/receiver";
import type { TestOrg } from "../harness/server.js";
import { endpointFor, msBetween, onlyDelivery, publish, readEndpoint, useDeliveryServer } from "./support.js";

const SCHEDULE = [0, 60, 120];
const h = await useDeliveryServer({ scheduleMs: SCHEDULE, minBackoffMs: 60 });

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

interface Seen {
  delivery: WebhookDelivery;
  endpoint: WebhookEndpoint;
}

/** A handler answering `statuses` in turn, reading the delivery and endpoint as each request arrives. */
function scripted(statuses: number[], seen: Seen[], endpointId: () => string) {
  return async (_req: RecordedRequest, res: ServerResponse) => {
    const status = statuses[seen.length] ?? 200;
    seen.push({ delivery: await onlyDelivery(org.api, endpointId()), endpoint: await readEndpoint(org.api, endpointId()) });
    res.writeHead(status).end();
  };
}

describe("retries", () => {
  it("When the receiver answers 500 and then 200, Then the second attempt comes at the scheduled time and the delivery succeeds", async () => {
    const seen: Seen[] = [];
    let endpointId = "";
    const r = await h.receiver({ handler: scripted([500, 200], seen, () => endpointId) });
    endpointId = (await endpointFor(org.api, r.url)).id;
    const event = await publish(org.api);
    await h.server.drain({ untilSettled: true });

    expect(r.requests).toHaveLength(2);
    expect(r.requests.map((q) => q.headers["webhook-id"])).toEqual([event.id, event.id]);
    const [first, second] = seen as [Seen, Seen];
    expect(first.delivery).toMatchObject({ status: "pending", attempt_count: 0 });
    expect(first.endpoint.failing_since).toBeNull();
    expect(second.delivery).toMatchObject({
      status: "retrying",
      attempt_count: 1,
      last_response_status: 500,
      last_error: { code: "unexpected_status", message: "receiver answered 500" },
      delivered_at: null,
    });
    expect(msBetween(second.delivery.updated_at, second.delivery.next_attempt_at)).toBe(SCHEDULE[1]);
    expect(second.endpoint.failing_since).toBe(second.delivery.updated_at);
    // Not before it was due.
    expect(r.requests[1]!.receivedAt.getTime()).toBeGreaterThanOrEqual(Date.parse(second.delivery.next_attempt_at));

    const final = await onlyDelivery(org.api, endpointId);
    expect(final).toMatchObject({ status: "succeeded", attempt_count: 2, last_response_status: 200, last_error: null });
    expect(final.next_attempt_at).toBe(second.delivery.next_attempt_at);
    expect(final.delivered_at).toBe(final.updated_at);
    // A success ends the failure streak.
    expect((await readEndpoint(org.api, endpointId)).failing_since).toBeNull();
  });

  it("When every attempt fails, Then after the last scheduled attempt the delivery is failed and keeps its last due time", async () => {
    const seen: Seen[] = [];
    let endpointId = "";
    const r = await h.receiver({ handler: scripted([500, 502, 503], seen, () => endpointId) });
    endpointId = (await endpointFor(org.api, r.url)).id;
    await publish(org.api);
    await h.server.drain({ untilSettled: true });

    expect(r.requests).toHaveLength(SCHEDULE.length);
    const third = seen[2]!;
    expect(third.delivery).toMatchObject({ status: "retrying", attempt_count: 2, last_response_status: 502 });
    // 502 asks for the minimum backoff, which equals the scheduled delay here.
    expect(msBetween(third.delivery.updated_at, third.delivery.next_attempt_at)).toBe(Math.max(SCHEDULE[2]!, 60));

    const final = await onlyDelivery(org.api, endpointId);
    expect(final).toMatchObject({
      status: "failed",
      attempt_count: 3,
      last_response_status: 503,
      last_error: { code: "unexpected_status", message: "receiver answered 503" },
      delivered_at: null,
    });
    expect(final.next_attempt_at).toBe(third.delivery.next_attempt_at);
    // The streak began with the first failure and is still running; the endpoint stays enabled
    // until it has lasted longer than the limit (5 days by default).
    const endpoint = await readEndpoint(org.api, endpointId);
    expect(endpoint).toMatchObject({ status: "enabled", failing_since: seen[1]!.delivery.updated_at });
  });
});
