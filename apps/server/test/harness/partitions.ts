// Day partitions for tests that need rows spread over several of them: housekeeping run as if
// the first run had happened `days` ago (the history then ends there), then today.
import type { Database, SqlExecutor } from "../../src/db/client.js";
import { createHousekeeper, type Housekeeper, type HousekeepingSummary } from "../../src/housekeeping/housekeeper.js";
import { createLogger } from "../../src/lib/logger.js";
import { DAY_MS, retention } from "../../src/domain/retention.js";

export { fixedClock } from "./clock.js";
import { fixedClock } from "./clock.js";

/** Day partitions from `days` ago to a week ahead; rows older than that stay in the history. */
export async function partitionDays(db: Database, days: number): Promise<void> {
  const logger = createLogger({ level: "silent" });
  // a run creates the partitions of the week ahead of it: one a week, then today's
  const runs = Array.from({ length: Math.ceil(days / 7) }, (_, i) => new Date(Date.now() - (days - 7 * i) * DAY_MS));
  for (const at of [...runs, new Date()]) {
    await housekeepingRun(createHousekeeper({ db, retention: retention(3650), clock: fixedClock(at), logger, intervalMs: DAY_MS }));
  }
}

/** Index name → the partitioned table's index it belongs to (plain tables' indexes map to themselves). */
export async function indexParents(db: SqlExecutor): Promise<(name: string | undefined) => string | undefined> {
  const rows = await db.query<{ child: string; parent: string }>(
    `SELECT c.relname AS child, p.relname AS parent
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE c.relkind = 'i'`,
  );
  const map = new Map(rows.map((r) => [r.child, r.parent]));
  return (name) => (name === undefined ? undefined : (map.get(name) ?? name));
}

/** Relation name → its partitioned table (plain tables map to themselves). */
export const tableOf = (relation: string | undefined): string | undefined =>
  relation?.replace(/_(p\d{8}|history)$/, "");

/** One housekeeping run that did the work: waits out a run already in progress (e.g. the loop's first, at start). */
export async function housekeepingRun(h: Housekeeper): Promise<HousekeepingSummary> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const run = await h.runOnce();
    if (!run.skipped) return run;
    if (Date.now() > deadline) throw new Error("housekeeping kept being skipped");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
