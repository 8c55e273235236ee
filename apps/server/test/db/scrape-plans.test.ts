// The metrics scrape reads the database at every scrape of every process: its statements must cost
// the same however large the tables grow. Checked on PostgreSQL with EXPLAIN ANALYZE, counting the
// index entries each statement actually read, with the planner's defaults.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqlExecutor } from "../../src/db/client.js";
import { disabledEndpointsStatement, queueStatsRepo, queueStatsStatement } from "../../src/repos/queue-stats.repo.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { indexParents, tableOf } from "../harness/partitions.js";
import { nodes, rowsRead as rowsReadBy, type PlanNode } from "../harness/plans.js";

// webhook_deliveries is partitioned by day: a partition's scan reads as its table's, with its table's index names
let parentOf: (index: string | undefined) => string | undefined = (index) => index;

const ORG = "0190a000-0000-7000-8000-00000000a001";
const BACKLOGGED = "0190a000-0000-7000-8000-00000000e000";
const LATER = "0190a000-0000-7000-8000-00000000e0ff";
const OTHERS = [1, 2, 3, 4, 5].map((n) => `0190a000-0000-7000-8000-00000000e00${n}`);
const DUE_INDEX = "webhook_deliveries_endpoint_id_next_attempt_at_idx";
const DISABLED_INDEX = "webhook_endpoints_disabled_reason_idx";
const NOW = new Date("2026-11-25T12:00:00.000Z");

/**
 * 20,000 due rows on one endpoint, 300 on each of five others, 20,000 retries due only tomorrow on
 * a seventh; 5,000 more endpoints, of which 10 are disabled (and 5 more disabled but deleted).
 */
async function seed(db: SqlExecutor): Promise<void> {
  const endpoint = (ids: string, status = "'enabled'", reason = "NULL", deleted = "NULL") => `
    INSERT INTO webhook_endpoints (id, org_id, url, status, disabled_reason, deleted_at, event_types, filter_question_set_ids, filter_audit_results,
                                   payload_format, payload_fields, payload_result_format, payload_responses_filter,
                                   payload_include_informational, auth_type, auth_config, secret_enc, secret_hint, legacy_signature)
      SELECT id, '${ORG}', 'https://example.com/' || id, ${status}, ${reason}, ${deleted}, ARRAY['audit.completed'], ARRAY[]::uuid[], 'all',
             'standard_v1', ARRAY['responses'], 'normalized', 'all', false, 'none', '{}'::jsonb, '\\x01'::bytea, 'whsec_…abcd', false
        FROM ${ids};`;
  const deliveries = (endpointIds: string, status: string, due: string, limit = "") => `
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at)
      SELECT gen_random_uuid(), '${ORG}', ep, e.id, 'audit.completed', e.audit_id, false, ${status}, ${due}
        FROM (SELECT id, audit_id FROM events ${limit}) e, unnest(ARRAY[${endpointIds}]::uuid[]) ep;`;
  await db.exec(`
    ${endpoint(`unnest(ARRAY['${BACKLOGGED}', '${LATER}', '${OTHERS.join("', '")}']::uuid[]) id`)}
    ${endpoint("(SELECT gen_random_uuid() id FROM generate_series(1, 5000)) g")}
    ${endpoint("(SELECT gen_random_uuid() id FROM generate_series(1, 10)) g", "'disabled'", "CASE WHEN random() < 0.5 THEN 'gone' ELSE 'failing' END")}
    ${endpoint("(SELECT gen_random_uuid() id FROM generate_series(1, 5)) g", "'disabled'", "'manual'", "now()")}
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at)
      SELECT gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now()
        FROM generate_series(1, 20000);
    ${deliveries(`'${BACKLOGGED}'`, "'pending'", `'${NOW.toISOString()}'::timestamptz - interval '1 hour'`)}
    ${deliveries(`'${LATER}'`, "'retrying'", `'${NOW.toISOString()}'::timestamptz + interval '1 day'`)}
    ${deliveries(`'${OTHERS.join("', '")}'`, "CASE WHEN random() < 0.5 THEN 'pending' ELSE 'retrying' END", `'${NOW.toISOString()}'::timestamptz - interval '1 minute'`, "LIMIT 300")}
    ${deliveries(`'${OTHERS[0]}'`, "'succeeded'", `'${NOW.toISOString()}'::timestamptz - interval '2 hours'`, "OFFSET 300 LIMIT 5000")}
  `);
}

async function explain(db: SqlExecutor, { sql, params }: { sql: string; params: unknown[] }): Promise<PlanNode[]> {
  const [row] = await db.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
  return nodes(row!["QUERY PLAN"][0].Plan).map((n) => ({ ...n, "Relation Name": tableOf(n["Relation Name"]), "Index Name": parentOf(n["Index Name"]) }));
}

/** Rows a statement read (returned or filtered out) from the scans of `relation`. */
const rowsRead = (plan: PlanNode[], relation: string) => rowsReadBy(plan, (n) => n["Relation Name"] === relation);

const QUEUED_DAY_INDEX = "webhook_deliveries_queued_day_idx";
const scans = (plan: PlanNode[], relation: string) => plan.filter((n) => n["Relation Name"] === relation);

let t: TestDatabase | undefined;

describe.skipIf(!onPostgres)("metrics scrape plans (PostgreSQL only: skipped unless TEST_DATABASE_URL is set)", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    await seed(t.db);
    parentOf = await indexParents(t.db);
  });

  afterAll(async () => {
    await t?.close();
  });

  it("counts due rows up to its cap through the per-endpoint due index, never reading the rows due later", async () => {
    const plan = await explain(t!.db, queueStatsStatement(NOW, 500));
    // but for the live floor's probe of its own index (repos/delivery-sql.ts), which bounds the
    // day partitions read: an index scan, not index-only, as each row's day is checked against it
    const deliveryScans = scans(plan, "webhook_deliveries").filter((n) => n["Index Name"] !== QUEUED_DAY_INDEX);
    expect(new Set(deliveryScans.map((n) => n["Node Type"]))).toEqual(new Set(["Index Scan"]));
    expect(new Set(deliveryScans.map((n) => n["Index Name"]))).toEqual(new Set([DUE_INDEX]));
    // the cap, one head per queued endpoint, one probe per queued endpoint (7) and the end of the walk
    expect(rowsRead(plan, "webhook_deliveries")).toBeLessThan(500 + 3 * 7 + 10);
  });

  it("counts every due row under a cap above them, and finds the oldest, reading no row due later", async () => {
    const stats = await queueStatsRepo(t!.db).queue(NOW, 100_000);
    expect(stats.dueRows).toBe(20_000 + 5 * 300);
    expect(stats.oldestDueAt?.toISOString()).toBe(new Date(NOW.getTime() - 3600_000).toISOString());
    const plan = await explain(t!.db, queueStatsStatement(NOW, 100_000));
    expect(rowsRead(plan, "webhook_deliveries")).toBeLessThan(21_500 + 3 * 7 + 10);
  });

  it("counts disabled endpoints by reason from the disabled-endpoint index alone", async () => {
    const plan = await explain(t!.db, disabledEndpointsStatement());
    const endpointScans = scans(plan, "webhook_endpoints");
    expect(endpointScans.map((n) => n["Index Name"])).toEqual([DISABLED_INDEX]);
    expect(rowsRead(plan, "webhook_endpoints")).toBe(10);
    const counts = await queueStatsRepo(t!.db).disabledEndpoints();
    expect((counts.get("gone") ?? 0) + (counts.get("failing") ?? 0)).toBe(10);
    expect(counts.get("manual")).toBeUndefined();
  });
});
