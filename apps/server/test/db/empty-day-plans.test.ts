// The engine's connections keep one plan per statement for their whole life (force_generic_plan,
// db/postgres.ts). A plan made while today's partition was empty, as on a fresh database or in
// the first minutes of a day before autovacuum analyzes it, must still read the partition by its
// indexes once it holds thousands of queued rows: before sequential scans were turned off on those
// connections, the claim scanned the whole partition at every probe (6,250 buffers a claim in the
// bench) until some ANALYZE happened to invalidate the plan. PostgreSQL only.
import { afterAll, expect, it } from "vitest";
import { openDatabase, type Database, type SqlExecutor } from "../../src/db/client.js";
import { claimStatement, deliveriesQueueRepo, type ClaimRequest } from "../../src/repos/deliveries-queue.repo.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { partitionDays } from "../harness/partitions.js";
import { CLAIM_PARAM_TYPES, literal, nodes, type PlanNode } from "../harness/plans.js";
import { endpointsSql } from "../harness/seed-sql.js";

const ORG = "0190a000-0000-7000-8000-00000000b001";
const ENDPOINTS = [1, 2, 3, 4, 5].map((n) => `0190a000-0000-7000-8000-00000000b10${n}`);

let t: TestDatabase | undefined;
let engine: Database | undefined;

const request = (r: Partial<ClaimRequest> = {}): ClaimRequest => ({
  leaseToken: "plan", limit: 50, leaseMs: 60_000, perEndpoint: 8, now: new Date(), scope: { kind: "all", streams: [] },
  busyEndpoints: new Map(), skipEndpoints: [], inFlight: [], ...r,
});

/** 4,000 queued deliveries of today, 800 per endpoint, with their events: no ANALYZE after. */
async function fillToday(db: SqlExecutor): Promise<void> {
  await db.exec(`
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now(), now()
        FROM generate_series(1, 800);
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', ep, e.id, 'audit.completed', e.audit_id, false, 'pending', now() - interval '1 minute', e.created_at
        FROM events e, unnest(ARRAY['${ENDPOINTS.join("', '")}']::uuid[]) ep;`);
}

it.skipIf(!onPostgres)("When the engine planned its claim on an empty day, Then the day's partition is still read by its indexes once it fills", async () => {
  t = await createTestDatabase();
  await partitionDays(t.db, 3);
  await t.db.exec(endpointsSql(ORG, ENDPOINTS));
  await t.db.exec("VACUUM (ANALYZE) webhook_deliveries, events");
  // the engine's own connection settings, one connection: the plan made below is the one kept
  engine = await openDatabase({ databaseUrl: t.databaseUrl!, poolSize: 1, genericPlans: true });
  const queue = deliveriesQueueRepo(engine);
  expect((await queue.claim(request())).rows).toEqual([]); // planned now, on the empty partitions

  await fillToday(t.db);
  const { sql, params, name } = claimStatement(request(), new Date(Date.now() - 3_600_000));
  const rollback = new Error("rollback");
  let plan: PlanNode[] = [];
  await engine
    .transaction(async (tx) => {
      // the same connection's prepared claim, with the plan it kept (its text is the repository's)
      expect(sql).toContain("WITH RECURSIVE");
      const args = params.map((p, i) => literal(p, CLAIM_PARAM_TYPES[i]!)).join(", ");
      const [out] = await tx.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${args})`);
      plan = nodes(out!["QUERY PLAN"][0].Plan);
      throw rollback;
    })
    .catch((err: unknown) => {
      if (err !== rollback) throw err;
    });
  expect(plan[0]?.["Actual Rows"]).toBe(40); // 8 of each of the 5 endpoints
  const seqScans = plan.filter((n) => n["Node Type"] === "Seq Scan" && /^(webhook_deliveries|events)/.test(n["Relation Name"] ?? "")).map((n) => n["Relation Name"]);
  expect(seqScans).toEqual([]);
});

afterAll(async () => {
  await engine?.close();
  await t?.close();
});
