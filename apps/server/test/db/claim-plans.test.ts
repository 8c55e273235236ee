// The dispatcher's claim must cost the same whatever backlog sits on endpoints it does not take
// rows of (resting after failures, or with all their slots held): those rows are never read.
// Checked on PostgreSQL with EXPLAIN ANALYZE, counting the index entries the claim actually read,
// and with the planner's defaults (bitmap scans allowed, no statistics on the fresh backlog: a
// burst is invisible to the planner until autovacuum runs).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqlExecutor } from "../../src/db/client.js";
import { claimStatement, type ClaimRequest } from "../../src/repos/deliveries-queue.repo.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { indexParents, partitionDays, tableOf } from "../harness/partitions.js";
import { CLAIM_PARAM_TYPES, literal, nodes as planNodes, rowsRead, type PlanNode } from "../harness/plans.js";
import { endpointsSql } from "../harness/seed-sql.js";

let parentOf: (index: string | undefined) => string | undefined = (index) => index;

/**
 * Every node, its relation and index named as the partitioned table's (a day partition reads as
 * its table); a bitmap heap scan is named by the index its bitmap came from.
 */
const nodes = (plan: PlanNode): PlanNode[] =>
  planNodes(plan).map((n) => ({
    ...n,
    "Relation Name": tableOf(n["Relation Name"]),
    "Index Name": parentOf(n["Index Name"] ?? (n["Node Type"] === "Bitmap Heap Scan" ? n.Plans?.[0]?.["Index Name"] : undefined)),
  }));

/** Key lookups (by id and day): the claim's update and its events, one probe per partition a row is in. */
const KEY_INDEXES = new Set(["webhook_deliveries_pkey", "events_pkey"]);

const ORG = "0190a000-0000-7000-8000-00000000a001";
const BACKLOGGED = "0190a000-0000-7000-8000-00000000e000";
const OTHERS = [1, 2, 3, 4, 5].map((n) => `0190a000-0000-7000-8000-00000000e00${n}`);
const DUE_INDEX = "webhook_deliveries_endpoint_id_next_attempt_at_idx";

/** 20,000 due rows on one endpoint, 300 on each of five others, all due before the others' rows. */
async function seed(db: SqlExecutor): Promise<void> {
  await db.exec(`${endpointsSql(ORG, [BACKLOGGED, ...OTHERS])}
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now(),
             now() - (n % 5) * interval '1 day'
        FROM generate_series(1, 20000) n;
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', '${BACKLOGGED}', e.id, 'audit.completed', e.audit_id, false, 'pending', now() - interval '1 hour', e.created_at
        FROM events e;
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', ep, e.id, 'audit.completed', e.audit_id, false,
             CASE WHEN random() < 0.5 THEN 'pending' ELSE 'retrying' END, now() - interval '1 minute', e.created_at
        FROM (SELECT id, audit_id, created_at FROM events LIMIT 300) e, unnest(ARRAY['${OTHERS.join("', '")}']::uuid[]) ep;
  `);
}

let prepared = 0;

/**
 * The claim under EXPLAIN ANALYZE, rolled back: its plan, with the rows each node produced. The
 * engine prepares it once per connection (repos/deliveries-queue.repo.ts), so after five runs
 * PostgreSQL may keep a generic plan, planned without the parameters' values: `generic` explains
 * that plan (prepared, plan_cache_mode = force_generic_plan) rather than the custom one.
 */
