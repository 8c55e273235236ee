// A batch of outcomes mixes endpoints. The failures of one endpoint are recorded in a transaction
// that locks that endpoint's row (the health rule); the other endpoints' successes are one
// statement beside it. They must not wait for that lock (PostgreSQL only: on PGlite one
// connection serialises everything anyway), and when one of the two cannot be written, each
// outcome must be reported by what its own half did (docs/delivery.md#recording-outcomes).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../src/lib/ids.js";
import { deliveriesQueueRepo, type OutcomeRecord } from "../../src/repos/deliveries-queue.repo.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { endpointsSql } from "../harness/seed-sql.js";

const ORG = "0190a000-0000-7000-8000-00000000a001";
const HEALTHY = "0190a000-0000-7000-8000-00000000e001";
const FAILING = "0190a000-0000-7000-8000-00000000e002";

let t: TestDatabase | undefined;

async function seed(): Promise<void> {
  await t!.db.exec(SEED);
}

const SEED = `${endpointsSql(ORG, [HEALTHY, FAILING])}
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at)
      VALUES (gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now());
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at)
      SELECT gen_random_uuid(), '${ORG}', ep, e.id, 'audit.completed', e.audit_id, false, 'pending', now() - interval '1 second'
        FROM events e, unnest(ARRAY['${HEALTHY}', '${FAILING}']::uuid[]) ep;
  `;

/** Claims both seeded rows and builds an outcome for each: a success for HEALTHY, a retrying failure for FAILING. */
async function claimBoth(queue: ReturnType<typeof deliveriesQueueRepo>, now: Date) {
  const claim = await queue.claim({
    leaseToken: "lease", limit: 10, leaseMs: 60_000, now, scope: { kind: "all", streams: [] }, perEndpoint: 4,
    busyEndpoints: new Map(), skipEndpoints: [], inFlight: [],
  });
  expect(claim.rows).toHaveLength(2);
  return (endpointId: string): OutcomeRecord => {
    const row = claim.rows.find((r) => r.endpoint_id === endpointId)!;
    const ok = endpointId === HEALTHY;
    return {
      deliveryId: row.id, createdAt: row.created_at, endpointId, leaseToken: "lease", at: now,
      update: {
        status: ok ? "succeeded" : "retrying", attempt_count: 1, next_attempt_at: ok ? null : new Date(now.getTime() + 60_000),
        last_response_status: ok ? 200 : 500, last_error_code: ok ? null : "unexpected_status", last_error_message: ok ? null : "500",
        delivered_at: ok ? now : null, next_trigger: "scheduled",
      },
      effect: ok ? "healthy" : "failing",
      attempt: { id: newId(), trigger: "scheduled", url: "https://example.com/", started_at: now, duration_ms: 3, response_body: null },
    };
  };
}

/** Both seeded deliveries back to pending and due, with no attempts. */
async function unrecorded(): Promise<void> {
  await t!.db.exec(`
    DELETE FROM webhook_delivery_attempts;
    UPDATE webhook_deliveries SET status = 'pending', attempt_count = 0, next_attempt_at = now() - interval '1 second',
           locked_until = NULL, lease_owner = NULL, delivered_at = NULL;`);
}

/** What is stored for an endpoint's delivery: its status and how many attempt rows it has. */
async function storedOf(endpointId: string) {
  const [row] = await t!.db.query<{ status: string; attempt_count: number; attempts: number }>(
    `SELECT d.status, d.attempt_count, (SELECT count(*)::int FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
       FROM webhook_deliveries d WHERE d.endpoint_id = $1`,
    [endpointId],
  );
  return row!;
}

