// Every list's filter + order must be served by an index in list order (no Sort node), for the
// first page and for both cursor directions. Checked on PostgreSQL, the production engine; the
// planner of the embedded engine is not what matters for scale.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqlExecutor } from "../../src/db/client.js";
import { idTimeWindow } from "../../src/lib/ids.js";
import { pageSql, type Condition, type Walk } from "../../src/repos/keyset.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { indexParents, partitionDays } from "../harness/partitions.js";

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Index Cond"?: string;
  Filter?: string;
  "Relation Name"?: string;
  "Parent Relationship"?: string;
  "Subplans Removed"?: number;
  "Actual Loops"?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/**
 * EXPLAIN with sequential and bitmap scans switched off: on a handful of rows either would always
 * win, and a bitmap scan never yields order. What is left shows whether an index delivers the
 * rows in list order by itself (no Sort). With `onlyIndex`, the table's other secondary indexes
 * are dropped inside the (rolled back) transaction, so the named index alone must serve the query.
 */
async function explain(db: TestDatabase["db"], sql: string, params: unknown[], onlyIndex?: { table: string; index: string }, analyze = false): Promise<PlanNode[]> {
  const rollback = new Error("rollback");
  let plan: PlanNode[] = [];
  await db
    .transaction(async (tx: SqlExecutor) => {
      await tx.exec("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL lock_timeout = '5s'");
      if (onlyIndex) {
        const others = await tx.query<{ indexname: string }>(
          `SELECT indexname FROM pg_indexes
            WHERE schemaname = current_schema() AND tablename = $1 AND indexname LIKE '%\\_idx' AND indexname <> $2`,
          [onlyIndex.table, onlyIndex.index],
        );
        for (const { indexname } of others) await tx.exec(`DROP INDEX "${indexname}"`);
      }
      const [row] = await tx.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (${analyze ? "ANALYZE, " : ""}FORMAT JSON) ${sql}`, params);
      plan = nodes(row!["QUERY PLAN"][0].Plan);
      throw rollback;
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  return plan;
}

/** Tables partitioned by day: one scan per partition, each of the partition's copy of one index. */
const PARTITIONED = new Set(["webhook_deliveries", "events"]);
/** Partitioned, and its ids are UUIDv7 made by us: a cursor's id names its day (events' ids are the publishers'). */
const DAY_KEYED = new Set(["webhook_deliveries"]);
let parentOf: (index: string | undefined) => string | undefined = (index) => index;

/** The plan's index scans, as the (parent) index each reads; one index, in list order, no Sort. */
function expectOrderedIndexScan(plan: PlanNode[], sql: string, table: string, oneIndex = true): (string | undefined)[] {
  const types = plan.map((n) => n["Node Type"]);
  expect(types, sql).not.toContain("Sort");
  expect(types, sql).not.toContain("Incremental Sort");
  expect(types, sql).not.toContain("Seq Scan");
  expect(types, sql).not.toContain("Bitmap Heap Scan");
  const scans = plan.filter((n) => n["Node Type"] === "Index Scan" || n["Node Type"] === "Index Only Scan").map((n) => parentOf(n["Index Name"]));
  if (PARTITIONED.has(table)) {
    // several day partitions hold rows: every one of them is read through the same index
    expect(scans.length, sql).toBeGreaterThan(3);
    if (oneIndex) expect(new Set(scans).size, sql).toBe(1);
  } else {
    expect(scans, sql).toHaveLength(1);
  }
  return scans;
}

const ORG = "0190a000-0000-7000-8000-00000000a001";
const OTHER_ORG = "0190a000-0000-7000-8000-00000000a002";
const ENDPOINT = "0190a000-0000-7000-8000-00000000e001";
const AUDIT = "0190a000-0000-7000-8000-00000000c001";

interface ListCase {
  list: string;
  table: string;
  /** Extra conditions after `org_id = $1`, with their parameters. */
  filter: string;
  params: unknown[];
  index: string;
}

const cases: ListCase[] = [
  { list: "question sets", table: "question_sets", filter: "is_deleted = $2", params: [false], index: "question_sets_org_id_is_deleted_created_at_id_idx" },
  { list: "question sets by type", table: "question_sets", filter: "is_deleted = $2 AND type = $3", params: [false, "coding"], index: "question_sets_org_id_is_deleted_type_created_at_id_idx" },
  { list: "question sets by is_production", table: "question_sets", filter: "is_deleted = $2 AND is_production = $3", params: [false, true], index: "question_sets_org_id_is_deleted_is_production_created_at_id_idx" },
  { list: "coding evaluations", table: "coding_evaluations", filter: "", params: [], index: "coding_evaluations_org_id_created_at_id_idx" },
  { list: "coding evaluations by status", table: "coding_evaluations", filter: "status = $2", params: ["completed"], index: "coding_evaluations_org_id_status_created_at_id_idx" },
  { list: "coding evaluations by audit_id", table: "coding_evaluations", filter: "audit_id = $2", params: [AUDIT], index: "coding_evaluations_org_id_audit_id_created_at_id_idx" },
  { list: "coding evaluations by archived", table: "coding_evaluations", filter: "archived = $2", params: [false], index: "coding_evaluations_org_id_archived_created_at_id_idx" },
  { list: "coding evaluations created in a range", table: "coding_evaluations", filter: "created_at > $2 AND created_at < $3", params: [new Date("2020-01-01T00:00:00Z"), new Date("2099-01-01T00:00:00Z")], index: "coding_evaluations_org_id_created_at_id_idx" },
  { list: "webhook endpoints", table: "webhook_endpoints", filter: "deleted_at IS NULL", params: [], index: "webhook_endpoints_org_id_created_at_id_idx" },
  { list: "webhook endpoints by status", table: "webhook_endpoints", filter: "deleted_at IS NULL AND status = $2", params: ["enabled"], index: "webhook_endpoints_org_id_status_created_at_id_idx" },
  { list: "webhook deliveries", table: "webhook_deliveries", filter: "", params: [], index: "webhook_deliveries_org_id_created_at_id_idx" },
  { list: "webhook deliveries by endpoint_id", table: "webhook_deliveries", filter: "endpoint_id = $2", params: [ENDPOINT], index: "webhook_deliveries_org_id_endpoint_id_created_at_id_idx" },
  { list: "webhook deliveries by status", table: "webhook_deliveries", filter: "status = $2", params: ["failed"], index: "webhook_deliveries_org_id_status_created_at_id_idx" },
  { list: "webhook deliveries by event_type", table: "webhook_deliveries", filter: "event_type = $2", params: ["audit.completed"], index: "webhook_deliveries_org_id_event_type_created_at_id_idx" },
  { list: "webhook deliveries by audit_id", table: "webhook_deliveries", filter: "audit_id = $2", params: [AUDIT], index: "webhook_deliveries_org_id_audit_id_created_at_id_idx" },
  { list: "events", table: "events", filter: "", params: [], index: "events_org_id_created_at_id_idx" },
  { list: "events by type", table: "events", filter: "type = $2", params: ["audit.completed"], index: "events_org_id_type_created_at_id_idx" },
  { list: "events by audit_id", table: "events", filter: "audit_id = $2", params: [AUDIT], index: "events_org_id_audit_id_created_at_id_idx" },
  { list: "events created in a range", table: "events", filter: "created_at > $2 AND created_at < $3", params: [new Date("2020-01-01T00:00:00Z"), new Date("2099-01-01T00:00:00Z")], index: "events_org_id_created_at_id_idx" },
  { list: "events by type created in a range", table: "events", filter: "type = $2 AND created_at > $3", params: ["audit.completed", new Date("2020-01-01T00:00:00Z")], index: "events_org_id_type_created_at_id_idx" },
];

type Page = "first page" | "starting_after" | "ending_before";

function listQuery(c: ListCase, page: Page): { sql: string; params: unknown[] } {
  const where = ["org_id = $1", ...(c.filter ? [c.filter] : [])];
  const params: unknown[] = [ORG, ...c.params];
  let order = "created_at DESC, id DESC";
  if (page !== "first page") {
    const a = params.length + 1;
    // starting_after → older items; ending_before → newer items, read upwards and reversed in code.
    where.push(page === "starting_after" ? `(created_at, id) < ($${a}, $${a + 1})` : `(created_at, id) > ($${a}, $${a + 1})`);
    params.push(new Date("2026-06-01T00:00:00.000Z"), "0190a000-0000-7000-8000-0000000000ff");
    if (page === "ending_before") order = "created_at ASC, id ASC";
  }
  return { sql: `SELECT * FROM ${c.table} WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT 11`, params };
}

/** A UUIDv7 carrying the time `at` (SQL), as publishing stamps deliveries. */
const uuidv7Of = (at: string) => `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
  substring(int8send(floor(extract(epoch from ${at}) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`;

async function seed(db: SqlExecutor): Promise<void> {
  // A few rows in two orgs, spread over time, so every index has something to order.
  await db.exec(`
    INSERT INTO question_sets (id, org_id, set_name, set_code, type, is_production, is_deleted, allow_doc_upload, thresholds, created_at)
      SELECT gen_random_uuid(), org, 'Set ' || n, 'S' || n, CASE WHEN n % 2 = 0 THEN 'coding' ELSE 'quality' END,
             n % 3 = 0, n % 5 = 0, false, '[]'::jsonb, now() - n * interval '1 hour'
        FROM generate_series(1, 40) n, (VALUES ('${ORG}'), ('${OTHER_ORG}')) o(org);
    INSERT INTO coding_evaluations (id, org_id, audit_id, status, processed, needs_em_eval, em_eval_created, needs_icd_eval,
                                    icd_eval_created, marked_reviewed, archived, redacted, cold, created_at)
      SELECT gen_random_uuid(), org, CASE WHEN n % 4 = 0 THEN '${AUDIT}'::uuid END,
             CASE WHEN n % 2 = 0 THEN 'completed' ELSE 'pending' END, true, false, false, false, false, false,
             n % 3 = 0, false, false, now() - n * interval '1 hour'
        FROM generate_series(1, 40) n, (VALUES ('${ORG}'), ('${OTHER_ORG}')) o(org);
    INSERT INTO webhook_endpoints (id, org_id, url, status, event_types, filter_question_set_ids, filter_audit_results,
                                   payload_format, payload_fields, payload_result_format, payload_responses_filter,
                                   payload_include_informational, auth_type, auth_config, secret_enc, secret_hint,
                                   legacy_signature, created_at)
      SELECT CASE WHEN n = 1 AND org = '${ORG}' THEN '${ENDPOINT}'::uuid ELSE gen_random_uuid() END, org,
             'https://example.com/' || n, CASE WHEN n % 2 = 0 THEN 'enabled' ELSE 'disabled' END,
             ARRAY['audit.completed'], ARRAY[]::uuid[], 'all', 'standard_v1', ARRAY['responses'], 'normalized', 'all',
             false, 'none', '{}'::jsonb, '\\x01'::bytea, 'whsec_…abcd', false, now() - n * interval '1 hour'
        FROM generate_series(1, 20) n, (VALUES ('${ORG}'), ('${OTHER_ORG}')) o(org);
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
      SELECT gen_random_uuid(), org, 'audit.completed', '${AUDIT}', gen_random_uuid(), 'passed', '[]'::jsonb, now(),
             now() - n * interval '6 hours'
        FROM generate_series(1, 20) n, (VALUES ('${ORG}'), ('${OTHER_ORG}')) o(org);
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status,
                                    next_attempt_at, created_at)
      SELECT ${uuidv7Of("e.created_at")}, e.org_id, ep.id, e.id, 'audit.completed', e.audit_id, false,
             CASE WHEN random() < 0.5 THEN 'failed' ELSE 'succeeded' END, now(), e.created_at
        FROM events e JOIN webhook_endpoints ep ON ep.org_id = e.org_id;
    ANALYZE;
  `);
}

let t: TestDatabase | undefined;

describe.skipIf(!onPostgres)("keyset list plans (PostgreSQL only: skipped unless TEST_DATABASE_URL is set)", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    // deliveries over the last 5 days, in that many day partitions (and the history before them)
    await partitionDays(t.db, 4);
    parentOf = await indexParents(t.db);
    await seed(t.db);
  });

  afterAll(async () => {
    await t?.close();
  });

  const pages: Page[] = ["first page", "starting_after", "ending_before"];
  for (const c of cases) {
    for (const page of pages) {
      it(`${c.list}, ${page}: ${c.index} serves it as an ordered index scan`, async () => {
        const { sql, params } = listQuery(c, page);
        const [scan] = expectOrderedIndexScan(await explain(t!.db, sql, params, { table: c.table, index: c.index }), sql, c.table);
        expect(scan, sql).toBe(c.index);
        // With every index present the planner may pick another one, but never one that needs a Sort.
        // (On a partitioned table each partition may get its own choice.)
        expectOrderedIndexScan(await explain(t!.db, sql, params), sql, c.table, false);
      });
    }
  }

  // The product's own statements (repos/keyset.ts): the cursor is a row comparison against a
  // subselect, which must become the list index's start key, never a filter over the whole list.
  const productCases: Array<{ list: string; table: string; conditions: Condition[]; index: string }> = [
    { list: "coding evaluations", table: "coding_evaluations", conditions: [], index: "coding_evaluations_org_id_created_at_id_idx" },
    { list: "coding evaluations by status", table: "coding_evaluations", conditions: [{ column: "status", op: "=", value: "completed" }], index: "coding_evaluations_org_id_status_created_at_id_idx" },
    { list: "question sets", table: "question_sets", conditions: [{ column: "is_deleted", op: "=", value: false }], index: "question_sets_org_id_is_deleted_created_at_id_idx" },
    { list: "webhook deliveries", table: "webhook_deliveries", conditions: [], index: "webhook_deliveries_org_id_created_at_id_idx" },
    { list: "events", table: "events", conditions: [], index: "events_org_id_created_at_id_idx" },
    { list: "events by audit_id", table: "events", conditions: [{ column: "audit_id", op: "=", value: AUDIT }], index: "events_org_id_audit_id_created_at_id_idx" },
  ];
  for (const c of productCases) {
    for (const walk of ["older", "newer"] as Walk[]) {
      it(`${c.list}, product statement walking ${walk}: the cursor is the start key of ${c.index}`, async () => {
        const [cursor] = await t!.db.query<{ id: string }>(`SELECT id FROM ${c.table} WHERE org_id = $1 ORDER BY created_at DESC LIMIT 1 OFFSET 5`, [ORG]);
        const sql = pageSql({ table: c.table, columns: "t.id", dayPartitioned: DAY_KEYED.has(c.table) }, c.conditions, walk, 11);
        const w = idTimeWindow(cursor!.id);
        const window = DAY_KEYED.has(c.table) ? [w!.from, w!.until] : [];
        const plan = await explain(t!.db, sql, [ORG, ...c.conditions.map((k) => k.value), cursor!.id, ...window], { table: c.table, index: c.index }, true);
        const types = plan.map((n) => n["Node Type"]);
        expect(types, sql).not.toContain("Sort");
        expect(types, sql).not.toContain("Seq Scan");
        const keyed = plan.filter((n) => parentOf(n["Index Name"]) === c.index && /ROW\(created_at, id\) [<>] ROW\(/.test(n["Index Cond"] ?? ""));
        expect(keyed.length, sql).toBeGreaterThan(0);
        for (const scan of keyed) expect(scan["Index Cond"], sql).toMatch(/ROW\(created_at, id\) [<>] ROW\(\$\d+, \$\d+\)/);
        expect(plan.filter((n) => /ROW\(created_at, id\)/.test(n.Filter ?? "")), sql).toEqual([]);
        if (DAY_KEYED.has(c.table)) {
          // the cursor's UUIDv7 names its day: the lookup reads at most three of the day partitions
          // (pruned as it runs: the others are in the plan, never executed)
          const lookup = plan.find((n) => n["Parent Relationship"] === "InitPlan" && nodes(n).some((k) => k["Relation Name"] !== undefined))!;
          const read = nodes(lookup).filter((n) => n["Relation Name"] !== undefined && (n["Actual Loops"] ?? 0) > 0);
          expect(read.length, sql).toBeLessThanOrEqual(3);
        }
      });
    }
  }
});
