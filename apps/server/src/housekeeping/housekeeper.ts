// One loop for every table that only ever grows with time: the day partitions of events,
// deliveries and attempts (created ahead of need, dropped whole once past the retention window)
// expired Idempotency-Key rows and ended rate-limit windows. Every serve and worker process runs the loop; a PostgreSQL
// advisory lock lets exactly one of them work at a time (the others skip that turn). README,
// "Retention and housekeeping".
import type { Database, Session } from "../db/client.js";
import { every, type Clock, type TimerHandle } from "../clock/clock.js";
import { errorField } from "../lib/narrow.js";
import type { Logger } from "../lib/logger.js";
import { DAY_MS, dayStart, retentionDrops, type Retention } from "../domain/retention.js";
import { idempotencyKeysRepo } from "../repos/idempotency-keys.repo.js";
import { rateLimitsRepo } from "../repos/rate-limits.repo.js";
import { PARTITIONED_TABLES, dayPartitionName, partitionsRepo, type PartitionsRepo } from "../repos/partitions.repo.js";

/** The advisory lock of the housekeeping run (one bigint key space shared with Prisma's migrate lock 72707369). */
export const HOUSEKEEPING_LOCK_KEY = 72707370;

/** Day partitions kept ready ahead of today: inserts keep working through a week without a run. */
export const DEFAULT_AHEAD_DAYS = 7;

const KEY_BATCH = 5_000;
/** At most this many keys a run, so one run stays short however far behind it is. */
const MAX_KEYS_PER_RUN = 200_000;

const LOCK_NOT_AVAILABLE = "55P03";

export type HousekeptTable = (typeof PARTITIONED_TABLES)[number]["name"] | "idempotency_keys" | "rate_limit_windows";

/** What one run did (the metrics of the run are derived from it). */
export interface HousekeepingSummary {
  /** the clock's time the run judged by */
  at: Date;
  durationMs: number;
  /** rows removed, per table */
  removed: Record<HousekeptTable, number>;
  partitionsCreated: string[];
  partitionsDropped: string[];
  /** past the window but still holding pending/retrying deliveries: kept until those are final */
  partitionsKept: string[];
  /** could not be created or dropped this time (a long query held the table): tried again next run */
  partitionsDeferred: string[];
  /** history partitions given their upper bound this run */
  historiesBounded: string[];
}

export type HousekeepingRun = { skipped: true } | ({ skipped: false } & HousekeepingSummary);

export interface HousekeeperOptions {
  db: Database;
  retention: Retention;
  /** the one clock (clock/): kept in step with the database's, so a host whose clock jumps drops nothing inside the window */
  clock: Clock;
  logger: Logger;
  /** between runs; the first runs when the loop starts */
  intervalMs: number;
  aheadDays?: number;
  /** told of every run that did the work (metrics) */
  onRun?: (summary: HousekeepingSummary) => void;
  /** told of every run that failed (metrics; the failure is logged here) */
  onFailure?: () => void;
}

export interface Housekeeper {
  /** One run now, unless another process (or this one) is running one: then `{ skipped: true }`. */
  runOnce(): Promise<HousekeepingRun>;
  /**
   * Runs once now, then every interval. Resolves at once when every partitioned table already
   * has a partition for the current moment (the first run goes on in the background: after an
   * upgrade it reads the history once), otherwise when the first run has created them.
   */
  start(): Promise<void>;
  /** Stops the loop and waits for a run in progress. */
  stop(): Promise<void>;
}

// In-process exclusion on top of the advisory lock: PGlite is one session, in which an advisory
// lock is re-entrant, so two housekeepers of one process must also exclude each other here.
const busy = new WeakSet<Database>();

const noneRemoved = (): Record<HousekeptTable, number> => ({
  events: 0,
  webhook_deliveries: 0,
  webhook_delivery_attempts: 0,
  idempotency_keys: 0,
  rate_limit_windows: 0,
});

async function ensurePartitions(repo: PartitionsRepo, now: Date, aheadDays: number, s: HousekeepingSummary): Promise<void> {
  const parts = await repo.list();
  const today = dayStart(now);
  for (const t of PARTITIONED_TABLES) {
    const history = parts.find((p) => p.table === t.name && p.history);
    let from = today;
    if (history && history.until === null) {
      // the first run after the migration: the history takes every row up to tomorrow (or its
      // newest row's day), the day partitions everything after
      const end = await repo.historyEnd(t);
      const until = new Date(Math.max(today.getTime() + DAY_MS, end?.getTime() ?? 0));
      await repo.boundHistory(t, until);
      s.historiesBounded.push(history.name);
      from = until;
    } else if (history?.until && history.until > from) {
      from = history.until;
    }
    const have = new Set(parts.filter((p) => p.table === t.name && !p.history).map((p) => p.from!.getTime()));
    for (let day = from.getTime(); day <= today.getTime() + aheadDays * DAY_MS; day += DAY_MS) {
      if (have.has(day)) continue;
      const name = dayPartitionName(t.name, new Date(day));
      try {
        await repo.createDay(t, new Date(day));
        s.partitionsCreated.push(name);
      } catch (err) {
        // the table was busy for longer than the lock timeout: a week of days ahead leaves time
        if (errorField(err, "code") !== LOCK_NOT_AVAILABLE) throw err;
        s.partitionsDeferred.push(name);
      }
    }
  }
}