describe("recording a batch whose one half cannot be written", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    await seed();
  });

  afterAll(async () => {
    await t?.close();
  });

  it.each([
    ["the failures' transaction", FAILING],
    ["the successes' statement", HEALTHY],
  ])("When %s fails, Then the other half is written and reported written, and the failed half is reported failed and nothing of it is stored", async (_half, broken) => {
    await unrecorded();
    // A real failure inside the database: the attempt row of one endpoint cannot be inserted.
    await t!.db.exec(`
      CREATE OR REPLACE FUNCTION refuse_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'attempt rows of this endpoint are refused'; END $$;
      DROP TRIGGER IF EXISTS refuse_attempt ON webhook_delivery_attempts;
      CREATE TRIGGER refuse_attempt BEFORE INSERT ON webhook_delivery_attempts
        FOR EACH ROW WHEN (NEW.endpoint_id = '${broken}') EXECUTE FUNCTION refuse_attempt();
    `);
    try {
      const queue = deliveriesQueueRepo(t!.db);
      const outcome = await claimBoth(queue, new Date());
      const results = await queue.recordBatch([outcome(HEALTHY), outcome(FAILING)], 3_600_000);

      const written = broken === FAILING ? HEALTHY : FAILING;
      const reported = new Map([[HEALTHY, results[0]!], [FAILING, results[1]!]]);
      // the failure written starts its endpoint's streak: its one notification is reported with it
      const notices = written === FAILING ? [{ type: "webhook_endpoint.failing", endpointId: FAILING }] : [];
      expect(reported.get(written)).toEqual({ status: "fulfilled", value: { recorded: true, disabled: null, notices } });
      expect(reported.get(broken)).toMatchObject({ status: "rejected", reason: expect.objectContaining({ message: expect.stringContaining("refused") }) });
      // what is reported is what is stored
      expect(await storedOf(written)).toEqual({ status: written === HEALTHY ? "succeeded" : "retrying", attempt_count: 1, attempts: 1 });
      expect(await storedOf(broken)).toEqual({ status: "pending", attempt_count: 0, attempts: 0 });
    } finally {
      await t!.db.exec("DROP TRIGGER IF EXISTS refuse_attempt ON webhook_delivery_attempts;");
    }
  });
  it("When a batch that committed is written again (its answer was lost with its connection), Then its outcomes are reported recorded and nothing is stored twice", async () => {
    await unrecorded();
    const queue = deliveriesQueueRepo(t!.db);
    const outcome = await claimBoth(queue, new Date());
    const batch = [outcome(HEALTHY), outcome(FAILING)];
    const written = [
      { status: "fulfilled", value: { recorded: true, disabled: null, notices: [] } },
      { status: "fulfilled", value: { recorded: true, disabled: null, notices: [] } },
    ];
    expect(await queue.recordBatch(batch, 3_600_000)).toEqual(written);
    expect(await queue.recordBatch(batch, 3_600_000)).toEqual(written);
    expect(await storedOf(HEALTHY)).toEqual({ status: "succeeded", attempt_count: 1, attempts: 1 });
    expect(await storedOf(FAILING)).toEqual({ status: "retrying", attempt_count: 1, attempts: 1 });

    // another claim's outcome for a row it does not hold is still not recorded
    const stranger = { ...outcome(HEALTHY), leaseToken: "another lease", attempt: { ...outcome(HEALTHY).attempt!, id: newId() } };
    expect(await queue.recordBatch([stranger], 3_600_000)).toEqual([{ status: "fulfilled", value: { recorded: false, disabled: null, notices: [] } }]);
  });
});

describe.skipIf(!onPostgres)("recording a batch (PostgreSQL only: skipped unless TEST_DATABASE_URL is set)", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    await seed();
  });

  afterAll(async () => {
    await t?.close();
  });

  it("When one endpoint's row is locked, Then another endpoint's successes in the same batch are recorded without waiting for it", async () => {
    const queue = deliveriesQueueRepo(t!.db);
    const outcome = await claimBoth(queue, new Date());

    // Another transaction holds the failing endpoint's row (a PATCH of it, say) until released.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = t!.db.transaction(async (tx) => {
      await tx.query("SELECT id FROM webhook_endpoints WHERE id = $1 FOR UPDATE", [FAILING]);
      locked();
      await released;
    });
    await isLocked;

    const recording = queue.recordBatch([outcome(HEALTHY), outcome(FAILING)], 3_600_000);
    const statusOf = async (endpointId: string) =>
      (await t!.db.query<{ status: string }>("SELECT status FROM webhook_deliveries WHERE endpoint_id = $1", [endpointId]))[0]!.status;
    try {
      await expect.poll(() => statusOf(HEALTHY), { timeout: 5_000, interval: 20 }).toBe("succeeded");
      expect(await statusOf(FAILING)).toBe("pending");
    } finally {
      release();
      await holder;
    }
    expect(await recording).toEqual([
      { status: "fulfilled", value: { recorded: true, disabled: null, notices: [] } },
      // its streak began once the lock was released: the one failing notification, with it
      { status: "fulfilled", value: { recorded: true, disabled: null, notices: [{ type: "webhook_endpoint.failing", endpointId: FAILING }] } },
    ]);
    expect(await statusOf(FAILING)).toBe("retrying");
  });
});
