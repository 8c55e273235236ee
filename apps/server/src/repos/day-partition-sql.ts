// How a statement names the day partitions of the rows it reads by key (events, webhook_deliveries
// and webhook_delivery_attempts are partitioned by day on created_at, prisma/migrations/
// 20261125090000_time_partitions).
//
// `created_at = ANY(array)` prunes partitions only when the array is a constant of the plan:
// the array of a subquery, or a parameter of a prepared statement once PostgreSQL keeps its
// generic plan, never is, and such a statement then probes the key index of every kept day (30
// and more). The least and greatest of the same values, as scalar subqueries, are values the
// executor computes once and prunes by before the first row (test/db/day-pruning.test.ts).
import { DAY_MS, dayStart } from "../domain/retention.js";

/**
 * `column` within the least and greatest of `days`, SQL of a one-column set of timestamps
 * (`SELECT created_at FROM chosen`, `SELECT unnest($3::timestamptz[])`). Keep the statement's
 * exact key condition beside it: this only bounds the days.
 */
export const createdWithin = (column: string, days: string): string =>
  `${column} BETWEEN (SELECT min(b.at) FROM (${days}) b(at)) AND (SELECT max(b.at) FROM (${days}) b(at))`;

/**
 * The least and greatest of the days of rows a caller names, for a statement's `created_at
 * BETWEEN $lo AND $hi` beside its key condition. Passed as parameters, bounds prune before the
 * executor starts: a kept plan does not even set up the other days' scans, where bounds computed
 * by the statement (createdWithin) leave them set up and unrun, a cost that grows with the days kept.
 */
export function dayBounds(days: readonly Date[]): [Date, Date] {
  let lo = days[0]!;
  let hi = lo;
  for (const d of days) {
    if (d < lo) lo = d;
    if (d > hi) hi = d;
  }
  return [lo, hi];
}

/**
 * Where a list's first page looks first (`ListTable.recentFrom`): the start of the clock's
 * previous day, so the recent rows are at least a whole day's and at most two partitions'.
 */
export const recentDaysFrom = (now: () => Date) => (): Date => new Date(dayStart(now()).getTime() - DAY_MS);
