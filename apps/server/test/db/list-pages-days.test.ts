// A list's pages must cost the same with 2 day partitions and with 40. Their statements order
// every kept day newest first; unbounded, PostgreSQL sets up a scan of every day partition each
// time it runs one (0.43 against 0.33 ms a first page over 46 days against 9, bench/NOTES.md). The
// first page reads the recent days first (repos/keyset.ts, `recentFrom`), a page after a cursor
// the days its cursor's id names (`plansKept`, on connections that keep their plans): only those
// days' scans are set up, in the plan made for the values and in the one PostgreSQL keeps. And
// each page is the list's page whatever those days hold: a quiet org's rows from ten days ago are
// still on its first page, and the page after the last of a day's rows goes on into the days before.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openGenericReads, type Database, type SqlExecutor } from "../../src/db/client.js";
import { DAY_MS, dayStart } from "../../src/domain/retention.js";
import { InvalidCursorError } from "../../src/lib/errors.js";
import { uuidv7Millis } from "../../src/lib/ids.js";
import { createCountCache } from "../../src/repos/count-cache.js";
import { eventsRepo } from "../../src/repos/events.repo.js";
import { webhookDeliveriesRepo } from "../../src/repos/webhook-deliveries.repo.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { partitionDays } from "../harness/partitions.js";
import { nodes, type PlanNode } from "../harness/plans.js";
import { endpointsSql } from "../harness/seed-sql.js";

const BUSY = "0190a000-0000-7000-8000-00000000d001";
const QUIET = "0190a000-0000-7000-8000-00000000d002";
const BUSY_ENDPOINT = "0190a000-0000-7000-8000-00000000d0e1";
const QUIET_ENDPOINT = "0190a000-0000-7000-8000-00000000d0e2";
const DAYS = 30;

const uuidTime = (id: string) => uuidv7Millis(id);

/** YYYYMMDD of the day partition holding `at`. */
const partitionDay = (at: Date) => at.toISOString().slice(0, 10).replaceAll("-", "");

/** A UUIDv7 carrying the time `at` (SQL), as publishing stamps deliveries. */
const uuidv7Of = (at: string) => `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing
  substring(int8send(floor(extract(epoch from ${at}) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`;

/** The busy org: 120 events and deliveries on each of the last DAYS days. The quiet org: 12, ten days ago only. */
async function seed(db: SqlExecutor): Promise<void> {
  await db.exec(`${endpointsSql(BUSY, [BUSY_ENDPOINT])}
    ${endpointsSql(QUIET, [QUIET_ENDPOINT])}
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
      SELECT gen_random_uuid(), '${BUSY}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now(),
             now() - (n % ${DAYS}) * interval '1 day' - (n / ${DAYS}) * interval '1 second'
        FROM generate_series(0, ${120 * DAYS - 1}) n
      UNION ALL
      SELECT gen_random_uuid(), '${QUIET}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now(),
             now() - interval '10 days' - n * interval '1 second'
        FROM generate_series(1, 12) n;
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at, event_occurred_at)
      SELECT ${uuidv7Of("e.created_at")}, e.org_id, CASE WHEN e.org_id = '${BUSY}' THEN '${BUSY_ENDPOINT}'::uuid ELSE '${QUIET_ENDPOINT}'::uuid END,
             e.id, 'audit.completed', e.audit_id, false, 'succeeded', e.created_at, e.created_at, e.occurred_at
        FROM events e;
    ANALYZE webhook_deliveries, events;
  `);
}

