// A claim reads the queue from the day of the oldest queued row that the claim before it saw
// (repos/deliveries-queue.repo.ts, CLAIM_DAYS). A delivery sent again by hand from an older day
// is below that floor: the claim the wake-up starts cannot see it, answers the lower floor, and
// the dispatcher claims again at once (Claim.lookAgain), not at its next poll.
import { beforeEach, expect, it } from "vitest";
import { uuidv7Sql } from "../../src/repos/uuidv7-sql.js";
import type { TestOrg } from "../harness/server.js";
import { endpointFor, onlyDelivery, publish, useDeliveryServer } from "./support.js";

// a poll far beyond the test's wait: only the wake-up and what follows it can send the retry
const h = await useDeliveryServer({ scheduleMs: [0], pollIntervalMs: 600_000 });
const sql = <T>(text: string, params: unknown[] = []) => h.server.server.db.query<T>(text, params);

let org: TestOrg;
beforeEach(async () => {
  org = await h.server.newOrg();
});

it("When a delivery from 12 days ago is retried by hand, Then it is sent at once though the last claim read from today", async () => {
  const r = await h.receiver({ status: 200 });
  const ep = await endpointFor(org.api, r.url);
  await publish(org.api);
  await r.nextRequest();
  await h.server.drain();
  const sent = await onlyDelivery(org.api, ep.id);
  expect(sent.status).toBe("succeeded");

  // its event and delivery moved 12 days back (into that day's partition, or the history's), the
  // delivery's id made anew for its day, as the engine makes them
  const [old] = await sql<{ id: string }>(
    `WITH moved AS (UPDATE events SET created_at = created_at - interval '12 days' WHERE id = (SELECT event_id FROM webhook_deliveries WHERE id = $1) RETURNING id)
     UPDATE webhook_deliveries SET created_at = created_at - interval '12 days', id = ${uuidv7Sql("(created_at - interval '12 days')")}
      WHERE id = $1 RETURNING id`,
    [sent.id],
  );
  // a second delivery, sent today: the engine's last claim answered a floor of today
  await publish(org.api);
  await r.nextRequest();
  await h.server.drain();

  const retried = await org.api.POST("/v2/webhook_deliveries/{delivery_id}/retry", { params: { path: { delivery_id: old!.id } } });
  expect(retried.response.status).toBe(202);
  const again = await Promise.race([
    r.nextRequest().then(() => "sent" as const),
    new Promise<"not sent">((resolve) => setTimeout(() => resolve("not sent"), 10_000).unref()),
  ]);
  expect(again).toBe("sent");
  await h.server.drain();
  const [row] = await sql<{ status: string; attempt_count: number; old: boolean }>(
    "SELECT status, attempt_count, created_at < now() - interval '11 days' AS old FROM webhook_deliveries WHERE id = $1",
    [old!.id],
  );
  expect(row).toEqual({ status: "succeeded", attempt_count: 2, old: true });
});
