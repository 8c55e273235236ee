// The housekeeping loop on a real database (PGlite, and PostgreSQL with TEST_DATABASE_URL): it
// bounds the history and creates the days ahead once, sweeps expired idempotency keys, reports
// what it did in one log line, and never works in two places at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../src/db/client.js";
import { adjustableClock } from "../harness/clock.js";
import { createHousekeeper, DEFAULT_AHEAD_DAYS, HOUSEKEEPING_LOCK_KEY, type HousekeepingSummary } from "../../src/housekeeping/housekeeper.js";
import { capturedLogger } from "../harness/captured-logger.js";
import { DAY_MS, dayStart, retention } from "../../src/domain/retention.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";
import { fixedClock } from "../harness/partitions.js";

let t: TestDatabase;
const { logger, lines } = capturedLogger();

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const housekeeper = (db: Database, at = new Date()) =>
  createHousekeeper({ db, retention: retention(30), clock: fixedClock(at), logger, intervalMs: DAY_MS });

async function work(db: Database, at?: Date): Promise<HousekeepingSummary> {
  const run = await housekeeper(db, at).runOnce();
  if (run.skipped) throw new Error("skipped");
  return run;
}

const ymd = (d: Date) => d.toISOString().slice(0, 10).replaceAll("-", "");

describe("housekeeping", () => {
  it("When it first runs on a migrated database, Then the histories are bounded at tomorrow and a week of days is created; a second run creates nothing", async () => {
    const now = new Date();
    const first = await work(t.db, now);
    expect(first.historiesBounded.sort()).toEqual(["events_history", "webhook_deliveries_history", "webhook_delivery_attempts_history"]);
    const tomorrow = new Date(dayStart(now).getTime() + DAY_MS);
    const days = Array.from({ length: DEFAULT_AHEAD_DAYS }, (_, i) => ymd(new Date(tomorrow.getTime() + i * DAY_MS)));
    expect(first.partitionsCreated.sort()).toEqual(
      ["events", "webhook_deliveries", "webhook_delivery_attempts"].flatMap((table) => days.map((d) => `${table}_p${d}`)).sort(),
    );
    expect(first.partitionsDropped).toEqual([]);
    const line = lines.map((l) => JSON.parse(l) as { msg: string; housekeeping?: HousekeepingSummary }).find((l) => l.msg === "housekeeping run");
    expect(line?.housekeeping).toMatchObject({ removed: { events: 0, webhook_deliveries: 0, webhook_delivery_attempts: 0, idempotency_keys: 0, rate_limit_windows: 0 } });
    expect(line?.housekeeping?.durationMs).toBeGreaterThanOrEqual(0);

    const second = await work(t.db, now);
    expect(second).toMatchObject({ partitionsCreated: [], partitionsDropped: [], historiesBounded: [] });
    // a day later: one more day ahead
    expect((await work(t.db, new Date(now.getTime() + DAY_MS))).partitionsCreated).toHaveLength(3);
  });

  it("When idempotency keys have expired, Then a run removes them (in batches) and keeps the others", async () => {
    const now = new Date();
    await t.db.exec(`
      INSERT INTO idempotency_keys (org_id, key_hash, request_hash, status, created_at, expires_at)
        SELECT 'org-k', 'expired-' || n, 'r', 'completed', now() - interval '2 days', now() - interval '1 day'
          FROM generate_series(1, 12001) n;
      INSERT INTO idempotency_keys (org_id, key_hash, request_hash, status, created_at, expires_at)
        SELECT 'org-k', 'live-' || n, 'r', 'completed', now(), now() + interval '1 day' FROM generate_series(1, 5) n;`);
    const run = await work(t.db, now);
    expect(run.removed.idempotency_keys).toBe(12001);
    expect(await t.db.query("SELECT key_hash FROM idempotency_keys WHERE org_id = 'org-k' ORDER BY 1")).toEqual(
      [1, 2, 3, 4, 5].map((n) => ({ key_hash: `live-${n}` })),
    );
  });

  it("When two housekeepers of one process run at once, Then one works and the other skips", async () => {
    const [a, b] = await Promise.all([housekeeper(t.db).runOnce(), housekeeper(t.db).runOnce()]);
    expect([a.skipped, b.skipped].sort()).toEqual([false, true]);
  });

  it("When the loop runs on an injected clock, Then advancing it a day runs it again (no sleeping)", async () => {
    const clock = adjustableClock();
    const runs: HousekeepingSummary[] = [];
    const loop = createHousekeeper({ db: t.db, retention: retention(30), clock, logger, intervalMs: DAY_MS, onRun: (s) => runs.push(s) });
    // an hour past the last day created above: no partition holds "now", so start() waits for the run
    clock.advance(dayStart(new Date()).getTime() + (DEFAULT_AHEAD_DAYS + 3) * DAY_MS - Date.now());
    await loop.start();
    expect(runs).toHaveLength(1);
    expect(runs[0]!.partitionsCreated.length).toBeGreaterThan(0);
    const next = new Promise<void>((resolve) => {
      const poll = setInterval(() => runs.length === 2 && (clearInterval(poll), resolve()), 5);
    });
    clock.advance(DAY_MS);
    await next;
    await loop.stop();
    expect(runs[1]!.at.getTime() - runs[0]!.at.getTime()).toBeGreaterThanOrEqual(DAY_MS);
  });
});

describe.skipIf(!onPostgres)("housekeeping across processes (PostgreSQL)", () => {
  let other: Database;
  beforeAll(async () => {
    // a second pool on the same database: another process, as far as PostgreSQL can tell
    other = await openDatabase({ databaseUrl: t.databaseUrl!, poolSize: 2 });
  });
  afterAll(async () => {
    await other?.close();
  });

  it("When another connection holds the housekeeping lock, Then a run skips; once that connection is gone, the next run works", async () => {
    const holder = await openDatabase({ databaseUrl: t.databaseUrl!, poolSize: 1 });
    let pid = 0;
    const held = holder.session(async (s) => {
      const [row] = await s.query<{ pid: number }>("SELECT pg_backend_pid() AS pid, pg_advisory_lock($1)", [HOUSEKEEPING_LOCK_KEY]);
      pid = row!.pid;
      // hold it until the connection is killed
      await s.query("SELECT pg_sleep(30)").catch(() => undefined);
    });
    await expect.poll(() => pid).toBeGreaterThan(0);
    expect(await housekeeper(t.db).runOnce()).toEqual({ skipped: true });
    expect(await housekeeper(other).runOnce()).toEqual({ skipped: true });
    // the holder dies (as a SIGKILLed process would): its session lock goes with it
    await t.db.query("SELECT pg_terminate_backend($1)", [pid]);
    await held;
    await holder.close().catch(() => undefined);
    expect((await housekeeper(other).runOnce()).skipped).toBe(false);
  });

  it("When two processes' housekeepers start together again and again, Then each pair finishes without error and no lock is left behind", async () => {
    for (let i = 0; i < 10; i++) {
      const runs = await Promise.all([housekeeper(t.db).runOnce(), housekeeper(other).runOnce()]);
      expect(runs.filter((r) => !r.skipped).length).toBeGreaterThanOrEqual(1);
    }
    const locks = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND objid = $1 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [HOUSEKEEPING_LOCK_KEY],
    );
    expect(locks[0]!.n).toBe(0);
  });
});
