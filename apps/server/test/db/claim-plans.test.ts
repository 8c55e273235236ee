// The dispatcher's claim must cost the same whatever backlog sits on endpoints it does not take
// rows of (resting after failures, or with all their slots held): those rows are never read.
// Checked on PostgreSQL with EXPLAIN ANALYZE, counting the index entries the claim actually read,
// and with the planner's defaults (bitmap scans allowed, no statistics on the fresh backlog: a
// burst is invisible to the planner until autovacuum runs).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqlExecutor } from "../../src/db/client.js";
import { claimStatement, type ClaimRequest } from "../../src/repos/deliveries-queue.repo.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { nodes, rowsRead, type PlanNode } from "../harness/plans.js";

const ORG = "0190a000-0000-7000-8000-00000000a001";
const BACKLOGGED = "0190a000-0000-7000-8000-00000000e000";
const OTHERS = [1, 2, 3, 4, 5].map((n) => `0190a000-0000-7000-8000-00000000e00${n}`);
const DUE_INDEX = "webhook_deliveries_endpoint_id_next_attempt_at_idx";

/** 20,000 due rows on one endpoint, 300 on each of five others, all due before the others' rows. */
async function seed(db: SqlExecutor): Promise<void> {
  await db.exec(`
    INSERT INTO webhook_endpoints (id, org_id, url, status, event_types, filter_question_set_ids, filter_audit_results,
                                   payload_format, payload_fields, payload_result_format, payload_responses_filter,
                                   payload_include_informational, auth_type, auth_config, secret_enc, secret_hint, legacy_signature)
      SELECT id, '${ORG}', 'https://example.com/' || id, 'enabled', ARRAY['audit.completed'], ARRAY[]::uuid[], 'all',
             'standard_v1', ARRAY['responses'], 'normalized', 'all', false, 'none', '{}'::jsonb, '\\x01'::bytea, 'whsec_…abcd', false
        FROM unnest(ARRAY['${BACKLOGGED}', '${OTHERS.join("', '")}']::uuid[]) id;
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at)
      SELECT gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now()
        FROM generate_series(1, 20000);
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at)
      SELECT gen_random_uuid(), '${ORG}', '${BACKLOGGED}', e.id, 'audit.completed', e.audit_id, false, 'pending', now() - interval '1 hour'
        FROM events e;
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at)
      SELECT gen_random_uuid(), '${ORG}', ep, e.id, 'audit.completed', e.audit_id, false,
             CASE WHEN random() < 0.5 THEN 'pending' ELSE 'retrying' END, now() - interval '1 minute'
        FROM (SELECT id, audit_id FROM events LIMIT 300) e, unnest(ARRAY['${OTHERS.join("', '")}']::uuid[]) ep;
  `);
}

/** The claim under EXPLAIN ANALYZE, rolled back: its plan, with the rows each node produced. */
async function explainClaim(db: TestDatabase["db"], r: Partial<ClaimRequest>): Promise<PlanNode[]> {
  const { sql, params } = claimStatement({
    leaseToken: "plan", limit: 50, leaseMs: 60_000, now: new Date(), perEndpoint: 16,
    busyEndpoints: new Map(), skipEndpoints: [], inFlight: [], ...r,
  });
  const rollback = new Error("rollback");
  let plan: PlanNode[] = [];
  await db
    .transaction(async (tx: SqlExecutor) => {
      const [row] = await tx.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      plan = nodes(row!["QUERY PLAN"][0].Plan);
      throw rollback;
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  return plan;
}

/** Delivery rows the claim read (returned or filtered out) from every scan of webhook_deliveries but the primary-key lookups. */
const deliveryRowsRead = (plan: PlanNode[]) =>
  rowsRead(plan, (n) => n["Relation Name"] === "webhook_deliveries" && n["Index Name"] !== "webhook_deliveries_pkey");

let t: TestDatabase | undefined;

describe.skipIf(!onPostgres)("dispatcher claim plan (PostgreSQL only: skipped unless TEST_DATABASE_URL is set)", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    await seed(t.db);
  });

  afterAll(async () => {
    await t?.close();
  });

  it("never reads the due rows of a resting endpoint", async () => {
    const plan = await explainClaim(t!.db, { skipEndpoints: [BACKLOGGED] });
    const types = plan.filter((n) => n["Relation Name"] === "webhook_deliveries" || n["Relation Name"] === "events").map((n) => n["Node Type"]);
    expect(types).not.toContain("Seq Scan");
    expect(types).not.toContain("Bitmap Heap Scan");
    expect(plan.filter((n) => n["Relation Name"] === "webhook_deliveries" && n["Index Name"] !== "webhook_deliveries_pkey").map((n) => n["Index Name"]))
      .toEqual(expect.arrayContaining([DUE_INDEX]));
    expect(plan[0]?.["Actual Rows"]).toBe(50);
    // five endpoints: their heads and 16 rows each, plus one probe per endpoint with queued rows
    expect(deliveryRowsRead(plan)).toBeLessThan(200);
  });

  it("never reads the due rows of an endpoint whose slots this dispatcher already holds", async () => {
    const plan = await explainClaim(t!.db, { busyEndpoints: new Map([[BACKLOGGED, 16]]) });
    expect(plan[0]?.["Actual Rows"]).toBe(50);
    expect(deliveryRowsRead(plan)).toBeLessThan(200);
  });

  it("takes at most its share of the backlogged endpoint when it has room", async () => {
    const plan = await explainClaim(t!.db, {});
    expect(plan[0]?.["Actual Rows"]).toBe(50);
    expect(deliveryRowsRead(plan)).toBeLessThan(250);
  });
});
