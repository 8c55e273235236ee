// What the metrics scrape reads from the database: the delivery queue's due rows and the disabled
// endpoints. Read at scrape time from the rows themselves, so every process (API or worker)
// reports the same truth, not what one dispatcher happens to hold. Each statement is bounded:
// its cost does not grow with the table (plans checked in test/db/scrape-plans.test.ts).
import type { SqlExecutor } from "../db/client.js";
import { FROM_LIVE_FLOOR, LIVE_FLOOR, LIVE_SQL, QUEUED_ENDPOINTS } from "./delivery-sql.js";

export interface QueueStats {
  /** queued rows due at `now` (being attempted or waiting for a slot), counted up to the cap */
  dueRows: number;
  /** the earliest due time among them; null when nothing is due */
  oldestDueAt: Date | null;
}

// 1. `queued`: the endpoints with queued rows, one probe each of the per-endpoint due index (the
//    dispatcher's claim walks them the same way).
// 2. `heads`: each one's earliest queued row, if it is due: the oldest due row is the least of them.
// 3. `due`: due rows endpoint by endpoint, stopping at the cap. Rows scheduled later (retries
//    hours away) sit behind the due ones in each endpoint's index and are never read.
const QUEUE_STATS = `
WITH RECURSIVE ${LIVE_FLOOR}, ${QUEUED_ENDPOINTS}, heads AS (
  SELECT h.next_attempt_at
    FROM queued q
   CROSS JOIN LATERAL (
     SELECT d.next_attempt_at FROM webhook_deliveries d
      WHERE d.endpoint_id = q.endpoint_id AND d.status IN ${LIVE_SQL} AND ${FROM_LIVE_FLOOR("d")} AND d.next_attempt_at <= $1
      ORDER BY d.next_attempt_at LIMIT 1) h
   WHERE q.endpoint_id IS NOT NULL
), due AS (
  SELECT 1
    FROM queued q
   CROSS JOIN LATERAL (
     SELECT 1 FROM webhook_deliveries d
      WHERE d.endpoint_id = q.endpoint_id AND d.status IN ${LIVE_SQL} AND ${FROM_LIVE_FLOOR("d")} AND d.next_attempt_at <= $1
      LIMIT $2) x
   WHERE q.endpoint_id IS NOT NULL
   LIMIT $2
)
SELECT (SELECT count(*) FROM due)::int AS due_rows, (SELECT min(next_attempt_at) FROM heads) AS oldest_due_at`;

/** The queue statistics statement (exported for its plan test). */
export function queueStatsStatement(now: Date, cap: number): { sql: string; params: unknown[] } {
  return { sql: QUEUE_STATS, params: [now, cap] };
}

// Served by the partial index over disabled live endpoints: reads only those.
const DISABLED_ENDPOINTS = `
SELECT disabled_reason AS reason, count(*)::int AS n
  FROM webhook_endpoints
 WHERE status = 'disabled' AND deleted_at IS NULL
 GROUP BY disabled_reason`;

export const disabledEndpointsStatement = (): { sql: string; params: unknown[] } => ({ sql: DISABLED_ENDPOINTS, params: [] });

export function queueStatsRepo(db: SqlExecutor) {
  return {
    async queue(now: Date, cap: number): Promise<QueueStats> {
      const { sql, params } = queueStatsStatement(now, cap);
      const [row] = await db.query<{ due_rows: number; oldest_due_at: Date | null }>(sql, params);
      return { dueRows: row?.due_rows ?? 0, oldestDueAt: row?.oldest_due_at ?? null };
    },
    /** Live disabled endpoints per `disabled_reason`. */
    async disabledEndpoints(): Promise<Map<string, number>> {
      const { sql } = disabledEndpointsStatement();
      const rows = await db.query<{ reason: string | null; n: number }>(sql);
      return new Map(rows.map((r) => [r.reason ?? "manual", r.n]));
    },
  };
}