async function dropExpired(repo: PartitionsRepo, retention: Retention, now: Date, s: HousekeepingSummary): Promise<void> {
  const parts = await repo.list();
  const firstKept = retention.firstKeptDay(now);
  // which expired days still hold deliveries that are not final: the keep rule needs to know
  const live = new Set<string>();
  for (const p of parts) {
    if (p.table === "webhook_deliveries" && p.until !== null && p.until <= firstKept && (await repo.holdsQueuedDeliveries(p.name))) live.add(p.name);
  }
  const { drop, keep } = retentionDrops(retention, now, parts, (p) => live.has(p.name));
  s.partitionsKept.push(...keep.map((p) => p.name));
  for (const p of drop) {
    try {
      s.removed[p.table] += await repo.drop(p);
      s.partitionsDropped.push(p.name);
    } catch (err) {
      if (errorField(err, "code") !== LOCK_NOT_AVAILABLE) throw err;
      s.partitionsDeferred.push(p.name);
    }
  }
}

async function sweepKeys(session: Session, now: Date, s: HousekeepingSummary): Promise<void> {
  const keys = idempotencyKeysRepo(session);
  for (let n = KEY_BATCH; n === KEY_BATCH && s.removed.idempotency_keys < MAX_KEYS_PER_RUN; ) {
    n = await keys.sweepExpired(now, KEY_BATCH);
    s.removed.idempotency_keys += n;
  }
}

export function createHousekeeper(o: HousekeeperOptions): Housekeeper {
  const aheadDays = o.aheadDays ?? DEFAULT_AHEAD_DAYS;
  let timer: TimerHandle | null = null;
  let current: Promise<HousekeepingRun | null> | null = null;

  async function work(session: Session): Promise<HousekeepingSummary> {
    const started = performance.now();
    const now = o.clock.now();
    const s: HousekeepingSummary = {
      at: now, durationMs: 0, removed: noneRemoved(),
      partitionsCreated: [], partitionsDropped: [], partitionsKept: [], partitionsDeferred: [], historiesBounded: [],
    };
    const repo = partitionsRepo(session);
    await ensurePartitions(repo, now, aheadDays, s);
    await dropExpired(repo, o.retention, now, s);
    await sweepKeys(session, now, s);
    // the counting statement deletes a token's ended windows as it goes; these are the last
    // windows of tokens no longer used
    s.removed.rate_limit_windows = await rateLimitsRepo(session).sweepExpired();
    s.durationMs = Math.round(performance.now() - started);
    return s;
  }

  async function locked(): Promise<HousekeepingRun> {
    if (busy.has(o.db)) return { skipped: true };
    busy.add(o.db);
    try {
      return await o.db.session(async (session) => {
        const [row] = await session.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1) AS locked", [HOUSEKEEPING_LOCK_KEY]);
        if (!row?.locked) return { skipped: true } as const;
        try {
          return { skipped: false, ...(await work(session)) } as const;
        } finally {
          await session.query("SELECT pg_advisory_unlock($1)", [HOUSEKEEPING_LOCK_KEY]).catch(() => undefined);
        }
      });
    } finally {
      busy.delete(o.db);
    }
  }

  async function runOnce(): Promise<HousekeepingRun> {
    const run = await locked();
    if (run.skipped) {
      o.logger.debug("housekeeping: another process is running it");
      return run;
    }
    const { at, durationMs, removed, partitionsCreated, partitionsDropped, partitionsKept, partitionsDeferred, historiesBounded } = run;
    o.logger.info(
      { housekeeping: { at, durationMs, removed, partitionsCreated, partitionsDropped, partitionsKept, partitionsDeferred, historiesBounded } },
      "housekeeping run",
    );
    o.onRun?.(run);
    return run;
  }

  function tick(): Promise<HousekeepingRun | null> {
    if (current) return current;
    current = runOnce()
      .catch((err: unknown) => {
        o.logger.error({ err: String(err) }, "housekeeping run failed; retried at the next interval");
        o.onFailure?.();
        return null;
      })
      .finally(() => {
        current = null;
      });
    return current;
  }

  /** Whether an insert stamped now finds a partition in every table (a history without a bound takes anything). */
  async function coversNow(): Promise<boolean> {
    const now = o.clock.now();
    const parts = await partitionsRepo(o.db).list();
    return PARTITIONED_TABLES.every((t) =>
      parts.some((p) => p.table === t.name && (p.history ? p.until === null || p.until > now : p.from! <= now && now < p.until!)),
    );
  }

  return {
    runOnce,
    async start() {
      timer ??= every(o.clock, o.intervalMs, () => void tick());
      const first = tick();
      if (!(await coversNow())) await first;
    },
    async stop() {
      timer?.cancel();
      timer = null;
      await current;
    },
  };
}
