// The claim reads the queue from the start of the day of the oldest queued row the claim before it
// saw (repos/deliveries-queue.repo.ts, CLAIM_DAYS). A row's created_at is its transaction's start,
// before its commit: a claim that found the queue empty must still see the next row in one go,
// though that row's transaction began before the empty claim ran. Reading from that claim's own
// now took two claims per event on a quiet queue (the first found nothing and looked again).
import { afterAll, beforeAll, expect, it } from "vitest";
import { deliveriesQueueRepo, type ClaimRequest } from "../../src/repos/deliveries-queue.repo.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";
import { endpointsSql } from "../harness/seed-sql.js";

const ORG = "0190a000-0000-7000-8000-00000000c001";
const ENDPOINT = "0190a000-0000-7000-8000-00000000c101";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
  await t.db.exec(endpointsSql(ORG, [ENDPOINT]));
});
afterAll(async () => {
  await t?.close();
});

const request = (now: Date, n: number): ClaimRequest => ({
  leaseToken: `floor-${n}`, limit: 10, leaseMs: 60_000, perEndpoint: 10, now, scope: { kind: "all", streams: [] },
  busyEndpoints: new Map(), skipEndpoints: [], inFlight: [],
});

/** A queued delivery whose transaction started `msBefore` ms before `at` (its created_at). */
async function queuedAt(at: Date, msBefore: number): Promise<void> {
  await t.db.query(
    `WITH ev AS (
       INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
       VALUES (gen_random_uuid(), $1, 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, $3, $3)
       RETURNING id, audit_id, created_at)
     INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at)
     SELECT gen_random_uuid(), $1, $2, ev.id, 'audit.completed', ev.audit_id, false, 'pending', ev.created_at, ev.created_at FROM ev`,
    [ORG, ENDPOINT, new Date(at.getTime() - msBefore)],
  );
}

it("When a claim found the queue empty, Then a row whose transaction began before that claim is taken by the next claim, without a second look", async () => {
  const repo = deliveriesQueueRepo(t.db);
  const first = new Date();
  expect((await repo.claim(request(first, 1))).rows).toEqual([]); // the queue is empty
  expect((await repo.claim(request(new Date(first.getTime() + 1), 2))).rows).toEqual([]); // reads from the floor the first answered
  // committed now, stamped 50 ms before the claims ran
  await queuedAt(first, 50);
  const next = await repo.claim(request(new Date(first.getTime() + 2), 3));
  expect(next.rows).toHaveLength(1);
  expect(next.lookAgain).toBe(false);
});
