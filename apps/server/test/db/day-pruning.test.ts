// The engine's statements must cost the same with 2 day partitions and with 40. Queued rows sit
// in the newest few days: the claim's probes of the queue's indexes start from the day of the
// oldest queued row (the live floor, repos/delivery-sql.ts), and every statement that
// names rows by key (the claim's update and its events, release, renewal, record) reads only the
// days of those rows (repos/day-partition-sql.ts). Checked on PostgreSQL with EXPLAIN ANALYZE, in
// the plan PostgreSQL makes for the values and in the generic plan it may keep for a prepared
// statement: a scan of another day's partition that ran even once fails the test. And the live
// floor is never missed: a delivery queued again in an old day is claimed by the claim right after
// the one that found it (which asks for it at once).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database, SqlExecutor } from "../../src/db/client.js";
import { claimStatement, deliveriesQueueRepo, type ClaimRequest, type OutcomeRecord } from "../../src/repos/deliveries-queue.repo.js";
import { newId } from "../../src/lib/ids.js";
import { DAY_MS } from "../../src/domain/retention.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { partitionDays } from "../harness/partitions.js";
import type { PlanNode } from "../harness/plans.js";
import { endpointsSql } from "../harness/seed-sql.js";

const ORG = "0190a000-0000-7000-8000-00000000b001";
const ENDPOINTS = [1, 2, 3].map((n) => `0190a000-0000-7000-8000-00000000f00${n}`);
const OLD_QUEUED = "0190a000-0000-7000-8000-0000000c0001";
const OLD_ORDERED = "0190a000-0000-7000-8000-0000000c0002";
const DAYS = 20;

/** YYYYMMDD of a day partition holding `at`. */
const partitionDay = (at: Date) => at.toISOString().slice(0, 10).replaceAll("-", "");

/** Finished deliveries on every day of the last DAYS, and queued rows (due now) only today. */
async function seed(db: SqlExecutor): Promise<void> {
  await db.exec(`${endpointsSql(ORG, ENDPOINTS)}
    INSERT INTO events (id, org_id, type, audit_id, question_set_id, result, responses, occurred_at, created_at)
      SELECT gen_random_uuid(), '${ORG}', 'audit.completed', gen_random_uuid(), gen_random_uuid(), 'passed', '[]'::jsonb, now(),
             now() - (n % ${DAYS}) * interval '1 day'
        FROM generate_series(1, 4000) n;
    INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at, event_occurred_at)
      SELECT gen_random_uuid(), '${ORG}', ep, e.id, 'audit.completed', e.audit_id, false,
             CASE WHEN e.created_at > now() - interval '1 hour' THEN 'pending' ELSE 'succeeded' END,
             e.created_at, e.created_at, e.occurred_at
        FROM events e, unnest(ARRAY['${ENDPOINTS.join("', '")}']::uuid[]) ep;
    ANALYZE webhook_deliveries, events;
  `);
}

/** The live floor: the created_at of the oldest queued row, which a claim answers and the next reads from. */
async function liveFloor(db: SqlExecutor): Promise<Date | null> {
  const [row] = await db.query<{ at: Date | null }>("SELECT min(created_at) AS at FROM webhook_deliveries WHERE status IN ('pending', 'retrying')");
  return row?.at ?? null;
}

/** The claim as the engine sends it once a claim before it answered the live floor `floor`. */
function claim(floor: Date | null, r: Partial<ClaimRequest> = {}) {
  const request: ClaimRequest = {
    leaseToken: "plan", limit: 50, leaseMs: 60_000, perEndpoint: 16, now: new Date(), scope: { kind: "all", streams: [] },
    busyEndpoints: new Map(), skipEndpoints: [], inFlight: [], ...r,
  };
  return { ...claimStatement(request, floor), request };
}

/** Runs `fn` in a transaction that is rolled back, and returns what it returned. */
async function rolledBack<T>(db: TestDatabase["db"], fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  const rollback = new Error("rollback");
  let out: T | undefined;
  await db
    .transaction(async (tx: SqlExecutor) => {
      out = await fn(tx);
      throw rollback;
    })
    .catch((error: unknown) => {
      if (error !== rollback) throw error;
    });
  return out as T;
}

/** Every node of a plan but those of the live floor's own probe. */
const outsideLiveDays = (n: PlanNode): PlanNode[] => (n["Subplan Name"] === "CTE live_floor" ? [] : [n, ...(n.Plans ?? []).flatMap(outsideLiveDays)]);

