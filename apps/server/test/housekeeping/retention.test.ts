// Retention end to end on the real server and engine: days leave whole once past the window,
// a day with a delivery still retrying stays until it is final, a removed delivery answers 404
// (its attempts too), a retry or recovery near removal is refused, and a removed event's id is
// new again. The clock is the engine's adjustable clock: events are stamped with it, housekeeping
// judges by it.
import { describe, expect, it } from "vitest";
import type { HousekeepingSummary } from "../../src/housekeeping/housekeeper.js";
import { DAY_MS, dayStart } from "../../src/domain/retention.js";
import { problemOf } from "../harness/factories.js";
import { housekeepingRun } from "../harness/partitions.js";
import { endpointFor, ingestQuestionSetFor, onlyDelivery, publish, useDeliveryServer } from "./../delivery/support.js";

const RETENTION_DAYS = 3;
// the failing endpoint's second attempt is far beyond the test's days: it stays `retrying`
const h = await useDeliveryServer({ scheduleMs: [0, 10 * DAY_MS] }, { retentionDays: RETENTION_DAYS, housekeepingIntervalMs: 20 * DAY_MS });
const housekeeper = h.server.server.deps.housekeeper;

const runHousekeeping = (): Promise<HousekeepingSummary> => housekeepingRun(housekeeper);

const ymd = (d: Date) => d.toISOString().slice(0, 10).replaceAll("-", "");

