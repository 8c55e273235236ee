// The one clock: `every` on any clock, and the clock kept in step with the database's
// (src/clock/database-clock.ts) against the real database and against a database whose clock
// disagrees with this host's.
import { afterAll, describe, expect, it } from "vitest";
import { every } from "../../src/clock/clock.js";
import { databaseClock, type ClockSource } from "../../src/clock/database-clock.js";
import { adjustableClock } from "../harness/clock.js";
import { createTestDatabase } from "../harness/db.js";

describe("every", () => {
  it("When the clock passes each period, Then it fires once per period, and never after cancel", () => {
    const clock = adjustableClock();
    let n = 0;
    const h = every(clock, 1_000, () => n++);
    clock.advance(1_000);
    clock.advance(1_000);
    expect(n).toBe(2);
    h.cancel();
    clock.advance(5_000);
    expect(n).toBe(2);
  });
});

/** A database whose clock_timestamp() runs `offsetMs` from this host's, answering after `delayMs`. */
function skewedDatabase(offsetMs: () => number, delayMs = 0): ClockSource & { reads: number } {
  const source = {
    reads: 0,
    async query<T>(): Promise<T[]> {
      source.reads++;
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      // a row as the statement returns it: milliseconds since the epoch
      return [{ ms: Date.now() + offsetMs() }] as T[];
    },
  };
  return source;
}

const t = await createTestDatabase();
afterAll(() => t.close());

describe("databaseClock", () => {
  it("When read against the real database, Then it agrees with the database's clock_timestamp() to within the round trip", async () => {
    const clock = await databaseClock(t.db);
    try {
      const before = clock.now().getTime();
      const [row] = await t.db.query<{ ms: number | string }>("SELECT (extract(epoch from clock_timestamp()) * 1000)::float8 AS ms");
      const after = clock.now().getTime();
      expect(Number(row!.ms)).toBeGreaterThanOrEqual(before - 50);
      expect(Number(row!.ms)).toBeLessThanOrEqual(after + 50);
    } finally {
      clock.close();
    }
  });

  it("When the database's clock is an hour behind this host's, Then now() is the database's time and the host's skew is reported", async () => {
    const clock = await databaseClock(skewedDatabase(() => -3_600_000));
    try {
      expect(clock.now().getTime() - (Date.now() - 3_600_000)).toBeLessThan(100);
      expect(clock.hostSkewMs()).toBeGreaterThan(3_599_000);
    } finally {
      clock.close();
    }
  });

  // That it counts on the monotonic clock, whatever the host's wall clock does, is shown by real
  // worker processes on a wrong host clock (test/delivery/clock-skew.test.ts): moving this
  // process's Date here would move every timer of the other tests sharing it.

  it("When a later reading is a little behind what was already returned, Then now() never runs backwards", async () => {
    let offset = 0;
    const clock = await databaseClock(skewedDatabase(() => offset));
    try {
      const first = clock.now().getTime();
      offset = -500;
      await clock.sync();
      expect(clock.now().getTime()).toBeGreaterThanOrEqual(first);
    } finally {
      clock.close();
    }
  });

  it("When the readings' round trips differ, Then the shortest one counts", async () => {
    const db = skewedDatabase(() => 0);
    const clock = await databaseClock(db, { samples: 4 });
    try {
      expect(db.reads).toBe(4);
      expect(Math.abs(clock.now().getTime() - Date.now())).toBeLessThan(50);
    } finally {
      clock.close();
    }
  });

  it("When it is left running, Then it reads the database again every resyncMs, and close() stops the readings", async () => {
    const db = skewedDatabase(() => 0);
    const clock = await databaseClock(db, { samples: 1, resyncMs: 10 });
    await expect.poll(() => db.reads, { timeout: 2_000 }).toBeGreaterThanOrEqual(3);
    clock.close();
    const reads = db.reads;
    await new Promise((r) => setTimeout(r, 60));
    expect(db.reads).toBeLessThanOrEqual(reads + 1);
  });
});
