// A clock kept in step with the database's: what every process of one deployment judges time by.
// It reads the database's clock_timestamp() a few times (keeping the reading with the shortest
// round trip, its error is at most half that trip), then counts forward on the monotonic clock
// (performance.now), so neither a jump of this host's wall clock nor its drift moves it. It reads
// again every `resyncMs` to follow the database; it never runs backwards.
import { realTimeout, type Clock, type TimerHandle } from "./clock.js";

/** What the clock needs of a database: one statement. */
export interface ClockSource {
  query<T>(sql: string): Promise<T[]>;
}

export interface DatabaseClock extends Clock {
  /** This host's wall clock minus the database's, at the last reading (ms; for the operator). */
  hostSkewMs(): number;
  /** Reads the database's clock again now. */
  sync(): Promise<void>;
  /** Stops the periodic readings. */
  close(): void;
}

export interface DatabaseClockOptions {
  /** Between readings (default 60 s). */
  resyncMs?: number;
  /** Readings per sync; the one with the shortest round trip counts (default 3). */
  samples?: number;
  /** Told when a periodic reading fails (the clock keeps counting from the last one). */
  onSyncError?: (err: unknown) => void;
}

const READ = "SELECT (extract(epoch from clock_timestamp()) * 1000)::float8 AS ms";

export async function databaseClock(db: ClockSource, o: DatabaseClockOptions = {}): Promise<DatabaseClock> {
  const samples = Math.max(1, o.samples ?? 3);
  // the database's time at `perfAt` on the monotonic clock
  let baseMs = 0;
  let perfAt = 0;
  let skew = 0;
  let last = 0;
  let timer: TimerHandle | null = null;

  async function reading(): Promise<{ rtt: number; dbMs: number; perfMid: number; wallMid: number }> {
    const before = performance.now();
    const wallBefore = Date.now();
    const [row] = await db.query<{ ms: number | string }>(READ);
    const after = performance.now();
    return { rtt: after - before, dbMs: Number(row!.ms), perfMid: (before + after) / 2, wallMid: wallBefore + (after - before) / 2 };
  }

  async function sync(): Promise<void> {
    let best = await reading();
    for (let i = 1; i < samples; i++) {
      const r = await reading();
      if (r.rtt < best.rtt) best = r;
    }
    baseMs = best.dbMs;
    perfAt = best.perfMid;
    skew = best.wallMid - best.dbMs;
  }

  await sync();
  const arm = () => {
    timer = realTimeout(() => {
      sync().catch((err: unknown) => o.onSyncError?.(err)).finally(() => timer && arm());
    }, o.resyncMs ?? 60_000);
  };
  arm();

  return {
    now() {
      // never backwards: a later reading a few hundred microseconds behind holds until it catches up
      last = Math.max(last, baseMs + (performance.now() - perfAt));
      return new Date(Math.floor(last));
    },
    setTimeout: realTimeout,
    hostSkewMs: () => skew,
    sync,
    close() {
      timer?.cancel();
      timer = null;
    },
  };
}