/** The statements `use` sends through the queue repository, captured instead of run. */
async function sentBy(db: Database, use: (queue: ReturnType<typeof deliveriesQueueRepo>) => Promise<unknown>) {
  const sent: { sql: string; params: unknown[] }[] = [];
  const capturing = new Proxy(db, {
    get(target, key) {
      if (key === "query") return async (sql: string, params: unknown[] = []) => (sent.push({ sql, params }), []);
      const value: unknown = Reflect.get(target, key);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  await use(deliveriesQueueRepo(capturing));
  return sent;
}

/**
 * The day partitions of webhook_deliveries, events and attempts whose scans ran (at least one loop) in the
 * claim's plan, but for the live floor's own probe (one of each partition's small partial index
 * over queued rows, once per claim: that is how the claim learns which days hold them).
 */
async function partitionsVisited(
  db: TestDatabase["db"],
  mode: "custom" | "generic",
  { sql, params }: { sql: string; params: unknown[] },
  { setUp = false }: { setUp?: boolean } = {},
): Promise<string[]> {
  return rolledBack(db, async (tx) => {
    if (mode === "generic") await tx.exec("SET LOCAL plan_cache_mode = force_generic_plan");
    // a named statement, as the engine sends it: the generic plan is the one PostgreSQL may keep
    const explained = await tx.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
    const scans = outsideLiveDays(explained[0]!["QUERY PLAN"][0].Plan).filter(
      (n) =>
        /^(webhook_deliveries|events|webhook_delivery_attempts)_(p\d{8}|history)$/.test(n["Relation Name"] ?? "") && (setUp || (n["Actual Loops"] ?? 0) > 0),
    );
    // a day partition as its day (YYYYMMDD), the history (the DEFAULT partition) as "history"
    return [...new Set(scans.map((n) => n["Relation Name"]!.replace(/^.*_p?/, "")))].sort();
  });
}

let t: TestDatabase | undefined;

describe.skipIf(!onPostgres)("the claim over many day partitions (PostgreSQL only: skipped unless TEST_DATABASE_URL is set)", () => {
  beforeAll(async () => {
    t = await createTestDatabase();
    await partitionDays(t.db, DAYS + 2);
    await seed(t.db);
  });

  afterAll(async () => {
    await t?.close();
  });

  it.each(["custom", "generic"] as const)("visits only the partitions from the oldest queued row's day on (%s plan)", async (mode) => {
    const today = partitionDay(new Date());
    const visited = await partitionsVisited(t!.db, mode, claim(await liveFloor(t!.db)));
    // the claim read the queue, the rows it took and their events in today's partitions, and none
    // of the older days', full of finished deliveries
    expect(visited).toContain(today);
    expect(visited.filter((day) => day < today)).toEqual([]);
    // its days are parameters: the scans of the older days, of the week ahead and of the history
    // are not even set up (bounds the statement computes leave a scan of each set up and unrun, a
    // cost that grows with the days kept)
    const tomorrow = partitionDay(new Date(Date.now() + DAY_MS));
    const setUp = await partitionsVisited(t!.db, mode, claim(await liveFloor(t!.db)), { setUp: true });
    expect(setUp.filter((day) => day < today || day > tomorrow)).toEqual([]);
  });

  it.each(["custom", "generic"] as const)("releases, renews and records claimed rows in their day's partitions only (%s plan)", async (mode) => {
    const now = new Date();
    const queue = deliveriesQueueRepo(t!.db);
    const claimed = await queue.claim({ ...claim(null).request, leaseToken: `held-${mode}`, limit: 6 });
    expect(claimed.rows.length).toBe(6);
    const held = claimed.rows.map((r) => ({ id: r.id, createdAt: r.created_at, leaseToken: `held-${mode}` }));
    const outcomes = claimed.rows.map((r): OutcomeRecord => ({
      deliveryId: r.id, createdAt: r.created_at, endpointId: r.endpoint_id, leaseToken: `held-${mode}`, at: now, effect: "healthy",
      update: { status: "succeeded", attempt_count: 1, next_attempt_at: null, last_response_status: 200, last_error_code: null, last_error_message: null, delivered_at: now, next_trigger: "scheduled" },
      attempt: { id: newId(), trigger: "scheduled", url: "https://example.com/", started_at: now, duration_ms: 3, response_body: null },
    }));
    const statements = [
      ...(await sentBy(t!.db, (q) => q.release(held.slice(0, 2), `held-${mode}`))),
      ...(await sentBy(t!.db, (q) => q.renew(held, 60_000, now))),
      ...(await sentBy(t!.db, (q) => q.recordBatch(outcomes, 3_600_000))),
    ];
    expect(statements).toHaveLength(3);
    const today = partitionDay(now);
    for (const statement of statements) {
      expect({ statement: statement.sql.trim().slice(0, 40), visited: await partitionsVisited(t!.db, mode, statement) })
        .toEqual({ statement: statement.sql.trim().slice(0, 40), visited: [today] });
    }
    await queue.release(held, `held-${mode}`);
  });

  it("claims a delivery queued again in an old day in the claim right after, which the claim before asks for, then reads from that day on", async () => {
    const queue = deliveriesQueueRepo(t!.db);
    // a first claim answers today's floor: the next reads from today on
    const first = await queue.claim({ ...claim(null).request, leaseToken: "floor-1", limit: 1 });
    await queue.release(first.rows.map((r) => ({ id: r.id, createdAt: r.created_at })), "floor-1");
    expect(first.lookAgain).toBe(false);
    const old = new Date(Date.now() - 12 * DAY_MS);
    const [event] = await t!.db.query<{ id: string; audit_id: string }>(
      `SELECT id, audit_id FROM events WHERE created_at >= $1 AND created_at < $1::timestamptz + interval '1 day' LIMIT 1`,
      [new Date(old.getTime() - (old.getTime() % DAY_MS))],
    );
    await t!.db.query(
      `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at, next_trigger)
       SELECT $1, $2, $3, e.id, 'audit.completed', e.audit_id, false, 'pending', now() - interval '1 day', e.created_at, 'manual'
         FROM events e WHERE e.id = $4
       ON CONFLICT (event_id, endpoint_id, created_at) DO UPDATE SET id = $1, status = 'pending', next_attempt_at = now() - interval '1 day', next_trigger = 'manual'`,
      [OLD_QUEUED, ORG, ENDPOINTS[0], event!.id],
    );
    // due a day ago, it is the oldest due row of all; the claim that read from today could not
    // see it, and says so
    const blind = await queue.claim({ ...claim(null).request, leaseToken: "floor-2", limit: 5 });
    await queue.release(blind.rows.map((r) => ({ id: r.id, createdAt: r.created_at })), "floor-2");
    expect(blind.rows.map((r) => r.id)).not.toContain(OLD_QUEUED);
    expect(blind.lookAgain).toBe(true);
    // the claim right after reads from its day, and takes it (the oldest due row of all)
    const next = await queue.claim({ ...claim(null).request, leaseToken: "floor-3", limit: 5 });
    await queue.release(next.rows.map((r) => ({ id: r.id, createdAt: r.created_at })), "floor-3");
    expect(next.rows.map((r) => r.id)).toContain(OLD_QUEUED);
    expect(next.lookAgain).toBe(false);
    // from that day on: the days between may hold queued rows too
    const visited = await partitionsVisited(t!.db, "custom", claim(await liveFloor(t!.db)));
    expect(visited[0]).toBe(partitionDay(old));
  });

  it("takes none of an ordered endpoint's rows while its head is a delivery queued again before the days read, then the head alone", async () => {
    const queue = deliveriesQueueRepo(t!.db);
    await t!.db.query("UPDATE webhook_endpoints SET delivery_order = 'ordered' WHERE id = $1", [ENDPOINTS[2]]);
    // only today's rows queued: the claims below read from today
    await t!.db.query("UPDATE webhook_deliveries SET status = 'succeeded' WHERE status = 'pending' AND created_at < now() - interval '1 day'");
    const settle = await queue.claim({ ...claim(null).request, leaseToken: "ordered-1", limit: 50 });
    await queue.release(settle.rows.map((r) => ({ id: r.id, createdAt: r.created_at })), "ordered-1");
    // a delivery of an event of 12 days ago queued again: the ordered endpoint's head
    const old = new Date(Date.now() - 12 * DAY_MS);
    await t!.db.query(
      `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, next_attempt_at, created_at, next_trigger, event_occurred_at)
       SELECT $1, $2, $3, e.id, 'audit.completed', e.audit_id, false, 'pending', now() - interval '1 day', e.created_at, 'manual', e.created_at
         FROM events e WHERE e.created_at >= $4 AND e.created_at < $4::timestamptz + interval '1 day' LIMIT 1
       ON CONFLICT (event_id, endpoint_id, created_at) DO UPDATE SET id = $1, status = 'pending', next_attempt_at = now() - interval '1 day',
          next_trigger = 'manual', event_occurred_at = excluded.event_occurred_at`,
      [OLD_ORDERED, ORG, ENDPOINTS[2], new Date(old.getTime() - (old.getTime() % DAY_MS))],
    );
    const ofOrdered = (c: { rows: { id: string; endpoint_id: string }[] }) => c.rows.filter((r) => r.endpoint_id === ENDPOINTS[2]).map((r) => r.id);
    // the claim reads from today: the head is before that, so the endpoint's later rows wait
    const blind = await queue.claim({ ...claim(null).request, leaseToken: "ordered-2", limit: 50 });
    await queue.release(blind.rows.map((r) => ({ id: r.id, createdAt: r.created_at })), "ordered-2");
    expect(ofOrdered(blind)).toEqual([]);
    expect(blind.lookAgain).toBe(true);
    const next = await queue.claim({ ...claim(null).request, leaseToken: "ordered-3", limit: 50 });
    await queue.release(next.rows.map((r) => ({ id: r.id, createdAt: r.created_at })), "ordered-3");
    expect(ofOrdered(next)).toEqual([OLD_ORDERED]);
  });
});
