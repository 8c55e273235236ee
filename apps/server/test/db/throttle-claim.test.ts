// The throttle's rule is written twice: allowance() in domain/delivery/throttle.ts (its unit test,
// test/unit/throttle.test.ts) and the claim statement's `limited` and `paced_on` steps in
// repos/deliveries-queue.repo.ts, which the engine actually runs (docs/delivery.md#rate-limits).
// Here the real claim runs on the database for a table of cases (a rate, and throttle_next_at
// set relative to the database's clock) and what it took and where it left throttle_next_at must
// be what allowance() says, so the two cannot drift apart.
//
// The claim reads its own now (clock_timestamp()), which a test cannot fix. It lies between the
// moment throttle_next_at was set (t1) and a reading after the claim returned (t2), both on the
// same clock, and allowance() never allows less, nor moves the throttle less far, at a later now:
// so the claim agrees when what it took lies between allowance() at t1 and at t2, and its new
// throttle_next_at between their after(taken). The cases keep clear of the rule's step
// boundaries, so for most of them both ends give one answer and the comparison is exact.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowance, throttleBurst } from "../../src/domain/delivery/throttle.js";
import { deliveriesQueueRepo } from "../../src/repos/deliveries-queue.repo.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";

const ORG = "0190a000-0000-7000-8000-00000000b001";
const ENDPOINT = "0190a000-0000-7000-8000-00000000be01";
/** More due rows than the largest burst (rate 1000: 100), so only the throttle limits a claim. */
const ROWS = 150;

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
  await t.db.exec(`
    INSERT INTO webhook_endpoints (id, org_id, url, status, event_types, filter_question_set_ids, filter_audit_results,
                                   payload_format, payload_fields, payload_result_format, payload_responses_filter,
                                   payload_include_informational, auth_type, auth_config, secret_enc, secret_hint, legacy_signature, rate_limit)
      VALUES ('${ENDPOINT}', '${ORG}', 'https://example.com/throttled', 'enabled', ARRAY['audit.completed'], ARRAY[]::uuid[], 'all',
              'standard_v1', ARRAY['responses'], 'normalized', 'all', false, 'none', '{}'::jsonb, '\\x01'::bytea, 'whsec_…abcd', false, 5);
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now(), now()
        FROM generate_series(1, ${ROWS});
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', '${ENDPOINT}', e.id, 'audit.completed', e.audit_id, false, 'pending', now() - interval '1 hour', e.created_at
        FROM events e;
  `);
});

afterAll(async () => {
  await t?.close();
});

/** epoch microseconds, exactly as the database keeps a timestamptz */
const US = (expr: string) => `(extract(epoch from ${expr}) * 1000000)::bigint::text`;

interface Case {
  rate: number;
  /** throttle_next_at relative to the database's now, in ms; null: never used */
  nextInMs: number | null;
}

// Per rate: idle (never used, long idle), late by less than a step, due, and ahead by part of a
// burst or more; rates whose step is not a whole number of microseconds (6, 7, 9, 333, 999) check
// the step's rounding, and 11, 100, 1000 bursts of more than one.
const CASES: Case[] = [
  { rate: 1, nextInMs: null }, { rate: 1, nextInMs: -500 }, { rate: 1, nextInMs: 500 },
  { rate: 5, nextInMs: null }, { rate: 5, nextInMs: -10_000 }, { rate: 5, nextInMs: -150 }, { rate: 5, nextInMs: -50 },
  { rate: 5, nextInMs: 50 }, { rate: 5, nextInMs: 150 },
  { rate: 6, nextInMs: null }, { rate: 6, nextInMs: -80 }, { rate: 6, nextInMs: -3_000 },
  { rate: 7, nextInMs: -70 }, { rate: 9, nextInMs: -55 },
  { rate: 11, nextInMs: null }, { rate: 11, nextInMs: 45 }, { rate: 11, nextInMs: 135 }, { rate: 11, nextInMs: -45 }, { rate: 11, nextInMs: -60_000 },
  { rate: 100, nextInMs: null }, { rate: 100, nextInMs: 45 }, { rate: 100, nextInMs: -5 }, { rate: 100, nextInMs: 150 },
  { rate: 333, nextInMs: -1_000 }, { rate: 333, nextInMs: 61.5 },
  { rate: 999, nextInMs: null }, { rate: 1000, nextInMs: null }, { rate: 1000, nextInMs: 30.5 }, { rate: 1000, nextInMs: -3_600_000 },
];

describe("the claim's throttle (SQL) and allowance() (domain/delivery/throttle.ts)", () => {
  it.each(CASES)("at rate $rate with throttle_next_at $nextInMs ms from now, the claim takes and moves on what allowance() says", async ({ rate, nextInMs }) => {
    const repo = deliveriesQueueRepo(t.db);
    // every row back in the queue, unleased: only the throttle limits what the claim takes
    await t.db.exec(`UPDATE webhook_deliveries SET locked_until = NULL, lease_owner = NULL WHERE endpoint_id = '${ENDPOINT}'`);
    const [set] = await t.db.query<{ t1: string; next: string | null }>(
      `UPDATE webhook_endpoints e
          SET rate_limit = $2,
              throttle_next_at = x.now + $3::bigint * interval '1 microsecond'
         FROM (SELECT clock_timestamp() AS now) x
        WHERE e.id = $1
      RETURNING ${US("x.now")} AS t1, ${US("e.throttle_next_at")} AS next`,
      [ENDPOINT, rate, nextInMs === null ? null : Math.round(nextInMs * 1000)],
    );
    const t1 = Number(set!.t1);
    const nextAt = set!.next === null ? null : Number(set!.next);
    if (nextInMs !== null) expect(nextAt).toBe(t1 + Math.round(nextInMs * 1000));

    const claim = await repo.claim({
      leaseToken: `throttle-claim-${rate}-${nextInMs}`, limit: 2 * ROWS, leaseMs: 60_000, now: new Date(Date.now() + 60_000),
      scope: { kind: "all", streams: [] }, perEndpoint: 2 * ROWS, busyEndpoints: new Map(), skipEndpoints: [], inFlight: [],
    });
    const [after] = await t.db.query<{ t2: string; next: string | null }>(
      `SELECT ${US("clock_timestamp()")} AS t2, ${US("throttle_next_at")} AS next FROM webhook_endpoints WHERE id = $1`,
      [ENDPOINT],
    );
    const t2 = Number(after!.t2);
    const taken = claim.rows.length;
    const earliest = allowance(rate, nextAt, t1);
    const latest = allowance(rate, nextAt, t2);
    const at = `claim between t1 and t2 = t1 + ${t2 - t1} µs`;

    expect(claim.rows.every((r) => r.endpoint_id === ENDPOINT), at).toBe(true);
    expect(taken, at).toBeGreaterThanOrEqual(earliest.allowed);
    expect(taken, at).toBeLessThanOrEqual(latest.allowed);
    expect(taken, "never more than one burst at once").toBeLessThanOrEqual(throttleBurst(rate));
    if (taken === 0) {
      // nothing taken: the throttle stays where it was
      expect(after!.next === null ? null : Number(after!.next), at).toBe(nextAt);
    } else {
      const moved = Number(after!.next);
      expect(moved, at).toBeGreaterThanOrEqual(earliest.after(taken));
      expect(moved, at).toBeLessThanOrEqual(latest.after(taken));
    }
  });
});