describe("retention", () => {
  it("When days pass the window, Then their rows are gone (404 by id), a day with a retrying delivery stays until it is final, and retries near removal are refused", async () => {
    // The server's first housekeeping run goes on in the background after start-up, and it bounds
    // each history at the next day of the time it runs: wait for it, so a run delayed past the
    // test's clock advance cannot bound one table's history a day later than the others'.
    await runHousekeeping();
    const org = await h.server.newOrg();
    const okReceiver = await h.receiver({ status: 200 });
    const failingReceiver = await h.receiver({ status: 500 });
    const [setOk, setFailing] = [await ingestQuestionSetFor(org.api), await ingestQuestionSetFor(org.api)];
    const ok = await endpointFor(org.api, okReceiver.url, { filters: { question_set_ids: [setOk.id] } });
    const failing = await endpointFor(org.api, failingReceiver.url, { filters: { question_set_ids: [setFailing.id] } });
    const day0 = dayStart(h.clock.now());
    const day1 = new Date(day0.getTime() + DAY_MS);
    const deliver = async (endpointId: string, questionSetId: string) => {
      const before = new Set((await org.api.GET("/v2/webhook_deliveries", { params: { query: { endpoint_id: endpointId, limit: 100 } } })).data!.data.map((d) => d.id));
      const event = await publish(org.api, { data: { question_set_id: questionSetId } });
      await h.server.drain();
      // its first attempt recorded (drain alone can return before a busy machine's engine has claimed it)
      const recorded = async () => {
        const list = (await org.api.GET("/v2/webhook_deliveries", { params: { query: { endpoint_id: endpointId, limit: 100 } } })).data!.data;
        return list.find((d) => !before.has(d.id) && d.status !== "pending");
      };
      await expect.poll(recorded, { timeout: 15_000 }).toBeDefined();
      return { event, delivery: (await recorded())! };
    };

    const first = await deliver(ok.id, setOk.id); // day 0: succeeds
    h.clock.advance(DAY_MS);
    const stuck = await deliver(failing.id, setFailing.id); // day 1: stays retrying
    h.clock.advance(DAY_MS);
    const nearEnd = await deliver(ok.id, setOk.id); // day 2: removed within a day at the end
    h.clock.advance(2 * DAY_MS);
    const recent = await deliver(ok.id, setOk.id); // day 4
    h.clock.advance(DAY_MS); // day 5: days 0 and 1 are past the 3-day window
    expect([first.delivery.status, stuck.delivery.status, nearEnd.delivery.status, recent.delivery.status]).toEqual([
      "succeeded", "retrying", "succeeded", "succeeded",
    ]);

    const run = await runHousekeeping();
    // day 0 is the first day of a fresh database: its rows are in the history partitions, which
    // hold everything up to the first housekeeping run's next day and leave whole like a day
    expect(run.partitionsDropped.sort()).toEqual(["events_history", "webhook_deliveries_history", "webhook_delivery_attempts_history"]);
    // the day of the retrying delivery stays whole: its event, and its attempts (they started that day or later)
    expect(run.partitionsKept.sort()).toEqual([`events_p${ymd(day1)}`, `webhook_deliveries_p${ymd(day1)}`, `webhook_delivery_attempts_p${ymd(day1)}`]);
    expect(run.removed).toMatchObject({ events: 1, webhook_deliveries: 1, webhook_delivery_attempts: 1 });
    const stuckAttempts = await org.api.GET("/v2/webhook_deliveries/{delivery_id}/attempts", { params: { path: { delivery_id: stuck.delivery.id } } });
    expect(stuckAttempts.data!.data.map((a) => a.attempt_number), "a kept day keeps its attempts").toEqual([1]);

    const get = (id: string) => org.api.GET("/v2/webhook_deliveries/{delivery_id}", { params: { path: { delivery_id: id } } });
    problemOf(await get(first.delivery.id), { status: 404, code: "NOT_FOUND" });
    problemOf(
      await org.api.GET("/v2/webhook_deliveries/{delivery_id}/attempts", { params: { path: { delivery_id: first.delivery.id } } }),
      { status: 404, code: "NOT_FOUND" },
    );
    expect((await get(stuck.delivery.id)).data).toMatchObject({ status: "retrying" });
    const listed = (await org.api.GET("/v2/webhook_deliveries", { params: { query: { limit: 100, include_total: "true" } } })).data!;
    expect(listed.data.map((d) => d.id).sort()).toEqual([stuck.delivery.id, nearEnd.delivery.id, recent.delivery.id].sort());
    expect(listed.total_count).toBe(3);

    // day 2 is removed at the start of day 6: less than 24 h away, so it is not sent again
    problemOf(await org.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: nearEnd.delivery.id } } }), {
      status: 409,
      code: "DELIVERY_EXPIRING",
    });
    expect((await get(nearEnd.delivery.id)).data).toMatchObject({ status: "succeeded", attempt_count: 1 });
    const retried = await org.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: recent.delivery.id } } });
    expect(retried.response.status).toBe(202);
    await okReceiver.nextRequest();
    await h.server.drain();

    // a recovery reaching day 2 is refused and names the earliest `since` accepted now (day 3)
    const day3 = new Date(day0.getTime() + 3 * DAY_MS);
    const recover = (since: Date) =>
      org.api.POST("/v2/webhook_endpoints/{endpoint_id}/recover", { params: { path: { endpoint_id: ok.id } }, body: { since: since.toISOString() } });
    const refused = problemOf(await recover(new Date(day3.getTime() - 3_600_000)), { status: 409, code: "DELIVERY_EXPIRING" });
    expect(refused.detail).toContain(day3.toISOString());
    expect((await recover(day3)).response.status).toBe(202);

    // once the retrying delivery is final (its endpoint disabled), its day goes at the next run
    await org.api.PATCH("/v2/webhook_endpoints/{endpoint_id}", { params: { path: { endpoint_id: failing.id } }, body: { status: "disabled" } });
    expect((await get(stuck.delivery.id)).data).toMatchObject({ status: "failed" });
    const next = await runHousekeeping();
    expect(next.partitionsDropped.sort()).toEqual([`events_p${ymd(day1)}`, `webhook_deliveries_p${ymd(day1)}`, `webhook_delivery_attempts_p${ymd(day1)}`]);
    expect(next.partitionsKept).toEqual([]);
    problemOf(await get(stuck.delivery.id), { status: 404, code: "NOT_FOUND" });
    expect((await onlyDelivery(org.api, failing.id).catch(() => null))).toBeNull();

    // An event id is known on every day kept, and forgotten with its day (event_ids, which the
    // look-up reads, loses its rows in the transaction that drops the partition): a re-send of a
    // removed event is a new event.
    const resend = (e: { id: string }, questionSetId: string) => publish(org.api, { id: e.id, data: { question_set_id: questionSetId } });
    expect(await resend(recent.event, setOk.id), "day 4 is kept").toMatchObject({ created: false, deliveriesCreated: 0 });
    expect(await resend(first.event, setOk.id), "day 0 was removed").toMatchObject({ created: true, deliveriesCreated: 1 });
    expect(await resend(stuck.event, setFailing.id), "day 1 was removed").toMatchObject({ created: true, deliveriesCreated: 0 });
    expect(await resend(first.event, setOk.id), "stored again today").toMatchObject({ created: false, deliveriesCreated: 0 });
  });
});
