import type { PrismaClient } from "../generated/prisma/client.js";

export type Row = Record<string, unknown>;

export interface QueryOptions {
  /**
   * Prepare the statement once per connection under this name and run it from then on: it is
   * parsed and planned once, and its plan kept (after a few runs PostgreSQL may settle on a
   * generic plan, which still prunes partitions by the parameters when it runs). For the
   * statements run again and again with the same text (the engine's claim, record, renewal).
   * One name, one text.
   */
  name?: string;
}

/** Raw SQL, for what Prisma cannot express (FOR UPDATE SKIP LOCKED, advisory locks, EXPLAIN, ...). */
export interface SqlExecutor {
  /**
   * One statement with `$1…` parameters. Pass jsonb parameters as JSON strings (node-postgres
   * would turn a JS array into a PostgreSQL array literal). Results: timestamptz → Date,
   * int8 → number (bigint beyond 2^53), date → Date at UTC midnight, bytea → Buffer,
   * json/jsonb → parsed, arrays → JS arrays, numeric → string.
   */
  query<T = Row>(sql: string, params?: unknown[], options?: QueryOptions): Promise<T[]>;
  /** A script of one or more statements without parameters (simple query protocol). */
  exec(sql: string): Promise<void>;
}

/** One connection held by its user: session state (advisory locks, SET) stays with it. */
export interface Session extends SqlExecutor {
  /** A transaction on this session's connection (on PGlite: Database.transaction). */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
}

export interface Database extends SqlExecutor {
  readonly kind: "postgres" | "pglite";
  readonly prisma: PrismaClient;
  /**
   * Runs `fn` in one transaction on one connection; commits when it resolves, rolls back when it
   * throws. On PGlite the single connection is held for the duration: do not call `db.query`
   * or `db.prisma` from inside `fn` (it would wait for the transaction to end), use `tx`.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Subscribes `handler` to NOTIFY on `channel` (lower-case identifier). Resolves once the
   * subscription is active; the returned function unsubscribes. On PostgreSQL a dedicated
   * connection listens and reconnects when dropped; notifications sent while it is down are
   * lost, so consumers keep a poll as a safety net.
   */
  listen(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Runs `fn` on one connection held for its duration (PostgreSQL: taken from the pool and
   * closed afterwards, so no session state such as an advisory lock outlives it; PGlite: its one
   * connection, shared with everything else in the process).
   */
  session<T>(fn: (session: Session) => Promise<T>): Promise<T>;
  notify(channel: string, payload?: string): Promise<void>;
  /** The connection pool now (the metrics). `inUse`/`waiting` are null where the engine does not tell (PGlite). */
  poolStats(): PoolStats;
  /**
   * Reads run again after losing their connection (db/read-retry.ts), since the pool opened.
   * Absent where there is no connection to lose (PGlite runs in the process).
   */
  connectionRetries?(): ConnectionRetryCounts;
  close(): Promise<void>;
}

export interface PoolStats {
  max: number;
  inUse: number | null;
  waiting: number | null;
}

export interface ConnectionRetryCounts {
  /** the second run answered */
  retriedOk: number;
  /** the second run failed too */
  gaveUp: number;
}

export interface OpenDatabaseOptions {
  /** `postgresql://…`: use PostgreSQL. Absent: embedded PGlite. */
  databaseUrl?: string | undefined;
  /** PGlite data directory (created if missing). */
  dataDir?: string | undefined;
  /** PGlite in memory (tests); wins over `dataDir`. */
  inMemory?: boolean | undefined;
  /** PostgreSQL pool size shared by Prisma and raw queries (default 10). */
  poolSize?: number | undefined;
  /**
   * PostgreSQL: plan each prepared statement once per connection, without its values
   * (plan_cache_mode = force_generic_plan), on connections kept open while idle. For the
   * delivery engine's pool, whose statements are written for such plans (they name day
   * partitions by values computed as they run, which the executor prunes by): PostgreSQL's
   * default makes five plans with the values first, and over 40 day partitions each took 50 ms
   * where running the statement took 7 (bench/NOTES.md, "Planning over day partitions").
   * Sequential scans are off on those connections: a plan kept for the connection's life must not
   * depend on how full a day partition was when it was made. Planned while today's partition was
   * empty (a fresh database, the first minutes of a day before autovacuum analyzes it), the claim
   * read every partition it touched from end to end, 6,250 buffers where the index takes a few
   * dozen, until an ANALYZE happened to invalidate the plan (bench/NOTES.md, "Plans made on an
   * empty day").
   */
  genericPlans?: boolean | undefined;
}

const CHANNEL_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Channel names are restricted to plain lower-case identifiers: PostgreSQL folds unquoted names
 * and PGlite's listen() folds them too, so anything else would behave differently per engine.
 */
export function assertChannelName(channel: string): void {
  if (!CHANNEL_NAME.test(channel)) {
    throw new Error(`invalid notification channel ${JSON.stringify(channel)}: use a lower-case identifier`);
  }
}
