// The per-token request counts every API process on one database shares (the rate limit in
// http/rate-limit.ts). Fixed windows aligned on the database's clock, so processes on machines
// whose clocks disagree still count into the same window.
import type { SqlExecutor } from "../db/client.js";

/** The rate limit's window: the README documents the limit per minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

const WINDOW_START = "date_bin($2::int * interval '1 millisecond', now(), timestamptz '1970-01-01 00:00:00+00')";

/**
 * One round trip per request: count the hit in the current window and, on the first hit of a
 * new window, delete the key's older windows (so the table holds about one row per key in use;
 * `sweepExpired` takes the last windows of keys no longer used).
 */
const HIT = `
WITH hit AS (
  INSERT INTO rate_limit_windows AS w (key, window_start, hits)
  VALUES ($1, ${WINDOW_START}, 1)
  ON CONFLICT (key, window_start) DO UPDATE SET hits = w.hits + 1
  RETURNING w.hits, w.window_start
), ended AS (
  DELETE FROM rate_limit_windows d USING hit
   WHERE hit.hits = 1 AND d.key = $1 AND d.window_start < hit.window_start
)
SELECT hits, window_start FROM hit`;

const UNHIT = `UPDATE rate_limit_windows SET hits = hits - 1 WHERE key = $1 AND window_start = ${WINDOW_START} AND hits > 0`;

export interface WindowCount {
  hits: number;
  /** When the window ends (the count starts again). */
  resetAt: Date;
}

export function rateLimitsRepo(db: SqlExecutor, windowMs = RATE_LIMIT_WINDOW_MS) {
  return {
    windowMs,

    async hit(key: string): Promise<WindowCount> {
      const [row] = await db.query<{ hits: number; window_start: Date }>(HIT, [key, windowMs]);
      return { hits: row!.hits, resetAt: new Date(row!.window_start.getTime() + windowMs) };
    },

    async unhit(key: string): Promise<void> {
      await db.query(UNHIT, [key, windowMs]);
    },

    async reset(key: string): Promise<void> {
      await db.query("DELETE FROM rate_limit_windows WHERE key = $1", [key]);
    },

    /** Deletes every window that has ended; returns how many (for housekeeping's log line). */
    async sweepExpired(): Promise<number> {
      const [row] = await db.query<{ n: number }>(
        `WITH gone AS (DELETE FROM rate_limit_windows WHERE window_start <= now() - $1::int * interval '1 millisecond' RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [windowMs],
      );
      return row!.n;
    },
  };
}

export type RateLimitsRepo = ReturnType<typeof rateLimitsRepo>;