/** `db` with every statement it runs recorded. */
function recording<D extends SqlExecutor>(db: D) {
  const sent: { sql: string; params: unknown[] }[] = [];
  const recorded = new Proxy(db, {
    get(target, key) {
      if (key === "query") return (sql: string, params: unknown[] = [], options?: unknown) => (sent.push({ sql, params }), target.query(sql, params, options as never));
      const value: unknown = Reflect.get(target, key);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { db: recorded, sent };
}

/** The statement's plan as it ran (a plan made for the values, or the one kept for any). */
async function planOf(db: Database, mode: "custom" | "generic", { sql, params }: { sql: string; params: unknown[] }): Promise<PlanNode> {
  const rollback = new Error("rollback");
  let plan: PlanNode | undefined;
  await db
    .transaction(async (tx: SqlExecutor) => {
      if (mode === "generic") await tx.exec("SET LOCAL plan_cache_mode = force_generic_plan");
      const [row] = await tx.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      plan = row!["QUERY PLAN"][0].Plan;
      throw rollback;
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  return plan!;
}

const dayPartition = (n: PlanNode) => /^(webhook_deliveries|events)_(p\d{8}|history)$/.test(n["Relation Name"] ?? "");

/** The day partitions whose scans the statement's plan set up (YYYYMMDD; the history as "history"). */
async function partitionsSetUp(db: Database, mode: "custom" | "generic", statement: { sql: string; params: unknown[] }): Promise<string[]> {
  const scans = nodes(await planOf(db, mode, statement)).filter(dayPartition);
  return [...new Set(scans.map((n) => n["Relation Name"]!.replace(/^.*_p?/, "")))].sort();
}

/** The list's first `limit` ids as one unbounded statement orders them. */
async function firstIds(db: SqlExecutor, table: string, org: string, limit: number): Promise<string[]> {
  const rows = await db.query<{ id: string }>(`SELECT id FROM ${table} WHERE org_id = $1 ORDER BY created_at DESC, id DESC LIMIT ${limit}`, [org]);
  return rows.map((r) => r.id);
}

/** The org's rows of `table` in list order (newest first), every one. */
async function allIds(db: SqlExecutor, org: string, table = "webhook_deliveries"): Promise<string[]> {
  return (await db.query<{ id: string }>(`SELECT id FROM ${table} WHERE org_id = $1 ORDER BY created_at DESC, id DESC`, [org])).map((r) => r.id);
}

let t: TestDatabase | undefined;
let keptPlans: ReturnType<typeof openGenericReads> | undefined;

describe.skipIf(!onPostgres)("a first page over many day partitions (PostgreSQL only: skipped unless TEST_DATABASE_URL is set)", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    await partitionDays(t.db, DAYS + 2);
    await seed(t.db);
    keptPlans = openGenericReads(t.databaseUrl!, 2);
  });

  afterAll(async () => {
    await keptPlans?.close();
    await t?.close();
  });

  const lists = [
    { table: "webhook_deliveries", repo: (db: Database, now: () => Date, pages?: SqlExecutor) => webhookDeliveriesRepo(db, createCountCache(), now, pages).list },
    { table: "events", repo: (db: Database, now: () => Date, pages?: SqlExecutor) => eventsRepo(db, createCountCache(), now, pages).list },
  ];

  for (const { table, repo } of lists) {
    it.each([
      ["custom", "on the main pool"],
      ["generic", "on the main pool"],
      ["generic", "where plans are kept"],
    ] as const)(`${table}: a busy org's first page is one statement that sets up the scans of the recent days only (%s plan, %s)`, async (mode, where) => {
      const now = new Date();
      const { db, sent } = recording(where === "on the main pool" ? t!.db : keptPlans!);
      const page = await (where === "on the main pool" ? repo(db as Database, () => now) : repo(t!.db, () => now, db))(BUSY, {}, { limit: 100, includeTotal: false });
      expect(page.rows.map((r) => r.id)).toEqual(await firstIds(t!.db, table, BUSY, 100));
      expect(page.hasMore).toBe(true);
      expect(sent).toHaveLength(1);
      const setUp = await partitionsSetUp(t!.db, mode, sent[0]!);
      const yesterday = partitionDay(new Date(dayStart(now).getTime() - DAY_MS));
      expect(setUp).toContain(partitionDay(now));
      // not one older day's scan: 30 kept days cost what 2 do (the history, the DEFAULT partition,
      // may hold any day as far as pruning knows: one scan, however many days are kept)
      expect(setUp.filter((day) => day < yesterday)).toEqual([]);
    });

    it(`${table}: a quiet org's first page holds its rows from ten days ago, and the next one goes to them at once`, async () => {
      const now = new Date();
      const { db, sent } = recording(t!.db);
      const list = repo(db, () => now);
      const expected = await firstIds(t!.db, table, QUIET, 12);
      expect(expected).toHaveLength(12);
      const first = await list(QUIET, {}, { limit: 10, includeTotal: true });
      expect(first.rows.map((r) => r.id)).toEqual(expected.slice(0, 10));
      expect({ hasMore: first.hasMore, total: first.total }).toEqual({ hasMore: true, total: 12 });
      // the recent days held less than a page, then the whole list was read
      expect(sent.filter((s) => !/count\(\*\)/.test(s.sql))).toHaveLength(2);
      sent.length = 0;
      const again = await list(QUIET, {}, { limit: 10, includeTotal: false });
      expect(again.rows.map((r) => r.id)).toEqual(expected.slice(0, 10));
      // remembered for a while: one statement, the whole list's
      expect(sent).toHaveLength(1);
      expect(sent[0]!.params).toEqual([QUIET]);
    });
  }

  it("a filter the recent days hold too little of reads the whole list: the page is the filtered list's first page", async () => {
    const now = new Date();
    const list = webhookDeliveriesRepo(t!.db, createCountCache(), () => now);
    const page = await list.list(QUIET, { endpointId: QUIET_ENDPOINT }, { limit: 5, includeTotal: false });
    expect(page.rows.map((r) => r.id)).toEqual((await firstIds(t!.db, "webhook_deliveries", QUIET, 5)));
    // the busy org's endpoint: a whole page in the recent days, the same rows as the whole list gives
    const busy = await list.list(BUSY, { endpointId: BUSY_ENDPOINT }, { limit: 50, includeTotal: false });
    expect(busy.rows.map((r) => r.id)).toEqual(await firstIds(t!.db, "webhook_deliveries", BUSY, 50));
  });

  it.each(["custom", "generic"] as const)("a page after a cursor, where plans are kept, is one statement that sets up the scans of the cursor's days only (%s plan)", async (mode) => {
    const now = new Date();
    const all = await allIds(t!.db, BUSY);
    // a cursor in the middle of the days: 15 days back
    const at = all.findIndex((id) => (uuidTime(id) < now.getTime() - 15 * DAY_MS));
    const { db, sent } = recording(keptPlans!);
    const list = webhookDeliveriesRepo(t!.db, createCountCache(), () => now, db);
    const older = await list.list(BUSY, {}, { limit: 100, includeTotal: false, startingAfter: all[at] });
    expect(older.rows.map((r) => r.id)).toEqual(all.slice(at + 1, at + 101));
    const newer = await list.list(BUSY, {}, { limit: 100, includeTotal: false, endingBefore: all[at] });
    expect(newer.rows.map((r) => r.id)).toEqual(all.slice(at - 100, at));
    expect(sent).toHaveLength(2);
    const cursorDay = uuidTime(all[at]!);
    const days = [-1, 0, 1].map((d) => partitionDay(new Date(cursorDay + d * DAY_MS)));
    for (const statement of sent) {
      const setUp = await partitionsSetUp(t!.db, mode, statement);
      expect(setUp.filter((day) => !days.includes(day))).toEqual([]);
    }
  });

  it("a page after a cursor goes on into the days before the cursor's when its days hold less than a page, and knows a cursor that is not on the list", async () => {
    const now = new Date();
    const { db, sent } = recording(keptPlans!);
    const list = webhookDeliveriesRepo(t!.db, createCountCache(), () => now, db);
    const all = await allIds(t!.db, BUSY);
    // the oldest day's rows and past them: the list ends, the page is short
    const tail = await list.list(BUSY, {}, { limit: 100, includeTotal: false, startingAfter: all[all.length - 50] });
    expect(tail.rows.map((r) => r.id)).toEqual(all.slice(all.length - 49));
    expect(tail.hasMore).toBe(false);
    // the quiet org's twelve rows, ten days ago: the window holds them all
    const quiet = await allIds(t!.db, QUIET);
    const after = await list.list(QUIET, {}, { limit: 5, includeTotal: false, startingAfter: quiet[2] });
    expect(after.rows.map((r) => r.id)).toEqual(quiet.slice(3, 8));
    // two statements for a short page: the cursor's days, then the whole list
    sent.length = 0;
    await list.list(QUIET, {}, { limit: 100, includeTotal: false, startingAfter: quiet[2] });
    expect(sent).toHaveLength(2);
    await expect(list.list(QUIET, {}, { limit: 5, includeTotal: false, startingAfter: all[5] })).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it.each([
    ["custom", "on the main pool"],
    ["generic", "where plans are kept"],
  ] as const)("events: a page after a cursor finds the cursor's row by one probe of event_ids, not in every day's events (%s plan, %s)", async (mode, where) => {
    const now = new Date();
    const all = await allIds(t!.db, BUSY, "events");
    const at = all.length >> 1;
    const { db, sent } = recording(where === "on the main pool" ? t!.db : keptPlans!);
    const list = where === "on the main pool" ? eventsRepo(db as Database, createCountCache(), () => now) : eventsRepo(t!.db, createCountCache(), () => now, db);
    const older = await list.list(BUSY, {}, { limit: 100, includeTotal: false, startingAfter: all[at] });
    expect(older.rows.map((r) => r.id)).toEqual(all.slice(at + 1, at + 101));
    const newer = await list.list(BUSY, {}, { limit: 100, includeTotal: false, endingBefore: all[at] });
    expect(newer.rows.map((r) => r.id)).toEqual(all.slice(at - 100, at));
    expect(sent).toHaveLength(2);
    for (const statement of sent) {
      const initPlans = nodes(await planOf(t!.db, mode, statement)).filter((n) => /^InitPlan/.test(n["Subplan Name"] ?? ""));
      expect(initPlans).toHaveLength(1);
      // the cursor's row: event_ids alone, whatever the days kept
      expect(nodes(initPlans[0]!).filter((n) => n["Relation Name"] !== undefined).map((n) => n["Relation Name"])).toEqual(["event_ids"]);
    }
    // an id of no event of this org is still refused, by name
    await expect(list.list(QUIET, {}, { limit: 5, includeTotal: false, startingAfter: all[5] })).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it.each(["custom", "generic"] as const)("an event by id reads its own day's partition only, its day found in event_ids (%s plan)", async (mode) => {
    const all = await allIds(t!.db, BUSY, "events");
    const id = all[all.length >> 1]!;
    const { db, sent } = recording(t!.db);
    const events = eventsRepo(db as Database, createCountCache(), () => new Date());
    const found = await events.findById(BUSY, id);
    expect(found?.id).toBe(id);
    expect(sent).toHaveLength(1);
    const read = nodes(await planOf(t!.db, mode, sent[0]!)).filter((n) => dayPartition(n) && (n["Actual Loops"] ?? 0) > 0);
    expect(read.map((n) => n["Relation Name"])).toEqual([`events_p${partitionDay(found!.created_at)}`]);
    // another org's id, and an id of no event, are no event of this org
    expect(await events.findById(QUIET, id)).toBeNull();
    expect(await events.findById(BUSY, "0190a000-0000-7000-8000-0000000000ff")).toBeNull();
  });

  it.each(["custom", "generic"] as const)("events: a page after a cursor this process served as a page's end reads the days around it only, where plans are kept (%s plan)", async (mode) => {
    const now = new Date();
    const all = await allIds(t!.db, BUSY, "events");
    const at = all.length >> 1;
    const { db, sent } = recording(keptPlans!);
    const list = eventsRepo(t!.db, createCountCache(), () => now, db);
    // a cursor no page of this process ended at: the whole list's statement, at once
    const page = await list.list(BUSY, {}, { limit: 100, includeTotal: false, startingAfter: all[at] });
    expect(page.rows.map((r) => r.id)).toEqual(all.slice(at + 1, at + 101));
    expect(sent).toHaveLength(1);
    // the walk on, both ways, from that page's ends
    sent.length = 0;
    const older = await list.list(BUSY, {}, { limit: 100, includeTotal: false, startingAfter: page.rows.at(-1)!.id });
    expect(older.rows.map((r) => r.id)).toEqual(all.slice(at + 101, at + 201));
    const newer = await list.list(BUSY, {}, { limit: 100, includeTotal: false, endingBefore: page.rows[0]!.id });
    expect(newer.rows.map((r) => r.id)).toEqual(all.slice(at - 99, at + 1));
    expect(sent).toHaveLength(2);
    const around = (row: { created_at: Date }) => [-1, 0, 1].map((d) => partitionDay(new Date(row.created_at.getTime() + d * DAY_MS)));
    for (const [statement, end] of [[sent[0]!, page.rows.at(-1)!], [sent[1]!, page.rows[0]!]] as const) {
      const setUp = await partitionsSetUp(t!.db, mode, statement);
      expect(setUp.length).toBeGreaterThan(0);
      expect(setUp.filter((day) => !around(end).includes(day))).toEqual([]);
    }
  });
});