async function explainClaim(db: TestDatabase["db"], r: Partial<ClaimRequest>, mode: "custom" | "generic" = "custom"): Promise<PlanNode[]> {
  // read from the live floor, as every claim after the engine's first
  const [floor] = await db.query<{ at: Date | null }>("SELECT min(created_at) AS at FROM webhook_deliveries WHERE status IN ('pending', 'retrying')");
  const { sql, params } = claimStatement(
    {
      leaseToken: "plan", limit: 50, leaseMs: 60_000, perEndpoint: 16, now: new Date(), scope: { kind: "all", streams: [] },
      busyEndpoints: new Map(), skipEndpoints: [], inFlight: [], ...r,
    },
    floor?.at ?? null,
  );
  const rollback = new Error("rollback");
  let plan: PlanNode[] = [];
  await db
    .transaction(async (tx: SqlExecutor) => {
      let explained;
      if (mode === "custom") {
        explained = await tx.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      } else {
        // PREPARE outlives the transaction's rollback: a name of its own, deallocated after
        const name = `claim_plan_test_${++prepared}`;
        await tx.exec(`SET LOCAL plan_cache_mode = force_generic_plan; PREPARE ${name}(${CLAIM_PARAM_TYPES.join(", ")}) AS ${sql}`);
        const args = params.map((p, i) => literal(p, CLAIM_PARAM_TYPES[i]!)).join(", ");
        explained = await tx.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${args})`);
        await tx.exec(`DEALLOCATE ${name}`);
      }
      plan = nodes(explained[0]!["QUERY PLAN"][0].Plan);
      throw rollback;
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  return plan;
}

/** Delivery rows the claim read (returned or filtered out) from every scan of webhook_deliveries but the primary-key lookups. */
const deliveryRowsRead = (plan: PlanNode[]) =>
  rowsRead(plan, (n) => n["Relation Name"] === "webhook_deliveries" && n["Index Name"] !== "webhook_deliveries_pkey" && n["Node Type"] !== "Bitmap Index Scan");

let t: TestDatabase | undefined;

describe.skipIf(!onPostgres).each(["custom", "generic"] as const)("dispatcher claim, %s plan (PostgreSQL only: skipped unless TEST_DATABASE_URL is set)", (mode) => {
  beforeAll(async () => {
    t = await createTestDatabase();
    // the backlog spread over five day partitions
    await partitionDays(t.db, 5);
    parentOf = await indexParents(t.db);
    await seed(t.db);
  });

  afterAll(async () => {
    await t?.close();
  });

  it("never reads the due rows of a resting endpoint", async () => {
    const plan = await explainClaim(t!.db, { skipEndpoints: [BACKLOGGED] }, mode);
    const scans = plan.filter((n) => n["Relation Name"] === "webhook_deliveries" || n["Relation Name"] === "events");
    const types = scans.filter((n) => !KEY_INDEXES.has(n["Index Name"] ?? "")).map((n) => n["Node Type"]);
    expect(scans.map((n) => n["Node Type"])).not.toContain("Seq Scan");
    expect(types).not.toContain("Seq Scan");
    expect(types).not.toContain("Bitmap Heap Scan");
    expect(plan.filter((n) => n["Relation Name"] === "webhook_deliveries" && n["Index Name"] !== "webhook_deliveries_pkey").map((n) => n["Index Name"]))
      .toEqual(expect.arrayContaining([DUE_INDEX]));
    expect(plan[0]?.["Actual Rows"]).toBe(50);
    // five endpoints: their heads and 16 rows each, plus one probe per endpoint with queued rows
    expect(deliveryRowsRead(plan)).toBeLessThan(200);
  });

  it("reads the claimed rows and their events by key in the day partitions they are in, however many days there are", async () => {
    const plan = await explainClaim(t!.db, { skipEndpoints: [BACKLOGGED] }, mode);
    const keyed = plan.filter((n) => (n["Relation Name"] === "events" || n["Relation Name"] === "webhook_deliveries") && KEY_INDEXES.has(n["Index Name"] ?? ""));
    expect(keyed.length).toBeGreaterThan(0);
    const read = (table: string) =>
      keyed.filter((n) => n["Relation Name"] === table && n["Node Type"] !== "Bitmap Index Scan")
        .reduce((sum, n) => sum + ((n["Actual Rows"] ?? 0) + (n["Rows Removed by Filter"] ?? 0) + (n["Rows Removed by Index Recheck"] ?? 0)) * (n["Actual Loops"] ?? 1), 0);
    // 50 claimed rows, each updated once; their events (at most one per row) read once each
    expect(read("webhook_deliveries")).toBe(50);
    expect(read("events")).toBeLessThanOrEqual(50);
    expect(plan.filter((n) => n["Relation Name"] === "events" && !KEY_INDEXES.has(n["Index Name"] ?? ""))).toEqual([]);
  });

  it("never reads the due rows of an endpoint whose slots this dispatcher already holds", async () => {
    const plan = await explainClaim(t!.db, { busyEndpoints: new Map([[BACKLOGGED, 16]]) }, mode);
    expect(plan[0]?.["Actual Rows"]).toBe(50);
    expect(deliveryRowsRead(plan)).toBeLessThan(200);
  });

  it("takes at most its share of the backlogged endpoint when it has room", async () => {
    const plan = await explainClaim(t!.db, {}, mode);
    expect(plan[0]?.["Actual Rows"]).toBe(50);
    expect(deliveryRowsRead(plan)).toBeLessThan(250);
  });
});
