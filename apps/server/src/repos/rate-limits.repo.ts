// The per-token request counts every API process on one database shares (the rate limit in
// http/rate-limit.ts). Fixed windows aligned on the database's clock, so processes on machines
// whose clocks disagree still count into the same window. Processes do not count each request
// here: they take a share of a token's window ahead of use (`take`), several tokens in one
// statement, and admit requests from that share in memory.
import type { SqlExecutor } from "../db/client.js";

/** The rate limit's window: the README documents the limit per minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/** The start of the current window on the database's clock, for a window of `windowMsParam` milliseconds (an SQL parameter). */
export const windowStartSql = (windowMsParam: string) =>
  `date_bin(${windowMsParam}::int * interval '1 millisecond', now(), timestamptz '1970-01-01 00:00:00+00')`;

const WINDOW_START = windowStartSql("$3");

/**
 * One round trip for any number of keys: add each key's `n` to its count in the current window
 * and, on a key's first count of a new window, delete its older windows (so the table holds
 * about one row per key in use; `sweepExpired` takes the last windows of keys no longer used).
 * Keys are locked in key order, so two processes taking overlapping sets cannot deadlock.
 * `ms_left` is measured by the database's clock, so the caller can time the window's end on its
 * own monotonic clock without trusting this host's wall clock.
 */
const TAKE = `
WITH wanted AS (
  SELECT key, n FROM unnest($1::text[], $2::int[]) AS t(key, n) ORDER BY key
), counted AS (
  INSERT INTO rate_limit_windows AS w (key, window_start, hits)
  SELECT key, ${WINDOW_START}, n FROM wanted
  ON CONFLICT (key, window_start) DO UPDATE SET hits = w.hits + excluded.hits
  RETURNING w.key, w.hits, w.window_start
), ended AS (
  DELETE FROM rate_limit_windows d USING counted c, wanted q
   WHERE c.key = q.key AND c.hits = q.n AND d.key = c.key AND d.window_start < c.window_start
)
SELECT key, hits, window_start,
       (extract(epoch FROM window_start + $3::int * interval '1 millisecond' - now()) * 1000)::float8 AS ms_left
  FROM counted`;

export interface WindowCount {
  key: string;
  /** The key's count in the window after this call added to it. */
  hits: number;
  /** When the window started (the database's clock). */
  windowStart: Date;
  /** What was left of the window when the database counted, by its clock. */
  msLeft: number;
}

export function rateLimitsRepo(db: SqlExecutor, windowMs = RATE_LIMIT_WINDOW_MS) {
  return {
    windowMs,

    /** Adds `n` to each key's count in the current window; keys must be distinct. */
    async take(wanted: ReadonlyArray<{ key: string; n: number }>): Promise<WindowCount[]> {
      if (!wanted.length) return [];
      const rows = await db.query<{ key: string; hits: number; window_start: Date; ms_left: number }>(TAKE, [
        wanted.map((w) => w.key),
        wanted.map((w) => w.n),
        windowMs,
      ], { name: "ars_rate_limit_take" });
      return rows.map((r) => ({ key: r.key, hits: r.hits, windowStart: r.window_start, msLeft: r.ms_left }));
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
